// The line protocol of command jobs (docs/own-script.md): a program in any language reports its
// training by printing lines that are one JSON object with a member "gridrun" naming the record.
//   {"gridrun": "step", "loss": 0.52, "samples": 64}       (samples: the step's global batch)
//   {"gridrun": "epoch", "epoch": 1, "test_acc": 0.91, ...}
//   {"gridrun": "summary", "NAME": number, ...}
// Every other line is the program's own output. Why JSON lines and not a library: any language can
// print one, nothing has to be linked into the program, and a program run without gridrun still
// works (the lines are just output).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace gridrun::exec {

// Longer lines are output, never records (a record is small; this bounds what is parsed).
inline constexpr std::size_t kMaxRecordLine = 64 * 1024;

struct StepRecord {
  std::optional<std::int64_t> step;       // the program's own count; else gridrun counts from 1
  double loss = 0;                        // NaN when the program printed NaN/Infinity/null: diverged
  std::optional<double> samples;          // the global batch of the step
  std::map<std::string, double> metrics;  // other numeric members
};

struct EpochRecord {
  std::optional<std::int64_t> epoch;
  std::optional<double> train_loss, train_acc, test_loss, test_acc;
  std::map<std::string, double> metrics;
};

struct SummaryRecord {
  std::map<std::string, double> values;
};

struct Output {};  // not a record: the program's own output

struct BadRecord {
  std::string why;  // "step: loss must be a number", ...
};

using Record = std::variant<Output, StepRecord, EpochRecord, SummaryRecord, BadRecord>;

// One line without its newline. Never throws. Python's json.dumps writes NaN and Infinity for
// non-finite floats (not JSON): those tokens are read as non-finite numbers.
Record parse_record(std::string_view line);

}  // namespace gridrun::exec

// A failed job's one-line reason from its results file or its stderr log (failure.hpp).
#include "gridrun/run/failure.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::run {

namespace {

// The log's tail is enough: the runner's failure line is among the last lines of the last attempt,
// and a log of many appended attempts (or a chatty rank) may be megabytes.
constexpr std::uint64_t kLogTailBytes = std::uint64_t{64} * 1024;

constexpr std::string_view kAttemptHeader = "=== gridrun attempt ";
constexpr std::string_view kTrainPrefix = "gridrun-train:";
constexpr std::string_view kGridrunPrefix = "gridrun:";

// Through base::open_checked (issue 57): a FIFO in the log's place blocked the command for ever,
// and a link to /dev/zero has no end to seek to; such a log has no reason to give.
std::string read_tail(const std::string& path) {
  const base::CheckedOpen f = base::open_checked(path, base::kinds::kJobLog, O_RDONLY);
  if (!f.fd.valid()) return {};
  const std::uint64_t from = f.size > kLogTailBytes ? f.size - kLogTailBytes : 0;
  std::string text(static_cast<std::size_t>(f.size - from), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n =
        ::pread(f.fd.get(), text.data() + got, text.size() - got, static_cast<off_t>(from + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  // A tail that starts inside a line: that line's start is not its start.
  if (from > 0) {
    const auto nl = text.find('\n');
    text.erase(0, nl == std::string::npos ? text.size() : nl + 1);
  }
  return text;
}

// `line` without its program prefixes ("gridrun-train: gridrun-train: x" -> "x"); false when it
// has none.
bool strip_prefixes(std::string_view& line) {
  bool any = false;
  for (bool again = true; again;) {
    again = false;
    for (std::string_view p : {kTrainPrefix, kGridrunPrefix})
      if (base::starts_with(line, p)) {
        line.remove_prefix(p.size());
        while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
        any = again = true;
      }
  }
  return any;
}

}  // namespace

std::string reason_from_log(std::string_view text) {
  std::string_view last;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (base::starts_with(line, kAttemptHeader)) {
      last = {};  // an earlier attempt's reason is not this attempt's
      continue;
    }
    if (!strip_prefixes(line) || base::starts_with(line, "warning:")) continue;
    if (!base::trim(line).empty()) last = line;
  }
  return last.empty() ? std::string() : base::trim(base::printable_line(last));
}

std::string recorded_failure_reason(const RunDir& dir, const std::string& id,
                                    const std::string& exit_reason) {
  // The runner records its message without the prefix; one with it (a message that carried its own)
  // is shown like a log line.
  std::string_view text = exit_reason;
  strip_prefixes(text);
  std::string recorded = base::trim(base::printable_line(text));
  if (!recorded.empty()) return recorded;
  return reason_from_log(read_tail(dir.log_err(id)));
}

std::string failure_reason(const RunDir& dir, const std::string& id, const std::string& exit_reason) {
  std::string why = recorded_failure_reason(dir, id, exit_reason);
  return why.empty() ? "no reason recorded; see " + dir.log_err(id) : why;
}

}  // namespace gridrun::run

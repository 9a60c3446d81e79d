// The other ranks' figures of a command job, for rank 0's results file. Rank 0 alone writes the
// file, but /steps/rank_step_s and /util's rank_cpu_pct and rank_rss_bytes have a column per rank
// (the straggler and imbalance figures of the report read them). gridrun-train sends them over its
// communicator; gridrun-exec has none (no MPI: the program brings its own), so each rank r > 0
// appends them to a small text file in the job's work folder, which every host sees (the
// rendezvous file lies there too), and rank 0 reads them back as they grow:
//
//   <work>/.ranks/<key>.<r>   "s <step> <seconds>\n" per step, "u <cpu %> <rss bytes>\n" per sample
//
// `key` names the launch (launch_key(): every rank of one launch computes the same), so an earlier
// attempt's files are never read; rank 0 removes them. Lines are short and written with one
// write(2) each (O_APPEND), so a reader sees whole lines or a tail it keeps for the next poll.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/base/fs.hpp"

namespace gridrun::exec {

// The launch's key: --launched-at to the microsecond (one value for every rank of a launch), else
// the rendezvous port.
std::string launch_key(double launched_at, int master_port);

// The folder of the rank files: `work`/.ranks, made if missing. A link or anything but a folder in
// its place (hostile or stale) is removed first when `owner` (rank 0) and never followed: "" then
// for a rank > 0, which reports nothing rather than write through it.
std::string rank_report_dir(const std::string& work, bool owner);

// Rank r > 0's side. Never throws after construction: a full disk loses figures, not the job.
class RankReportWriter {
 public:
  // Throws std::runtime_error naming the file when it cannot be made.
  RankReportWriter(const std::string& dir, const std::string& key, int rank);
  void step(std::int64_t step, double step_s);
  void util(double cpu_pct, double rss_bytes);

 private:
  void line(const std::string& text);
  base::UniqueFd fd_;
  std::mutex mu_;  // step() from the main loop, util() from the sampler's thread
};

// Rank 0's side: what ranks 1..world-1 reported.
class RankReportReader {
 public:
  // Removes files of other launches from `dir`.
  RankReportReader(std::string dir, std::string key, int world);
  // Reads what the ranks appended since the last call (a file not there yet is looked for again).
  void poll();
  // Rank r's seconds of `step`, once reported (NaN when it reported the step without a time).
  std::optional<double> step_s(int rank, std::int64_t step) const;
  // Every rank 1..world-1 that reports steps at all has reported `step`, or a later one (a rank
  // that skipped it has passed it). A rank that has reported no step yet is not waited for: many
  // programs print on rank 0 only, and a rank's first step has no time anyway.
  bool complete(std::int64_t step) const;
  // Forgets steps <= `step` (their rows are written).
  void drop_through(std::int64_t step);
  // Rank r's latest sample {cpu %, rss bytes}; NaN before any. Safe from another thread.
  std::pair<double, double> util(int rank) const;

  // Steps held per rank at most: a rank whose numbering never meets rank 0's cannot grow memory.
  static constexpr std::size_t kMaxHeld = 4096;

 private:
  struct Peer {
    base::UniqueFd fd;
    std::uint64_t read = 0;  // bytes consumed so far
    std::string partial;     // a line not yet ended
    std::map<std::int64_t, double> steps;
    std::int64_t last = -1;  // the highest step reported; -1: none yet
  };
  void take(int rank, const std::string& line);
  std::string dir_, key_;
  std::vector<Peer> peers_;  // index = rank; [0] unused
  mutable std::mutex util_mu_;
  std::vector<std::pair<double, double>> util_;
};

}  // namespace gridrun::exec

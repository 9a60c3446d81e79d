// The progress output of `gridrun run`: one line per event, and on a terminal a live status line
// ("done 3/8  running 2  failed 0  pending 3  elapsed 1m02s  ETA 2m10s") redrawn below them.
//
// Why its own class: the run loop only reports what happened (counts, events); how that looks on a
// terminal or in a log file is decided here, once.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace gridrun::scheduler {

struct ProgressCounts {
  std::size_t done = 0, running = 0, failed = 0, pending = 0;
};

class Progress {
 public:
  // `tty`: live status line (events printed above it); else one line per event with the counts.
  Progress(std::ostream& out, bool tty, int width, std::size_t total);

  ProgressCounts& counts() { return counts_; }
  double elapsed() const;             // seconds since construction
  void job_finished(double seconds);  // a job completed: feeds the ETA
  void set_stopping(bool stopping, bool killing);

  void event(const std::string& what);  // "[   12.3s] what" (+ counts without a tty)
  void redraw();                        // the status line again (tty only)
  void clear();                         // erase the status line (tty only), at the end

 private:
  std::string status_line() const;

  std::ostream& out_;
  bool tty_;
  int width_;
  std::size_t total_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  ProgressCounts counts_;
  double finished_time_ = 0;
  std::size_t finished_count_ = 0;
  bool stopping_ = false, killing_ = false;
};

}  // namespace gridrun::scheduler

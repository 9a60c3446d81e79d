// See progress.hpp.
#include "progress.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "gridrun/base/text.hpp"

namespace gridrun::scheduler {

Progress::Progress(std::ostream& out, bool tty, int width, std::size_t total)
    : out_(out), tty_(tty), width_(width), total_(total) {}

double Progress::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void Progress::job_finished(double seconds) {
  finished_time_ += seconds;
  ++finished_count_;
}

void Progress::set_stopping(bool stopping, bool killing) {
  stopping_ = stopping;
  killing_ = killing;
}

// ETA = mean duration of finished jobs x remaining jobs / running jobs.
std::string Progress::status_line() const {
  const ProgressCounts& c = counts_;
  std::ostringstream s;
  s << "done " << c.done << "/" << total_ << "  running " << c.running << "  failed " << c.failed
    << "  pending " << c.pending << "  elapsed " << base::format_duration(elapsed());
  if (finished_count_ > 0 && (c.pending + c.running) > 0) {
    const double mean = finished_time_ / static_cast<double>(finished_count_);
    const double eta = mean * static_cast<double>(c.pending + c.running) /
                       static_cast<double>(std::max<std::size_t>(1, c.running));
    s << "  ETA " << base::format_duration(eta);
  }
  if (stopping_) s << (killing_ ? "  (killing)" : "  (stopping)");
  std::string line = s.str();
  if (static_cast<int>(line.size()) > width_ - 1)
    line.resize(static_cast<std::size_t>(std::max(10, width_ - 1)));
  return line;
}

void Progress::event(const std::string& what) {
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "[%7.1fs] ", elapsed());
  if (tty_) out_ << "\r\033[K";
  out_ << stamp << what;
  const ProgressCounts& c = counts_;
  if (!tty_)
    out_ << "  (" << c.done << " done, " << c.running << " running, " << c.failed << " failed, " << c.pending
         << " pending)";
  out_ << "\n";
  if (tty_) out_ << status_line();
  out_ << std::flush;
}

void Progress::redraw() {
  if (tty_) out_ << "\r\033[K" << status_line() << std::flush;
}

void Progress::clear() {
  if (tty_) out_ << "\r\033[K";
}

}  // namespace gridrun::scheduler

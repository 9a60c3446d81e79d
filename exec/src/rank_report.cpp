// See rank_report.hpp.
#include "rank_report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <utility>

#include "gridrun/base/file_kinds.hpp"

namespace gridrun::exec {

namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::size_t kMaxLine = 128;  // what a writer writes is < 80 bytes; longer is not ours

std::string file_of(const std::string& dir, const std::string& key, int rank) {
  return dir + "/" + key + "." + std::to_string(rank);
}

// "s 12 0.0931" / "u 97.5 123456789": the numbers after the tag, or nothing for another line.
std::optional<std::pair<double, double>> numbers(const std::string& line, char tag) {
  if (line.size() < 3 || line[0] != tag || line[1] != ' ') return std::nullopt;
  const char* p = line.c_str() + 2;
  char* end = nullptr;
  const double a = std::strtod(p, &end);
  if (end == p || *end != ' ') return std::nullopt;
  p = end + 1;
  const double b = std::strtod(p, &end);
  if (end == p || *end != '\0') return std::nullopt;
  return std::make_pair(a, b);
}

}  // namespace

std::string launch_key(double launched_at, int master_port) {
  char key[64];
  if (launched_at > 0)
    std::snprintf(key, sizeof key, "%.6f", launched_at);
  else
    std::snprintf(key, sizeof key, "port-%d", master_port);
  return key;
}

std::string rank_report_dir(const std::string& work, bool owner) {
  const std::string dir = work + "/.ranks";
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (fs::exists(st) && !fs::is_directory(st)) {
    if (!owner) return "";
    fs::remove(dir, ec);  // a link is removed, never followed
  }
  fs::create_directory(dir, ec);
  return fs::is_directory(fs::symlink_status(dir, ec)) ? dir : "";
}

RankReportWriter::RankReportWriter(const std::string& dir, const std::string& key, int rank) {
  const std::string path = file_of(dir, key, rank);
  base::CheckedOpen o =
      base::open_checked(path, base::kinds::kRankReport, O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (!o.fd.valid()) throw std::runtime_error(o.message);
  fd_ = std::move(o.fd);
}

void RankReportWriter::step(std::int64_t step, double step_s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "s %lld %.9g\n", static_cast<long long>(step), step_s);
  line(buf);
}

void RankReportWriter::util(double cpu_pct, double rss_bytes) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "u %.6g %.17g\n", cpu_pct, rss_bytes);
  line(buf);
}

void RankReportWriter::line(const std::string& text) {
  std::lock_guard<std::mutex> lock(mu_);
  // One write: O_APPEND keeps a line whole. A short write (a full disk) loses this figure only.
  while (::write(fd_.get(), text.data(), text.size()) < 0 && errno == EINTR) {
  }
}

RankReportReader::RankReportReader(std::string dir, std::string key, int world)
    : dir_(std::move(dir)),
      key_(std::move(key)),
      peers_(static_cast<std::size_t>(std::max(world, 1))),
      util_(peers_.size(), {kNaN, kNaN}) {
  std::error_code ec;
  const std::string mine = key_ + ".";
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().rfind(mine, 0) != 0) fs::remove(it->path(), ec);
}

void RankReportReader::poll() {
  for (std::size_t r = 1; r < peers_.size(); ++r) {
    Peer& p = peers_[r];
    if (!p.fd.valid()) {
      base::CheckedOpen o =
          base::open_checked(file_of(dir_, key_, static_cast<int>(r)), base::kinds::kRankReport, O_RDONLY);
      if (!o.fd.valid()) continue;  // not yet written (or refused: no figures of that rank)
      p.fd = std::move(o.fd);
    }
    char buf[65536];
    for (int round = 0; round < 16 && p.read < base::kinds::kRankReport.max_bytes; ++round) {
      const ssize_t n = ::read(p.fd.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      p.read += static_cast<std::uint64_t>(n);
      for (ssize_t i = 0; i < n; ++i) {
        if (buf[i] != '\n') {
          if (p.partial.size() <= kMaxLine) p.partial.push_back(buf[i]);
          continue;
        }
        if (p.partial.size() <= kMaxLine) take(static_cast<int>(r), p.partial);
        p.partial.clear();
      }
    }
  }
}

void RankReportReader::take(int rank, const std::string& line) {
  Peer& p = peers_[static_cast<std::size_t>(rank)];
  if (const auto s = numbers(line, 's')) {
    if (!std::isfinite(s->first) || s->first < 0 || s->first > 1e15) return;
    const auto step = static_cast<std::int64_t>(s->first);
    p.steps[step] = s->second;
    p.last = std::max(p.last, step);
    if (p.steps.size() > kMaxHeld) p.steps.erase(p.steps.begin());
  } else if (const auto u = numbers(line, 'u')) {
    std::lock_guard<std::mutex> lock(util_mu_);
    util_[static_cast<std::size_t>(rank)] = *u;
  }
}

std::optional<double> RankReportReader::step_s(int rank, std::int64_t step) const {
  if (rank < 1 || static_cast<std::size_t>(rank) >= peers_.size()) return std::nullopt;
  const auto& steps = peers_[static_cast<std::size_t>(rank)].steps;
  const auto it = steps.find(step);
  if (it == steps.end()) return std::nullopt;
  return it->second;
}

bool RankReportReader::complete(std::int64_t step) const {
  for (std::size_t r = 1; r < peers_.size(); ++r)
    if (peers_[r].last >= 0 && peers_[r].last < step) return false;
  return true;
}

void RankReportReader::drop_through(std::int64_t step) {
  for (Peer& p : peers_) p.steps.erase(p.steps.begin(), p.steps.upper_bound(step));
}

std::pair<double, double> RankReportReader::util(int rank) const {
  std::lock_guard<std::mutex> lock(util_mu_);
  if (rank < 0 || static_cast<std::size_t>(rank) >= util_.size()) return {kNaN, kNaN};
  return util_[static_cast<std::size_t>(rank)];
}

}  // namespace gridrun::exec

// See progress.hpp.
#include "gridrun/run/progress.hpp"

#include <cmath>
#include <cstdlib>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"

namespace gridrun::run {

std::string progress_line(const Progress& p) {
  const base::Json j = {{"step", p.step},     {"total_steps", p.total_steps}, {"epoch", p.epoch},
                        {"epochs", p.epochs}, {"wall_s", p.wall_s},           {"unix_s", p.unix_s}};
  return base::dump_line(j) + "\n";
}

std::optional<Progress> read_progress(const std::string& path) {
  // At most 4 KiB (the kind's cap, checked before reading): a heartbeat linked to /dev/zero took
  // `status` to gigabytes when the limit was checked after reading (issue 57).
  const auto text = base::try_read_file(path, base::kinds::kHeartbeat);
  if (!text || text->empty()) return std::nullopt;
  Progress p;
  auto whole = [](double v) { return std::isfinite(v) && v >= 0 && v <= 9.0e15; };
  if ((*text)[0] != '{') {  // an older gridrun-train: the step alone
    char* end = nullptr;
    const double step = std::strtod(text->c_str(), &end);
    if (end == text->c_str() || !whole(step)) return std::nullopt;
    p.step = static_cast<std::int64_t>(step);
    return p;
  }
  try {
    const base::Json j = base::parse_json(*text, path);
    const double step = base::get_number(j, "step", -1), total = base::get_number(j, "total_steps", 0),
                 epoch = base::get_number(j, "epoch", 0), epochs = base::get_number(j, "epochs", 0),
                 wall = base::get_number(j, "wall_s", 0), unix_s = base::get_number(j, "unix_s", 0);
    if (!whole(step) || !whole(total) || !whole(epoch) || !whole(epochs) || !whole(wall) || !whole(unix_s))
      return std::nullopt;
    p.step = static_cast<std::int64_t>(step);
    p.total_steps = static_cast<std::int64_t>(total);
    p.epoch = static_cast<std::int64_t>(epoch);
    p.epochs = static_cast<std::int64_t>(epochs);
    p.wall_s = wall;
    p.unix_s = unix_s;
    return p;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace gridrun::run

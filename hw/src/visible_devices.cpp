// CUDA_VISIBLE_DEVICES (see visible_devices.hpp).
#include "gridrun/hw/visible_devices.hpp"

#include <cstdlib>

namespace gridrun::hw {

std::vector<std::string> parse_visible_devices(std::string_view value) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    std::string_view item = value.substr(start, comma - start);
    start = comma + 1;
    const std::size_t first = item.find_first_not_of(" \t");
    if (first == std::string_view::npos) continue;
    item = item.substr(first, item.find_last_not_of(" \t") + 1 - first);
    if (item == "-1") break;
    out.emplace_back(item);
  }
  return out;
}

std::optional<std::vector<std::string>> visible_devices_from_env() {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!env) return std::nullopt;
  return parse_visible_devices(env);
}

}  // namespace gridrun::hw

// The launch mode's two names (launch.hpp).
#include "gridrun/run/launch.hpp"

#include <stdexcept>

namespace gridrun::run {

std::string to_string(Launch l) { return l == Launch::Warm ? "warm" : "cold"; }

Launch parse_launch(const std::string& text, const std::string& flag) {
  if (text == "cold") return Launch::Cold;
  if (text == "warm") return Launch::Warm;
  throw std::invalid_argument(flag + ": expected cold or warm, got '" + text + "'");
}

}  // namespace gridrun::run

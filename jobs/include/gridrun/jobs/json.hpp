// Deprecated: JSON escaping moved to gridrun::base (base/include/gridrun/base/json.hpp). This
// forwarder keeps modules that still include it compiling until they use base::json_escape;
// remove it when nothing includes it.
#pragma once

#include <string>
#include <string_view>

namespace gridrun::base {
std::string json_escape(std::string_view s);
}

namespace gridrun::jobs {

inline std::string json_escape(const std::string& s) { return base::json_escape(s); }

}  // namespace gridrun::jobs

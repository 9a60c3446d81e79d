// One printable line from an error message, for warnings and `gridrun status`: parse errors may
// quote the damaged bytes themselves (nlohmann's "last read: '...'"), which must not reach a
// terminal or a UTF-8 reader of the output as they are. (A candidate for base/text.hpp.)
#pragma once

#include <string>

namespace gridrun::scheduler {

inline std::string printable(const std::string& s) {
  std::string out;
  for (unsigned char c : s) out += c == '\n' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  return out;
}

}  // namespace gridrun::scheduler

// TeeStream: an ostream that writes through to another stream and keeps a copy of what it wrote.
//
// Why: a command that may replay its own output later (`gridrun run` of a finished run prints
// what its last run with nothing to do printed, scheduler/run_grid.cpp) must show it as it goes and
// keep it; a std::ostringstream alone would hold the progress lines back until the end.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>

namespace gridrun::base {

namespace detail {
// The buffer, in a base of its own so that it is built before the std::ostream that uses it.
struct TeeBuf : std::streambuf {
  explicit TeeBuf(std::ostream& o) : out(o) {}
  std::ostream& out;
  std::string kept;
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    kept.push_back(ch);
    out.put(ch);
    return out ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    kept.append(s, static_cast<std::size_t>(n));
    out.write(s, n);
    return out ? n : 0;
  }
  int sync() override { return out.flush() ? 0 : -1; }
};
struct TeeBufHolder {
  explicit TeeBufHolder(std::ostream& o) : tee_buf(o) {}
  TeeBuf tee_buf;
};
}  // namespace detail

class TeeStream : private detail::TeeBufHolder, public std::ostream {
 public:
  explicit TeeStream(std::ostream& through) : detail::TeeBufHolder(through), std::ostream(&tee_buf) {}
  TeeStream(const TeeStream&) = delete;
  TeeStream& operator=(const TeeStream&) = delete;
  const std::string& kept() const { return tee_buf.kept; }
};

}  // namespace gridrun::base

// TeeStream: an ostream that writes through to another stream and keeps a copy of what it wrote,
// up to a bound.
//
// Why: a command that may replay its own output later (`gridrun run` of a finished run prints
// what its last run with nothing to do printed, scheduler/run_grid.cpp) must show it as it goes and
// keep it; a std::ostringstream alone would hold the progress lines back until the end. The bound:
// only a short output is worth replaying, and a long run's progress lines must not pile up in memory.
#pragma once

#include <ostream>
#include <streambuf>
#include <string>

namespace gridrun::base {

namespace detail {
// The buffer, in a base of its own so that it is built before the std::ostream that uses it.
struct TeeBuf : std::streambuf {
  TeeBuf(std::ostream& o, std::size_t max) : out(o), max_kept(max) {}
  std::ostream& out;
  std::size_t max_kept;
  std::string kept;
  bool whole = true;  // kept is all that was written
  void keep(const char* s, std::size_t n) {
    if (!whole) return;
    if (kept.size() + n > max_kept) {
      whole = false;
      kept.clear();
      kept.shrink_to_fit();
      return;
    }
    kept.append(s, n);
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    keep(&ch, 1);
    out.put(ch);
    return out ? c : traits_type::eof();
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    keep(s, static_cast<std::size_t>(n));
    out.write(s, n);
    return out ? n : 0;
  }
  int sync() override { return out.flush() ? 0 : -1; }
};
struct TeeBufHolder {
  TeeBufHolder(std::ostream& o, std::size_t max) : tee_buf(o, max) {}
  TeeBuf tee_buf;
};
}  // namespace detail

class TeeStream : private detail::TeeBufHolder, public std::ostream {
 public:
  // Keeps at most `max_kept` bytes: once more was written, nothing (whole() turns false).
  TeeStream(std::ostream& through, std::size_t max_kept)
      : detail::TeeBufHolder(through, max_kept), std::ostream(&tee_buf) {}
  TeeStream(const TeeStream&) = delete;
  TeeStream& operator=(const TeeStream&) = delete;
  const std::string& kept() const { return tee_buf.kept; }
  bool whole() const { return tee_buf.whole; }  // kept() is everything written
};

}  // namespace gridrun::base

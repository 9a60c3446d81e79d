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

class TeeStream : public std::ostream {
 public:
  explicit TeeStream(std::ostream& through) : std::ostream(&buf_), buf_(through) {}
  TeeStream(const TeeStream&) = delete;
  TeeStream& operator=(const TeeStream&) = delete;
  const std::string& kept() const { return buf_.kept; }

 private:
  struct Buf : std::streambuf {
    explicit Buf(std::ostream& o) : out(o) {}
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
  Buf buf_;
};

}  // namespace gridrun::base

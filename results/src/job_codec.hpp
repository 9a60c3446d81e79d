// A JobData as bytes: how the run reader's forked copy hands a decoded job file back to its
// parent, and what the results folder's index (.gridrun-index) keeps per file. Private to results/.
//
// Why a byte codec and not JSON: a run of 10,000 jobs moves 10,000 records through a pipe and
// through the index on every status; a length-prefixed binary layout decodes in microseconds and
// lets a reader stop at the depth it needs (a status never decodes parameters or tables).
// Layout: three sections, each prefixed by its byte length so a shallower reader skips the rest:
//   glance  (id, status, exit_reason, attempts)
//   summary (root attributes, the rest of the string members, /util's reason, /summary)
//   tables  (/steps, /epochs, /util, /profile): present only when encoded at Depth::Full
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "gridrun/results/format.hpp"

namespace gridrun::results::detail {

std::string encode_job(const JobData& job, Depth depth);
// Throws std::runtime_error on bytes that are not a whole encoding (a damaged index).
JobData decode_job(std::string_view bytes, Depth depth);

// Little helpers shared with the index's own layout.
class ByteWriter {
 public:
  void u64(std::uint64_t v) { raw(&v, sizeof v); }
  void i64(std::int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s.data(), s.size());
  }
  void raw(const void* p, std::size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  std::uint64_t u64() { return pod<std::uint64_t>(); }
  std::int64_t i64() { return pod<std::int64_t>(); }
  double f64() { return pod<double>(); }
  std::string_view view() {
    const std::uint64_t n = u64();
    need(n);
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::string str() { return std::string(view()); }
  // A count of items each at least `min_bytes` long: bounded by what is left, so a damaged count
  // can never make a reader reserve or loop for more than the bytes hold.
  std::size_t count(std::size_t min_bytes) {
    const std::uint64_t n = u64();
    if (min_bytes > 0 && n > (in_.size() - pos_) / min_bytes) throw std::runtime_error("bad item count");
    return static_cast<std::size_t>(n);
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  void need(std::uint64_t n) const {
    if (n > in_.size() - pos_) throw std::runtime_error("truncated record");
  }
  template <class T>
  T pod() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + pos_, sizeof v);
    pos_ += sizeof v;
    return v;
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace gridrun::results::detail

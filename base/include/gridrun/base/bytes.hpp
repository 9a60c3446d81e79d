// Length-prefixed little binary records: what gridrun's caches keep (the results index, the
// status cache) and what a forked reader sends back. A writer appends fixed-size numbers and
// length-prefixed strings; a reader takes them in the same order and throws std::runtime_error on
// bytes that end early or hold an impossible count, so a damaged cache is detected, never trusted.
//
// Why not JSON: a run of 100,000 jobs moves 100,000 records through these on every command; a
// binary layout decodes in microseconds per record.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gridrun::base {

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

}  // namespace gridrun::base

// See sha256.hpp. The algorithm as FIPS 180-4 section 6.2 writes it: big-endian words, 64 rounds
// per 64-byte block, padding with 0x80, zeros and the length in bits. POSIX read() for files: we
// need the errno of a failure for the message. The stat-keyed cache of sha256_file_cached is a JSON
// file written atomically (base/fs.hpp), so concurrent planners at worst lose an entry.
#include "gridrun/base/sha256.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <optional>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::base {

namespace {

// FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube roots of the first 64
// primes.
constexpr std::array<std::uint32_t, 64> kRound = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

// FIPS 180-4 5.3.3: the first 32 bits of the fractional parts of the square roots of the first 8
// primes.
constexpr std::array<std::uint32_t, 8> kInitial = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

constexpr std::size_t kFileBlock = std::size_t{1} << 20;  // sha256_file reads 1 MiB at a time

constexpr std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

}  // namespace

Sha256::Sha256() : state_(kInitial) {}

void Sha256::compress(const unsigned char* block) {
  std::array<std::uint32_t, 64> w{};
  for (std::size_t t = 0; t < 16; ++t)
    w[t] = static_cast<std::uint32_t>(block[4 * t]) << 24 |
           static_cast<std::uint32_t>(block[4 * t + 1]) << 16 |
           static_cast<std::uint32_t>(block[4 * t + 2]) << 8 | static_cast<std::uint32_t>(block[4 * t + 3]);
  for (std::size_t t = 16; t < 64; ++t) {
    const std::uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const std::uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  std::uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (std::size_t t = 0; t < 64; ++t) {
    const std::uint32_t t1 =
        h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRound[t] + w[t];
    const std::uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state_[0] += a;
  state_[1] += b;
  state_[2] += c;
  state_[3] += d;
  state_[4] += e;
  state_[5] += f;
  state_[6] += g;
  state_[7] += h;
}

void Sha256::update(const void* data, std::size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  length_ += size;
  if (buffered_ > 0) {  // fill the partial block first
    const std::size_t take = std::min(size, buffer_.size() - buffered_);
    std::memcpy(buffer_.data() + buffered_, p, take);
    buffered_ += take;
    p += take;
    size -= take;
    if (buffered_ < buffer_.size()) return;
    compress(buffer_.data());
    buffered_ = 0;
  }
  for (; size >= buffer_.size(); p += buffer_.size(), size -= buffer_.size()) compress(p);
  if (size > 0) std::memcpy(buffer_.data(), p, size);
  buffered_ = size;
}

std::string Sha256::hex_digest() const {
  Sha256 end = *this;  // padding changes the state; the caller's object stays as it was
  const std::uint64_t bits = length_ * 8;
  // 0x80, then zeros up to 56 bytes into a block, then the length: 1 to 64 bytes of padding.
  std::array<unsigned char, 72> pad{};
  pad[0] = 0x80;
  const std::size_t zeros_to = buffered_ < 56 ? 56 - buffered_ : 120 - buffered_;
  for (int i = 0; i < 8; ++i)
    pad[zeros_to + static_cast<std::size_t>(i)] = static_cast<unsigned char>(bits >> (56 - 8 * i));
  end.update(pad.data(), zeros_to + 8);

  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (std::uint32_t word : end.state_)
    for (int shift = 28; shift >= 0; shift -= 4) out += kHex[(word >> shift) & 0xf];
  return out;
}

std::string sha256_hex(const void* data, std::size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.hex_digest();
}

std::string sha256_file(const std::string& path) {
  Sha256 h;
  read_file_blocks(path, kinds::kHashedInput, kFileBlock,
                   [&](const unsigned char* data, std::size_t n) { h.update(data, n); });
  return h.hex_digest();
}

namespace {

constexpr std::size_t kMaxCached = 4096;
constexpr std::int64_t kRacyNs = 2'000'000'000;

std::int64_t ns(const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec; }

// What identifies one version of a file, as the cache stores it.
std::optional<Json> stat_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return Json::array({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
                      static_cast<std::int64_t>(st.st_size), ns(st.st_mtim), ns(st.st_ctim)});
}

bool is_hex64(const Json& v) {
  if (!v.is_string()) return false;
  const std::string& s = v.get_ref<const std::string&>();
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool is_stat(const Json& v) {
  return v.is_array() && v.size() == 5 &&
         std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_number_integer(); });
}

// The cache file as JSON, rebuilt without what cannot be used; `why` says what was wrong ("" when
// nothing: also when there is no cache yet).
Json load_cache(const std::string& cache_file, std::string& why) {
  Json empty = Json{{"format", 1}, {"files", Json::object()}};
  std::string refused;
  std::optional<std::string> text;
  try {
    text = try_read_file(cache_file, kinds::kSha256Cache, &refused);
  } catch (const std::exception& e) {
    refused = e.what();
  }
  if (!text) {
    if (!refused.empty()) why = printable_line(refused);
    return empty;
  }
  Json cache;
  try {
    cache = parse_json(*text, cache_file);
  } catch (const std::exception& e) {
    why = printable_line(e.what());
    return empty;
  }
  if (!cache.is_object() || !cache.contains("files") || !cache["files"].is_object()) {
    why = "not a SHA-256 cache (no \"files\" object)";
    return empty;
  }
  std::size_t bad = 0;
  Json& files = cache["files"];
  for (auto it = files.begin(); it != files.end();) {
    const Json& e = it.value();
    if (e.is_object() && e.contains("stat") && is_stat(e["stat"]) && e.contains("sha256") &&
        is_hex64(e["sha256"])) {
      ++it;
      continue;
    }
    it = files.erase(it);
    ++bad;
  }
  if (bad > 0)
    why = std::to_string(bad) + " bad entr" + (bad == 1 ? "y" : "ies") + " (not a stat and a hash)";
  return cache;
}

void write_cache(const std::string& cache_file, const Json& cache) {
  try {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(cache_file).parent_path(), ec);
    write_file_atomic(cache_file, cache.dump() + "\n");
  } catch (const std::exception&) {
  }
}

}  // namespace

std::string sha256_file_cached(const std::string& path, const std::string& cache_file, std::string* warning) {
  if (warning) warning->clear();
  if (cache_file.empty()) return sha256_file(path);
  const std::optional<Json> before = stat_of(path);
  std::string why;
  Json cache = load_cache(cache_file, why);
  if (!why.empty() && warning)
    *warning = cache_file + ": SHA-256 cache not used as it was (" + why + "); rebuilt";
  // A damaged cache is rewritten clean whether or not this file's hash can be kept.
  const bool rebuild = !why.empty();
  Json& files = cache["files"];
  if (before && files.contains(path)) {
    const Json& e = files[path];
    if (e.is_object() && e.contains("stat") && e["stat"] == *before && e.contains("sha256") &&
        is_hex64(e["sha256"]))
      return e["sha256"].get<std::string>();
  }
  std::string sha = sha256_file(path);
  const std::optional<Json> after = stat_of(path);
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  if (!before || after != before ||
      ns(now) - std::max((*before)[3].get<std::int64_t>(), (*before)[4].get<std::int64_t>()) < kRacyNs) {
    if (rebuild) write_cache(cache_file, cache);
    return sha;
  }
  files.erase(path);
  while (files.size() >= kMaxCached) files.erase(files.begin());
  files[path] = Json{{"stat", *before}, {"sha256", sha}};
  write_cache(cache_file, cache);
  return sha;
}

std::string default_sha256_cache() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/gridrun/sha256.json";
  const char* home = std::getenv("HOME");
  if (home && *home == '/') return std::string(home) + "/.cache/gridrun/sha256.json";
  return "";
}

}  // namespace gridrun::base

// The structural check of a LibTorch archive (see archive_check.hpp for why). The zip layout is
// PKWARE's APPNOTE (end record, optional zip64 end record, central directory, local headers); the
// pickle opcodes are CPython's Lib/pickletools.py, protocols 0-5. No LibTorch here: this runs before
// LibTorch is trusted with the file.
#include "archive_check.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <stdexcept>
#include <vector>

#include <zlib.h>

namespace gridrun::runner {

namespace {

[[noreturn]] void damaged(const std::string& what, const std::string& why, std::uint64_t at) {
  throw std::runtime_error(what + ": damaged: " + why + " at byte " + std::to_string(at));
}

std::string mib(std::uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

std::uint64_t le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// How an opcode's argument is laid out in the stream.
enum class Arg : std::uint8_t {
  kBad,
  kNone,
  kFixed1,
  kFixed2,
  kFixed4,
  kFixed8,
  kMemo4,
  kLine,
  kTwoLines,
  kLen1,
  kLen4,
  kLen8,
  kFrame,
  kStop
};

Arg arg_of(unsigned char op) {
  switch (op) {
    case '(':
    case '0':
    case '1':
    case '2':
    case 'N':
    case 'Q':
    case 'R':
    case 'a':
    case 'b':
    case 'd':
    case '}':
    case 'e':
    case 'l':
    case ']':
    case 'o':
    case 's':
    case 't':
    case ')':
    case 'u':
    case 0x81:
    case 0x85:
    case 0x86:
    case 0x87:
    case 0x88:
    case 0x89:
    case 0x8f:
    case 0x90:
    case 0x91:
    case 0x92:
    case 0x93:
    case 0x94:
    case 0x97:
    case 0x98: return Arg::kNone;
    case 'K':
    case 'h':
    case 'q':
    case 0x80:
    case 0x82: return Arg::kFixed1;
    case 'M':
    case 0x83: return Arg::kFixed2;
    case 'J':
    case 0x84: return Arg::kFixed4;
    case 'G': return Arg::kFixed8;
    case 'j':
    case 'r':  // LONG_BINGET, LONG_BINPUT
      return Arg::kMemo4;
    case 'F':
    case 'I':
    case 'L':
    case 'P':
    case 'S':
    case 'V':
    case 'g':
    case 'p': return Arg::kLine;
    case 'c':
    case 'i':  // GLOBAL, INST: module and name
      return Arg::kTwoLines;
    case 'U':
    case 'C':
    case 0x8a:
    case 0x8c: return Arg::kLen1;
    case 'T':
    case 'B':
    case 'X':
    case 0x8b: return Arg::kLen4;
    case 0x8d:
    case 0x8e:
    case 0x96: return Arg::kLen8;
    case 0x95: return Arg::kFrame;
    case '.': return Arg::kStop;
    default: return Arg::kBad;
  }
}

// Reads exactly n bytes at offset `at`, or says why not.
std::vector<unsigned char> read_at(std::ifstream& f, std::uint64_t at, std::uint64_t n,
                                   const std::string& what) {
  std::vector<unsigned char> b(n);
  f.clear();
  f.seekg(static_cast<std::streamoff>(at));
  if (n && !f.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(n)))
    damaged(what, "cannot read " + std::to_string(n) + " bytes", at);
  return b;
}

struct Entry {
  std::string name;
  std::uint64_t method = 0, comp = 0, uncomp = 0, local = 0, crc = 0;
};

// The CRC-32 of a record's uncompressed bytes, read (and inflated) in pieces: LibTorch's zip reader
// is built without miniz's CRC checks, so without this a flipped byte in tensor data loaded as a
// wrong weight, and one in the TorchScript code LibTorch compiles on load reached a throw inside a
// noexcept frame (std::terminate; fuzzing, issue 24).
void check_crc(std::ifstream& f, std::uint64_t data, const Entry& en, const std::string& what) {
  constexpr std::uint64_t kPiece = 1 << 20;
  std::vector<unsigned char> in(kPiece), out(en.method == 8 ? kPiece : 0);
  uLong crc = crc32(0L, Z_NULL, 0);
  std::uint64_t produced = 0;
  z_stream z{};
  if (en.method == 8 && inflateInit2(&z, -MAX_WBITS) != Z_OK) damaged(what, "cannot start inflating", data);
  struct End {
    z_stream* z;
    bool on;
    ~End() {
      if (on) inflateEnd(z);
    }
  } end{&z, en.method == 8};
  f.clear();
  f.seekg(static_cast<std::streamoff>(data));
  int zr = Z_OK;
  for (std::uint64_t left = en.comp; left > 0;) {
    const std::uint64_t k = std::min(left, kPiece);
    if (!f.read(reinterpret_cast<char*>(in.data()), static_cast<std::streamsize>(k)))
      damaged(what, "cannot read the record", data);
    left -= k;
    if (en.method == 0) {
      crc = crc32(crc, in.data(), static_cast<uInt>(k));
      produced += k;
      continue;
    }
    z.next_in = in.data();
    z.avail_in = static_cast<uInt>(k);
    do {
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      zr = inflate(&z, Z_NO_FLUSH);
      if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) damaged(what, "bad compressed data", data);
      const std::uint64_t got = out.size() - z.avail_out;
      produced += got;
      // Never past the declared size, which the directory walk held within the archive's limit:
      // a bomb that lies about its size stops here, after one buffer.
      if (produced > en.uncomp) damaged(what, "a compressed record longer than it says", data);
      crc = crc32(crc, out.data(), static_cast<uInt>(got));
    } while (z.avail_out == 0 && zr != Z_STREAM_END);
    if (zr == Z_STREAM_END) break;
  }
  if (en.method == 8 && zr != Z_STREAM_END) damaged(what, "a truncated compressed record", data);
  if (produced != en.uncomp) damaged(what, "a record shorter than it says", data);
  if (crc != en.crc) damaged(what, "a record whose CRC-32 does not match (changed bytes)", data);
}

}  // namespace

void check_pickle(const unsigned char* d, std::size_t n, const std::string& what) {
  std::size_t i = 0;
  while (i < n) {
    const std::size_t at = i;
    const unsigned char op = d[i++];
    auto need = [&](std::uint64_t k, const char* field) {
      const std::size_t left = n - i;
      if (k > left)
        damaged(what,
                std::string(field) + " of " + std::to_string(k) + " bytes where " + std::to_string(left) +
                    " are left",
                at);
      i += static_cast<std::size_t>(k);
    };
    auto line = [&] {
      const auto* nl = static_cast<const unsigned char*>(std::memchr(d + i, '\n', n - i));
      if (!nl) damaged(what, "an unterminated text argument", at);
      i = static_cast<std::size_t>(nl - d) + 1;
    };
    switch (arg_of(op)) {
      case Arg::kBad: damaged(what, "unknown pickle opcode " + std::to_string(op), at);
      case Arg::kNone: break;
      case Arg::kFixed1: need(1, "an argument"); break;
      case Arg::kFixed2: need(2, "an argument"); break;
      case Arg::kFixed4: need(4, "an argument"); break;
      case Arg::kFixed8: need(8, "an argument"); break;
      case Arg::kMemo4: {
        need(4, "a memo id");
        // Writers number memo entries 0, 1, 2, ... so an id cannot exceed the number of bytes that
        // could have stored them; LibTorch reserves memory in proportion to the id it reads.
        const std::uint64_t id = le(d + i - 4, 4);
        if (id > n)
          damaged(what, "memo id " + std::to_string(id) + " in a pickle of " + std::to_string(n) + " bytes",
                  at);
        break;
      }
      case Arg::kLine: line(); break;
      case Arg::kTwoLines:
        line();
        line();
        break;
      case Arg::kLen1:
        need(1, "a length");
        need(d[i - 1], "a value");
        break;
      case Arg::kLen4: {
        need(4, "a length");
        const std::uint64_t k = le(d + i - 4, 4);
        if (op == 'T' && k > 0x7fffffffU) damaged(what, "a negative string length", at);
        need(k, "a value");
        break;
      }
      case Arg::kLen8:
        need(8, "a length");
        need(le(d + i - 8, 8), "a value");
        break;
      case Arg::kFrame: {
        need(8, "a frame length");
        const std::uint64_t k = le(d + i - 8, 8);
        if (k > n - i)
          damaged(what,
                  "a frame of " + std::to_string(k) + " bytes where " + std::to_string(n - i) + " are left",
                  at);
        break;
      }
      case Arg::kStop: return;
    }
  }
  damaged(what, "a pickle without its STOP opcode", n);
}

std::uint64_t archive_decompressed_limit(std::uint64_t file_size) {
  const std::uint64_t cap = file_size + kMaxArchiveExpansion;
  if (file_size > (cap - kArchiveExpansionSlack) / kArchiveExpansionRatio) return cap;
  return std::min(cap, kArchiveExpansionRatio * file_size + kArchiveExpansionSlack);
}

void check_torch_archive(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(path + ": cannot open");
  f.seekg(0, std::ios::end);
  const auto end = static_cast<std::uint64_t>(f.tellg());
  constexpr std::uint64_t kEnd = 22;  // the end-of-central-directory record without its comment
  if (end < kEnd) damaged(path, "too short for a zip archive", 0);
  // The end record is the last 22 bytes plus a comment of at most 65,535.
  const std::uint64_t tail_at = end - std::min<std::uint64_t>(end, kEnd + 65535);
  const auto tail = read_at(f, tail_at, end - tail_at, path);
  std::uint64_t eocd = end;  // position in the file
  for (std::uint64_t p = tail.size() - kEnd + 1; p-- > 0;) {
    if (le(&tail[p], 4) == 0x06054b50 && p + kEnd + le(&tail[p + 20], 2) == tail.size()) {
      eocd = tail_at + p;
      break;
    }
  }
  if (eocd == end) damaged(path, "no zip end record", end);
  const unsigned char* e = &tail[eocd - tail_at];
  std::uint64_t count = le(e + 10, 2), cd_size = le(e + 12, 4), cd_at = le(e + 16, 4);
  if (count == 0xffff || cd_size == 0xffffffffU || cd_at == 0xffffffffU) {
    // zip64: a locator just before the end record points at the zip64 end record.
    if (eocd < 20) damaged(path, "no zip64 locator", eocd);
    const auto loc = read_at(f, eocd - 20, 20, path);
    if (le(loc.data(), 4) != 0x07064b50) damaged(path, "no zip64 locator", eocd - 20);
    const std::uint64_t z = le(loc.data() + 8, 8);
    if (z > eocd || eocd - z < 56) damaged(path, "a zip64 end record outside the file", eocd - 20);
    const auto r = read_at(f, z, 56, path);
    if (le(r.data(), 4) != 0x06064b50) damaged(path, "no zip64 end record", z);
    count = le(r.data() + 32, 8);
    cd_size = le(r.data() + 40, 8);
    cd_at = le(r.data() + 48, 8);
  }
  if (cd_at > eocd || cd_size > eocd - cd_at) damaged(path, "a central directory outside the file", eocd);
  if (count > cd_size / 46)
    damaged(path, std::to_string(count) + " entries in a central directory that cannot hold them", eocd);
  if (count > kMaxArchiveRecords)
    throw std::runtime_error(path + ": " + std::to_string(count) + " records, more than the limit of " +
                             std::to_string(kMaxArchiveRecords) +
                             " records of a model or checkpoint archive");
  const std::uint64_t limit = archive_decompressed_limit(end);
  std::uint64_t total = 0;  // declared decompressed bytes of the records so far
  const auto cd = read_at(f, cd_at, cd_size, path);
  std::set<std::string> names;
  std::uint64_t p = 0;
  for (std::uint64_t k = 0; k < count; ++k) {
    const std::uint64_t at = cd_at + p;
    if (cd.size() - p < 46 || le(&cd[p], 4) != 0x02014b50)
      damaged(path, "a broken central directory entry", at);
    Entry en;
    en.method = le(&cd[p + 10], 2);
    en.crc = le(&cd[p + 16], 4);
    en.comp = le(&cd[p + 20], 4);
    en.uncomp = le(&cd[p + 24], 4);
    const std::uint64_t name_n = le(&cd[p + 28], 2), extra_n = le(&cd[p + 30], 2),
                        comment_n = le(&cd[p + 32], 2);
    en.local = le(&cd[p + 42], 4);
    if (cd.size() - p - 46 < name_n + extra_n + comment_n)
      damaged(path, "a central directory entry past its end", at);
    en.name.assign(reinterpret_cast<const char*>(&cd[p + 46]), name_n);
    // zip64 extra field (id 1): the 8-byte values of whichever fields read 0xffffffff, in order.
    for (std::uint64_t x = p + 46 + name_n, xe = x + extra_n; x + 4 <= xe;) {
      const std::uint64_t id = le(&cd[x], 2), len = le(&cd[x + 2], 2);
      if (x + 4 + len > xe) damaged(path, "a broken extra field", cd_at + x);
      if (id == 1) {
        std::uint64_t v = x + 4;
        for (std::uint64_t* field : {&en.uncomp, &en.comp, &en.local}) {
          if (*field != 0xffffffffU) continue;
          if (v + 8 > x + 4 + len) damaged(path, "a short zip64 extra field", cd_at + x);
          *field = le(&cd[v], 8);
          v += 8;
        }
      }
      x += 4 + len;
    }
    p += 46 + name_n + extra_n + comment_n;
    const std::string what = path + " (" + en.name + ")";
    if (en.local > cd_at || cd_at - en.local < 30) damaged(what, "a local header outside the file", at);
    const auto lh = read_at(f, en.local, 30, what);
    if (le(lh.data(), 4) != 0x04034b50) damaged(what, "no local header", en.local);
    // The name twice, as every writer puts it: a changed name made LibTorch look for code it
    // did not find and end in std::terminate (fuzzing, issue 24).
    const std::uint64_t local_name_n = le(&lh[26], 2);
    if (local_name_n != name_n ||
        read_at(f, en.local + 30, name_n, what) != std::vector<unsigned char>(en.name.begin(), en.name.end()))
      damaged(what, "a local header whose name differs from the directory's", en.local);
    if (!names.insert(en.name).second) damaged(what, "a second record of that name", at);
    const std::uint64_t data = en.local + 30 + local_name_n + le(&lh[28], 2);
    if (data > cd_at || en.comp > cd_at - data)
      damaged(what, "a record of " + std::to_string(en.comp) + " bytes past the end of the data", en.local);
    if (en.method == 0 && en.comp != en.uncomp)
      damaged(what,
              "a stored record whose sizes differ (" + std::to_string(en.comp) + ", " +
                  std::to_string(en.uncomp) + ")",
              at);
    // Deflate expands at most 1032:1; more than that is a size field, not data.
    if (en.method == 8 && en.uncomp / 1032 > en.comp + 1)
      damaged(what,
              "a compressed record claiming " + std::to_string(en.uncomp) + " bytes from " +
                  std::to_string(en.comp),
              at);
    if (en.method != 0 && en.method != 8)
      damaged(what, "compression method " + std::to_string(en.method), at);
    // Before a byte is inflated: LibTorch would hold the whole record in memory.
    if (en.uncomp > limit - total)
      throw std::runtime_error(what + ": decompresses to " + mib(total + en.uncomp) +
                               " with the records before it, past the limit of " + mib(limit) +
                               " for an archive of " + mib(end) +
                               " (16 x its size + 64 MiB, at most its size + 4 GiB: a deflate bomb?)");
    total += en.uncomp;
    // data.pkl, constants.pkl and code/*.debug_pkl are pickles LibTorch reads.
    const bool pkl = en.name.size() >= 3 && en.name.compare(en.name.size() - 3, 3, "pkl") == 0;
    if (pkl && en.method == 0) {
      const auto b = read_at(f, data, en.comp, what);
      check_pickle(b.data(), b.size(), what);
    }
    check_crc(f, data, en, what);
  }
}

}  // namespace gridrun::runner

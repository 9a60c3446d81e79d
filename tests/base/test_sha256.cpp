// Unit tests of sha256.hpp: the NIST vectors, lengths around the padding and block boundaries
// checked against the system's `sha256sum`, and files. A wrong hash would give a torchscript job a
// wrong id (issue 33) and a results file a hash that `sha256sum` contradicts.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "gridrun/base/sha256.hpp"
#include "gridrun/base/spawn.hpp"

namespace fs = std::filesystem;
using namespace gridrun::base;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gridrun-base-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string sha256_str(const std::string& s) { return sha256_hex(s.data(), s.size()); }

// Bytes that are not all alike, so that a word or byte order mistake changes the hash.
std::string pattern(std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 251 + 7) & 0xff);
  return s;
}

void write(const fs::path& p, const std::string& data) {
  std::ofstream out(p, std::ios::binary);
  out << data;
  ASSERT_TRUE(out.flush()) << p;
}

}  // namespace

TEST(Sha256, NistVectors) {
  EXPECT_EQ(sha256_str(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_str("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_str(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_EQ(sha256_hex(nullptr, 0), sha256_str(""));
}

TEST(Sha256, IncrementalEqualsOneShotWhateverThePieces) {
  const std::string data = pattern(1000);
  const std::string whole = sha256_str(data);
  for (std::size_t piece : {1, 3, 55, 56, 63, 64, 65, 127, 999}) {
    Sha256 h;
    for (std::size_t at = 0; at < data.size(); at += piece)
      h.update(data.data() + at, std::min(piece, data.size() - at));
    EXPECT_EQ(h.hex_digest(), whole) << "pieces of " << piece;
  }
  // hex_digest leaves the object as it was: asking twice, or going on after it, is fine.
  Sha256 h;
  h.update(data.data(), 500);
  EXPECT_EQ(h.hex_digest(), sha256_str(data.substr(0, 500)));
  EXPECT_EQ(h.hex_digest(), sha256_str(data.substr(0, 500)));
  h.update(data.data() + 500, 500);
  EXPECT_EQ(h.hex_digest(), whole);
}

TEST(Sha256, FileEqualsMemory) {
  TempDir d;
  const std::string data = pattern(3 * 1024 * 1024 + 17);  // several 1 MiB reads and a short one
  write(d.path / "model.pt", data);
  EXPECT_EQ(sha256_file((d.path / "model.pt").string()), sha256_str(data));
  write(d.path / "empty.pt", "");
  EXPECT_EQ(sha256_file((d.path / "empty.pt").string()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// Lengths where the padding needs one block or two (55/56), and around the 64-byte block and the
// 1 MiB read, against what users will compare with.
TEST(Sha256, BlockBoundariesAgreeWithSha256sum) {
  TempDir d;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{55}, std::size_t{56}, std::size_t{57},
                        std::size_t{63}, std::size_t{64}, std::size_t{65}, std::size_t{119}, std::size_t{120},
                        std::size_t{128}, std::size_t{1} << 20, (std::size_t{1} << 20) + 1}) {
    const std::string data = pattern(n);
    const std::string p = (d.path / ("f" + std::to_string(n))).string();
    write(p, data);
    const CapturedRun r = run_captured({"sha256sum", p});
    if (!r.started) GTEST_SKIP() << "sha256sum not installed";
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string expected = r.out.substr(0, r.out.find(' '));
    ASSERT_EQ(expected.size(), 64u) << r.out;
    EXPECT_EQ(sha256_str(data), expected) << n << " bytes";
    EXPECT_EQ(sha256_file(p), expected) << n << " bytes";
  }
}

TEST(Sha256, UnreadableFileErrorNamesPath) {
  try {
    sha256_file("/nonexistent/model.pt");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/model.pt: cannot read: No such file or directory");
  }
  TempDir d;  // open() of a directory succeeds; the read fails
  try {
    sha256_file(d.path.string());
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), d.path.string() + ": cannot read: Is a directory");
  }
}

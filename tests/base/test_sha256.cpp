// Unit tests of sha256.hpp: the NIST vectors, lengths around the padding and block boundaries
// checked against the system's `sha256sum`, and files. A wrong hash would give a torchscript job a
// wrong id (issue 33) and a results file a hash that `sha256sum` contradicts.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
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
  TempDir d;  // open() of a directory succeeds; the guarded open refuses it (issue 57)
  try {
    sha256_file(d.path.string());
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              d.path.string() +
                  ": not read as a model or data file (a regular file of at most 1024 GiB): "
                  "it is a directory");
  }
}

// sha256_file_cached (issue 45: a data file's hash is in its jobs' ids, planned again on every
// `plan` and `run`): an entry is used only while the file's stat matches it, anything unusable in
// the cache is a miss, and a file changed in the last 2 s is never remembered.
namespace {
std::string read_all(const std::string& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string stat_json(const std::string& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return "";
  auto ns = [](const timespec& t) { return std::to_string(t.tv_sec * 1000000000LL + t.tv_nsec); };
  return "[" + std::to_string(st.st_dev) + "," + std::to_string(st.st_ino) + "," +
         std::to_string(st.st_size) + "," + ns(st.st_mtim) + "," + ns(st.st_ctim) + "]";
}
}  // namespace

TEST(Sha256, CachedByStatOnlyWhileTheFileIsUnchanged) {
  TempDir d;
  const std::string f = (d.path / "data.h5").string(), cache = (d.path / "c" / "sha256.json").string();
  write(f, "abc");
  const std::string abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  // Just written: hashed, not remembered (its timestamps may not yet tell two writes apart).
  EXPECT_EQ(sha256_file_cached(f, cache), abc);
  EXPECT_FALSE(fs::exists(cache));
  // An entry whose stat matches is used as is (a planted hash shows it was not recomputed) ...
  const std::string planted(64, 'e');
  fs::create_directories(fs::path(cache).parent_path());
  write(cache, "{\"format\":1,\"files\":{\"" + f + "\":{\"stat\":" + stat_json(f) + ",\"sha256\":\"" +
                   planted + "\"}}}");
  EXPECT_EQ(sha256_file_cached(f, cache), planted);
  EXPECT_EQ(sha256_file_cached(f, ""), abc);  // no cache: always read
  // ... and a file written since (size, times, inode) is read again.
  write(f, "abd");
  EXPECT_EQ(sha256_file_cached(f, cache), sha256_file(f));
  // Not a hash, not JSON, not an object: a miss, never an error; and (issue 57) a warning naming
  // the cache, which is rewritten without what was bad (here: nothing left).
  for (const std::string& bad :
       {"{\"format\":1,\"files\":{\"" + f + "\":{\"stat\":" + stat_json(f) + ",\"sha256\":\"xyz\"}}}",
        "{\"format\":1,\"files\":{\"" + f + "\":{\"stat\":[1,2],\"sha256\":\"" + planted + "\"}}}",
        std::string("{\"files\":"), std::string("[1,2]")}) {
    write(cache, bad);
    std::string warning;
    EXPECT_EQ(sha256_file_cached(f, cache, &warning), sha256_file(f)) << bad;
    EXPECT_NE(warning.find(cache + ": SHA-256 cache not used as it was"), std::string::npos) << warning;
    EXPECT_NE(warning.find("rebuilt"), std::string::npos) << warning;
    EXPECT_EQ(read_all(cache), "{\"format\":1,\"files\":{}}\n") << bad;
    EXPECT_EQ(sha256_file_cached(f, cache, &warning), sha256_file(f));
    EXPECT_EQ(warning, "") << "a rebuilt cache is warned about again";
  }
  // One bad entry among good ones: only it is dropped.
  write(cache, "{\"format\":1,\"files\":{\"/x\":{\"stat\":[1,2,3,4,5],\"sha256\":\"" + planted +
                   "\"},\"/y\":{\"stat\":\"no\",\"sha256\":\"" + planted + "\"}}}");
  std::string warning;
  sha256_file_cached(f, cache, &warning);
  EXPECT_NE(warning.find("1 bad entry"), std::string::npos) << warning;
  EXPECT_NE(read_all(cache).find("\"/x\""), std::string::npos);
  EXPECT_EQ(read_all(cache).find("\"/y\""), std::string::npos);
  // Not a regular file (a FIFO would block a plain open): warned about and replaced by a file.
  fs::remove(cache);
  ASSERT_EQ(::mkfifo(cache.c_str(), 0600), 0);
  EXPECT_EQ(sha256_file_cached(f, cache, &warning), sha256_file(f));
  EXPECT_NE(warning.find("FIFO"), std::string::npos) << warning;
  EXPECT_TRUE(fs::is_regular_file(fs::symlink_status(cache)));
  // A file last changed over 2 s ago is remembered (a system file: no sleep in the test).
  const std::string old = "/etc/os-release";
  struct stat st {};
  if (::stat(old.c_str(), &st) != 0 || st.st_ctim.tv_sec > ::time(nullptr) - 10)
    GTEST_SKIP() << "no old file to remember";
  fs::remove(cache);
  EXPECT_EQ(sha256_file_cached(old, cache), sha256_file(old));
  const std::string text = read_all(cache);
  EXPECT_NE(text.find("\"" + old + "\":{\"stat\":" + stat_json(old) + ",\"sha256\":\"" + sha256_file(old)),
            std::string::npos)
      << text;
}

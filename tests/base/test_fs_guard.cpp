// The one guarded way to open a file gridrun reads back (base::open_checked and the readers on it,
// issue 57): a FIFO, a device, a folder or a link in a file's place is refused at once with a
// message naming the file, its kind and its cap; a file over its kind's cap is refused from fstat,
// before a byte is read; a log gridrun appends to is never written through a link.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/own_dir.hpp"

namespace fs = std::filesystem;
using namespace gridrun;

namespace {

constexpr base::FileKind kSmall{"test file", 4 * base::kinds::kKiB, false};
constexpr base::FileKind kSmallFollowing{"test file", 4 * base::kinds::kKiB, true};

class FsGuard : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gridrun-fs-guard-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }
  std::string fifo(const std::string& name) const {
    EXPECT_EQ(::mkfifo(path(name).c_str(), 0600), 0);
    return path(name);
  }
  // What read_file throws, or "no error".
  static std::string error_of(const std::string& p, const base::FileKind& kind) {
    try {
      base::read_file(p, kind);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "no error";
  }

  fs::path dir_;
};

TEST_F(FsGuard, ReadsARegularFileWhole) {
  const std::string p = write("a.json", "{\"x\": 1}\n");
  EXPECT_EQ(base::read_file(p, kSmall), "{\"x\": 1}\n");
  std::string refused = "stale";
  EXPECT_EQ(base::try_read_file(p, kSmall, &refused), std::optional<std::string>("{\"x\": 1}\n"));
  EXPECT_EQ(refused, "");
  // Exactly at the cap is still read.
  EXPECT_EQ(base::read_file(write("cap", std::string(4096, 'x')), kSmall).size(), 4096u);
}

// No writer ever opens the FIFO: a blocking open would wait for ever (the test's own timeout).
TEST_F(FsGuard, FifoIsRefusedAtOnceNamingFileKindAndCap) {
  const std::string p = fifo("state.json");
  EXPECT_EQ(error_of(p, kSmall),
            p + ": not read as a test file (a regular file of at most 4 KiB): it is a FIFO");
  std::string refused;
  EXPECT_FALSE(base::try_read_file(p, kSmall, &refused));
  EXPECT_EQ(refused, p + ": not read as a test file (a regular file of at most 4 KiB): it is a FIFO");
  // Followed or not, a FIFO is never a regular file; nor through a link to it.
  fs::create_symlink(p, path("to-fifo"));
  EXPECT_NE(error_of(path("to-fifo"), kSmallFollowing).find("it is a FIFO"), std::string::npos);
  EXPECT_THROW(base::read_file_blocks(p, kSmall, 16, [](const unsigned char*, std::size_t) {}),
               std::runtime_error);
}

TEST_F(FsGuard, LinkIsRefusedUnlessTheKindFollowsLinks) {
  const std::string target = write("outside", "secret");
  fs::create_symlink(target, path("link"));
  EXPECT_EQ(error_of(path("link"), kSmall),
            path("link") +
                ": not read as a test file (a regular file of at most 4 KiB): it is a symbolic link "
                "(not followed)");
  EXPECT_EQ(base::read_file(path("link"), kSmallFollowing), "secret");
}

TEST_F(FsGuard, DevZeroIsRefusedWithoutReadingIt) {
  fs::create_symlink("/dev/zero", path("heartbeat"));
  EXPECT_NE(error_of(path("heartbeat"), kSmall).find("it is a symbolic link"), std::string::npos);
  EXPECT_EQ(error_of(path("heartbeat"), kSmallFollowing),
            path("heartbeat") +
                ": not read as a test file (a regular file of at most 4 KiB): it is a character device");
  EXPECT_NE(error_of("/dev/zero", base::kinds::kProcFile).find("character device"), std::string::npos);
}

TEST_F(FsGuard, FolderIsRefused) {
  fs::create_directories(path("sub"));
  EXPECT_EQ(error_of(path("sub"), kSmall),
            path("sub") + ": not read as a test file (a regular file of at most 4 KiB): it is a directory");
}

// A sparse file of 1 GiB: refused from fstat's size, so nothing near 1 GiB is ever allocated.
TEST_F(FsGuard, FileOverItsCapIsRefusedBeforeReading) {
  const std::string p = path("sparse");
  {
    const base::UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(::ftruncate(fd.get(), off_t{1} << 30), 0);
  }
  EXPECT_EQ(error_of(p, kSmall),
            p + ": not read as a test file (a regular file of at most 4 KiB): it holds 1073741824 bytes");
  EXPECT_NE(error_of(p, base::kinds::kStateFile).find("(a regular file of at most 256 MiB)"),
            std::string::npos);
  EXPECT_EQ(
      error_of(write("one-more", std::string(4097, 'x')), kSmall),
      path("one-more") + ": not read as a test file (a regular file of at most 4 KiB): it holds 4097 bytes");
}

// /proc files say size 0: the bounded read is what holds.
TEST_F(FsGuard, ProcFileIsReadWithTheCapAsBound) {
  const std::string status = base::read_file("/proc/self/status", base::kinds::kProcFile);
  EXPECT_NE(status.find("Pid:"), std::string::npos);
  constexpr base::FileKind kTiny{"tiny file", 16, true};
  EXPECT_EQ(error_of("/proc/self/status", kTiny),
            "/proc/self/status: not read as a tiny file (a regular file of at most 16 bytes): it holds more");
}

// For a file another library opens by name (libhdf5): the same verdicts, from lstat, no open.
TEST_F(FsGuard, CheckBeforeOpenRefusesWhatOpenCheckedWould) {
  EXPECT_EQ(base::check_before_open(write("ok.h5", "x"), kSmall), "");
  EXPECT_EQ(base::check_before_open(fifo("f.h5"), kSmall),
            path("f.h5") + ": not read as a test file (a regular file of at most 4 KiB): it is a FIFO");
  fs::create_symlink(path("ok.h5"), path("l.h5"));
  EXPECT_NE(base::check_before_open(path("l.h5"), kSmall).find("it is a symbolic link"), std::string::npos);
  EXPECT_EQ(base::check_before_open(path("l.h5"), kSmallFollowing), "");
  EXPECT_NE(
      base::check_before_open(write("big.h5", std::string(5000, 'x')), kSmall).find("it holds 5000 bytes"),
      std::string::npos);
  int err = 0;
  EXPECT_EQ(base::check_before_open(path("none.h5"), kSmall, &err),
            path("none.h5") + ": cannot read: No such file or directory");
  EXPECT_EQ(err, ENOENT);
}

TEST_F(FsGuard, MissingFileIsNotARefusal) {
  std::string refused = "stale";
  EXPECT_FALSE(base::try_read_file(path("none"), kSmall, &refused));
  EXPECT_EQ(refused, "");
  EXPECT_EQ(error_of(path("none"), kSmall), path("none") + ": cannot read: No such file or directory");
  const base::CheckedOpen f = base::open_checked(path("none"), kSmall, O_RDONLY);
  EXPECT_FALSE(f.fd.valid());
  EXPECT_TRUE(f.missing());
}

TEST_F(FsGuard, LogIsAppendedToAndALinkInItsPlaceReplaced) {
  const std::string log = path("job.out");
  std::string replaced;
  for (const char* line : {"one\n", "two\n"}) {
    const base::UniqueFd fd = base::open_log_for_append(log, base::kinds::kJobLog, replaced);
    ASSERT_TRUE(fd.valid());
    EXPECT_EQ(replaced, "");
    ASSERT_EQ(::write(fd.get(), line, 4), 4);
  }
  EXPECT_EQ(base::read_file(log, kSmall), "one\ntwo\n");

  // A link to a file outside the run: the link goes, the file it named is left as it was.
  const std::string victim = write("victim", "untouched\n");
  const std::string linked = path("linked.err");
  fs::create_symlink(victim, linked);
  {
    const base::UniqueFd fd = base::open_log_for_append(linked, base::kinds::kJobLog, replaced);
    ASSERT_TRUE(fd.valid());
    ASSERT_EQ(::write(fd.get(), "hdr\n", 4), 4);
  }
  EXPECT_EQ(replaced,
            linked + ": a symbolic link in place of a job log; removed, and a new file written instead");
  EXPECT_FALSE(fs::is_symlink(linked));
  EXPECT_EQ(base::read_file(linked, kSmall), "hdr\n");
  EXPECT_EQ(base::read_file(victim, kSmall), "untouched\n");

  // A FIFO: replaced too, never blocking the write.
  const std::string f = fifo("fifo.out");
  {
    const base::UniqueFd fd = base::open_log_for_append(f, base::kinds::kJobLog, replaced);
    ASSERT_TRUE(fd.valid());
  }
  EXPECT_EQ(replaced, f + ": a FIFO in place of a job log; removed, and a new file written instead");
  EXPECT_TRUE(fs::is_regular_file(f));
}

// A warm worker's folder (issue 57): made as a real folder, emptied of its own names only, and
// never through a link put in place of it or of its parent.
TEST_F(FsGuard, OwnFoldersAreNeverLinksAndLoseOnlyTheirOwnFiles) {
  const std::string workers = path("workers");
  base::make_own_dir(workers);
  base::make_own_dir(workers);  // there already: fine
  const std::string w1 = workers + "/w1";
  base::make_own_dir(w1);
  for (const char* n : {"done", "task.0", "notes.txt"}) write("workers/w1/" + std::string(n), "x");
  auto pipe_name = [](const std::string& n) { return n == "done" || n == "task.0"; };
  EXPECT_EQ(base::remove_own_entries(w1 + "/", pipe_name), 2u);
  EXPECT_TRUE(fs::exists(w1 + "/notes.txt"));  // not its own: left, and so is the folder
  fs::remove(w1 + "/notes.txt");
  write("workers/w1/done", "x");
  EXPECT_EQ(base::remove_own_entries(w1, pipe_name), 1u);
  EXPECT_FALSE(fs::exists(w1));  // emptied: removed

  // A link in place of the folder or of its parent: refused, and nothing removed through it.
  const std::string victim = path("victim");
  fs::create_directories(victim + "/w1");
  write("victim/w1/done", "another experiment's");
  fs::create_symlink(victim, path("linked"));
  try {
    base::make_own_dir(path("linked"));
    FAIL() << "a link was taken for a folder";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              path("linked") + ": a symbolic link, not a folder of gridrun's own; refused");
  }
  EXPECT_EQ(base::remove_own_entries(path("linked") + "/w1", pipe_name), 0u);
  fs::create_symlink(victim + "/w1", workers + "/w2");
  EXPECT_EQ(base::remove_own_entries(workers + "/w2", pipe_name), 0u);
  EXPECT_TRUE(fs::exists(victim + "/w1/done"));
}

TEST_F(FsGuard, EveryKindHasACapAndRunFilesAreNeverFollowed) {
  for (const base::FileKind& k :
       {base::kinds::kGridCopy, base::kinds::kStateFile, base::kinds::kResultsIndex, base::kinds::kJobFile,
        base::kinds::kHeartbeat, base::kinds::kJobLog, base::kinds::kLaunchToken, base::kinds::kLockFile,
        base::kinds::kCalibration, base::kinds::kPrediction, base::kinds::kSlurmEnded,
        base::kinds::kSlurmOthers, base::kinds::kSubmittedList, base::kinds::kSha256Cache,
        base::kinds::kRunSummary, base::kinds::kRunCache}) {
    EXPECT_FALSE(k.follow_links) << k.name;
    EXPECT_GT(k.max_bytes, 0u) << k.name;
  }
  EXPECT_EQ(base::kinds::kHeartbeat.max_bytes, 4096u);
}

}  // namespace

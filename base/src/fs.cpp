// See fs.hpp. POSIX calls rather than iostreams: we need the errno of each step for the message,
// and fsync, which iostreams cannot do.
#include "gridrun/base/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "gridrun/base/own_dir.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::base {

std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.string();
}

namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// What fstat (or lstat) says a file is, for a refusal's message.
std::string what_is(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link (not followed)";
  return "not a regular file";
}

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (std::uint64_t{1} << 30) && bytes % (std::uint64_t{1} << 30) == 0)
    return std::to_string(bytes >> 30) + " GiB";
  if (bytes >= (std::uint64_t{1} << 20) && bytes % (std::uint64_t{1} << 20) == 0)
    return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

// "PATH: not read as a KIND (a regular file of at most CAP): WHY": the file, the kind and the cap.
std::string refusal(const std::string& path, const FileKind& kind, const std::string& why) {
  return path + ": not read as a " + std::string(kind.name) + " (a regular file of at most " +
         size_text(kind.max_bytes) + "): " + why;
}

}  // namespace

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

CheckedOpen open_checked(const std::string& path, const FileKind& kind, int flags, mode_t mode) {
  CheckedOpen r;
  const int how = flags | O_NONBLOCK | O_CLOEXEC | (kind.follow_links ? 0 : O_NOFOLLOW);
  UniqueFd fd(::open(path.c_str(), how, mode));
  if (!fd.valid()) {
    r.err = errno;  // before building the message, which may allocate
    r.message = r.err == ELOOP && !kind.follow_links
                    ? refusal(path, kind, "it is " + what_is(S_IFLNK))
                    : path + ((flags & O_ACCMODE) == O_RDONLY ? ": cannot read: " : ": cannot open: ") +
                          errno_text(r.err);
    return r;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    r.err = errno;
    r.message = path + ": cannot read: " + errno_text(r.err);
    return r;
  }
  if (!S_ISREG(st.st_mode)) {
    r.message = refusal(path, kind, "it is " + what_is(st.st_mode));
    return r;
  }
  r.size = st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  if ((flags & O_ACCMODE) == O_RDONLY && r.size > kind.max_bytes) {
    r.message = refusal(path, kind, "it holds " + std::to_string(r.size) + " bytes");
    return r;
  }
  r.fd = std::move(fd);
  return r;
}

std::string check_before_open(const std::string& path, const FileKind& kind, int* err) {
  if (err) *err = 0;
  struct stat st {};
  if ((kind.follow_links ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0) {
    const int e = errno;
    if (err) *err = e;
    return path + ": cannot read: " + errno_text(e);
  }
  if (!S_ISREG(st.st_mode)) return refusal(path, kind, "it is " + what_is(st.st_mode));
  const std::uint64_t size = st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
  if (size > kind.max_bytes) return refusal(path, kind, "it holds " + std::to_string(size) + " bytes");
  return "";
}

namespace {

// The whole file through open_checked, at most kind.max_bytes of it. false: `message` says why,
// `missing` whether the file simply is not there.
bool read_all(const std::string& path, const FileKind& kind, std::string& out, std::string& message,
              bool& missing) {
  CheckedOpen f = open_checked(path, kind, O_RDONLY);
  if (!f.fd.valid()) {
    message = std::move(f.message);
    missing = f.missing();
    return false;
  }
  out.reserve(static_cast<std::size_t>(f.size));
  char buf[65536];
  for (;;) {
    // One byte more than the cap may be read: that byte tells a file grown past it (or a /proc
    // file, whose fstat size is 0) from one that ends at it.
    const std::uint64_t room = kind.max_bytes + 1 - out.size();
    const ssize_t n =
        ::read(f.fd.get(), buf, static_cast<std::size_t>(std::min<std::uint64_t>(sizeof buf, room)));
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
      if (out.size() > kind.max_bytes) {
        message = refusal(path, kind, "it holds more");
        out.clear();
        out.shrink_to_fit();
        return false;
      }
    } else if (n == 0) {
      return true;
    } else if (const int err = errno; err != EINTR) {
      message = path + ": cannot read: " + errno_text(err);
      return false;
    }
  }
}

}  // namespace

void read_file_blocks(const std::string& path, const FileKind& kind, std::size_t block,
                      const std::function<void(const unsigned char* data, std::size_t size)>& fn) {
  CheckedOpen f = open_checked(path, kind, O_RDONLY);
  if (!f.fd.valid()) throw std::runtime_error(f.message);
  std::vector<unsigned char> buf(block > 0 ? block : 1);
  std::uint64_t total = 0;
  for (;;) {
    const ssize_t n = ::read(f.fd.get(), buf.data(), buf.size());
    if (n > 0) {
      total += static_cast<std::uint64_t>(n);
      if (total > kind.max_bytes) throw std::runtime_error(refusal(path, kind, "it holds more"));
      fn(buf.data(), static_cast<std::size_t>(n));
    } else if (n == 0) {
      return;
    } else if (const int err = errno; err != EINTR) {
      throw std::runtime_error(path + ": cannot read: " + errno_text(err));
    }
  }
}

std::string read_file(const std::string& path, const FileKind& kind) {
  std::string out, message;
  bool missing = false;
  if (!read_all(path, kind, out, message, missing)) throw std::runtime_error(message);
  return out;
}

std::optional<std::string> try_read_file(const std::string& path, const FileKind& kind,
                                         std::string* refused) {
  std::string out, message;
  bool missing = false;
  if (refused) refused->clear();
  if (!read_all(path, kind, out, message, missing)) {
    if (refused && !missing) *refused = std::move(message);
    return std::nullopt;
  }
  return out;
}

UniqueFd open_log_for_append(const std::string& path, const FileKind& kind, std::string& replaced) {
  replaced.clear();
  constexpr int kAppend = O_WRONLY | O_APPEND | O_CREAT;
  CheckedOpen f = open_checked(path, kind, kAppend, 0644);
  if (f.fd.valid()) return std::move(f.fd);
  struct stat st {};
  // Only what lstat shows is not a regular file is removed: a file gridrun cannot open for
  // another reason (permissions, a full disk) is left as it is and named.
  if (::lstat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
    throw std::runtime_error(f.message);
  if (::unlink(path.c_str()) != 0) {
    const int err = errno;
    throw std::runtime_error(f.message + "; cannot remove it: " + errno_text(err));
  }
  replaced = path + ": " + (S_ISLNK(st.st_mode) ? std::string("a symbolic link") : what_is(st.st_mode)) +
             " in place of a " + std::string(kind.name) + "; removed, and a new file written instead";
  f = open_checked(path, kind, kAppend | O_EXCL, 0644);
  if (!f.fd.valid()) throw std::runtime_error(f.message);
  return std::move(f.fd);
}

std::string stat_stamp(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "absent" : "error:" + std::to_string(errno);
  auto ns = [](const timespec& t) { return static_cast<long long>(t.tv_sec) * 1000000000LL + t.tv_nsec; };
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" + std::to_string(ns(st.st_mtim)) +
         ":" + std::to_string(ns(st.st_ctim));
}

namespace {
// The names an open folder lists, but "." and "..".
std::vector<std::string> entry_names(DIR* d) {
  std::vector<std::string> out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' && (e->d_name[1] == '\0' || (e->d_name[1] == '.' && e->d_name[2] == '\0')))
      continue;
    out.emplace_back(e->d_name);
  }
  return out;
}
}  // namespace

std::optional<std::vector<std::string>> list_folder(const std::string& dir, int* err) {
  const std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
  if (!d) {
    if (err) *err = errno;
    return std::nullopt;
  }
  return entry_names(d.get());
}

std::optional<std::vector<EntryStamp>> folder_entry_stamps(const std::string& dir,
                                                           const FolderStampOptions& opts, int* err) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) {
    if (err) *err = errno;
    return std::nullopt;
  }
  std::vector<EntryStamp> out;
  for (std::string& name : entry_names(d))
    if (std::find(opts.skip.begin(), opts.skip.end(), name) == opts.skip.end())
      out.push_back(EntryStamp{std::move(name), 0});
  // Each entry's FNV-1a over its name and stat fields. The stats are almost all of the time
  // (100,000 of them take 0.3 s on one core), so they are split over a few threads.
  auto entry_hash = [fd = ::dirfd(d)](const std::string& name) {
    std::uint64_t h = 1469598103934665603ULL;
    auto mix = [&h](const void* p, std::size_t n) {
      const auto* b = static_cast<const unsigned char*>(p);
      for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
    };
    mix(name.c_str(), name.size() + 1);
    struct stat st {};
    if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      const std::int64_t f[] = {
          static_cast<std::int64_t>(st.st_ino),         static_cast<std::int64_t>(st.st_size),
          static_cast<std::int64_t>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
          static_cast<std::int64_t>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec};
      mix(f, sizeof f);
    }
    return h;
  };
  const std::size_t parts =
      out.size() < 4096 ? 1 : std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 4);
  {
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < parts; ++t)
      threads.emplace_back([&, t] {
        for (std::size_t i = t; i < out.size(); i += parts) out[i].hash = entry_hash(out[i].name);
      });
    for (std::size_t i = 0; i < out.size(); i += parts) out[i].hash = entry_hash(out[i].name);
    for (auto& th : threads) th.join();
  }
  ::closedir(d);
  return out;
}

std::string entries_digest(const std::vector<EntryStamp>& entries) {
  // The sum does not depend on the order in which the folder listed its entries.
  std::uint64_t sum = 0;
  for (const EntryStamp& e : entries) sum += e.hash;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
  return std::to_string(entries.size()) + ":" + hex;
}

std::string folder_entries_stamp(const std::string& dir, const FolderStampOptions& opts) {
  const std::string own = opts.own ? stat_stamp(dir) : std::string("entries");
  int err = 0;
  const auto entries = folder_entry_stamps(dir, opts, &err);
  if (!entries) return own + " unlisted:" + std::to_string(err);  // absent and empty differ
  return own + "/" + entries_digest(*entries);
}

void fsync_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) ::fsync(fd.get());
}

namespace {
void write_then_rename(const std::string& path, std::string_view data, unsigned mode, bool durable) {
  AtomicFileWriter w(path, mode);
  w.append(data);
  w.commit(durable);
}
}  // namespace

AtomicFileWriter::AtomicFileWriter(std::string path, unsigned mode)
    : path_(std::move(path)), tmp_(path_ + ".tmp." + std::to_string(::getpid())) {
  fd_ = UniqueFd(::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode)));
  if (fd_.get() < 0) fail("create", errno);
  // A temporary that a crashed process of the same PID left keeps its permissions through
  // O_TRUNC: a secret's are set here, before its first byte.
  if (mode != 0644 && ::fchmod(fd_.get(), static_cast<mode_t>(mode)) != 0) fail("chmod", errno);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
}

void AtomicFileWriter::fail(const char* step, int err) {
  ::unlink(tmp_.c_str());
  tmp_.clear();
  throw std::runtime_error(path_ + ": cannot write (" + step + "): " + errno_text(err));
}

void AtomicFileWriter::append(std::string_view data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd_.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write", errno);
    }
    done += static_cast<std::size_t>(n);
  }
}

void AtomicFileWriter::commit(bool durable) {
  if (durable && ::fsync(fd_.get()) != 0) fail("fsync", errno);
  if (::close(fd_.release()) != 0) fail("close", errno);
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail("rename", errno);
  tmp_.clear();
  if (durable) fsync_dir(dir_of(path_));
}

void write_file_atomic(const std::string& path, std::string_view data, unsigned mode) {
  write_then_rename(path, data, mode, true);
}

void replace_file(const std::string& path, std::string_view data) {
  write_then_rename(path, data, 0644, false);
}

void rename_durable(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw std::runtime_error("cannot rename " + from + " to " + to + ": " + errno_text(errno));
  fsync_dir(dir_of(to));
}

std::string quarantine(const std::string& path) {
  std::string to = path + ".damaged";
  struct stat st {};
  for (int n = 2; ::stat(to.c_str(), &st) == 0 && n < 1000; ++n) to = path + ".damaged." + std::to_string(n);
  if (std::rename(path.c_str(), to.c_str()) != 0) return "";
  fsync_dir(dir_of(to));
  return to;
}

void make_own_dir(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    const int err = errno;
    throw std::runtime_error(dir + ": cannot create: " + errno_text(err));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    const int err = errno;
    throw std::runtime_error(dir + ": cannot create: " + errno_text(err));
  }
  if (!S_ISDIR(st.st_mode))
    throw std::runtime_error(dir + ": " +
                             (S_ISLNK(st.st_mode) ? std::string("a symbolic link") : what_is(st.st_mode)) +
                             ", not a folder of gridrun's own; refused");
  if (st.st_uid != ::geteuid())
    throw std::runtime_error(dir + ": a folder of another user (uid " + std::to_string(st.st_uid) +
                             "), not one of gridrun's own; refused");
}

std::size_t remove_own_entries(const std::string& given,
                               const std::function<bool(const std::string&)>& owned) {
  std::string dir = given;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();  // "DIR/" is DIR
  const std::string parent = dir_of(dir);
  const std::string name = dir.substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
  if (name.empty() || name == "." || name == "..") return 0;
  const UniqueFd up(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!up.valid()) return 0;
  const int fd = ::openat(up.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  DIR* d = ::fdopendir(fd);  // owns fd from here
  if (!d) {
    ::close(fd);
    return 0;
  }
  std::vector<std::string> names;
  while (const dirent* e = ::readdir(d)) {
    const std::string n = e->d_name;
    if (n != "." && n != ".." && owned(n)) names.push_back(n);
  }
  std::size_t removed = 0;
  for (const std::string& n : names) {
    struct stat st {};
    if (::fstatat(::dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) continue;
    if (::unlinkat(::dirfd(d), n.c_str(), 0) == 0) ++removed;
  }
  ::closedir(d);
  ::unlinkat(up.get(), name.c_str(), AT_REMOVEDIR);  // fails, and leaves it, unless empty
  return removed;
}

}  // namespace gridrun::base

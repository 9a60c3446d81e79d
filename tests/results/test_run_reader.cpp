// The run reader (run_reader.hpp): one read per file per command, the results folder's index
// (reused, re-read when a file changes, rebuilt when damaged), one verdict per file whatever the
// depth, and opens counted by the kernel (inotify) for every command of the reports.
#include <gtest/gtest.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "gridrun/report/collect.hpp"
#include "gridrun/report/reporter.hpp"
#include "gridrun/results/run_reader.hpp"
#include "gridrun/results/writer.hpp"
#include "synthetic.hpp"
#include "test_util.hpp"

using namespace gridrun::results;
using namespace gridrun::report;
using gridrun::results::testing::TempDir;
namespace fs = std::filesystem;

namespace {

class RunReader : public ::testing::Test {
 protected:
  void SetUp() override {
    run_ = dir_.path() + "/synthetic";
    gridrun::results::testing::make_synthetic_run(run_);
    folder_ = run_ + "/results";
    names_ = list_job_files(folder_);
  }
  std::vector<JobFileRead> read(Depth depth, FolderReadStats* st) {
    FolderReadOptions o;
    o.depth = depth;
    return read_job_files(folder_, names_, o, st);
  }
  TempDir dir_;
  std::string run_, folder_;
  std::vector<std::string> names_;
};

// Counts IN_OPEN events per file name of one folder, as the kernel reports them (forked children's
// opens included).
class OpenCounter {
 public:
  explicit OpenCounter(const std::string& folder) : fd_(inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
    if (fd_ < 0 || inotify_add_watch(fd_, folder.c_str(), IN_OPEN) < 0) throw std::runtime_error("inotify");
  }
  ~OpenCounter() { ::close(fd_); }
  std::map<std::string, int> take() {
    std::map<std::string, int> out;
    alignas(inotify_event) char buf[65536];
    for (;;) {
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
        if (e->len > 0) out[e->name] += 1;
        off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
      }
    }
    return out;
  }

 private:
  int fd_;
};

bool is_job_file(const std::string& name) {
  return name.size() > 3 &&
         (name.compare(name.size() - 3, 3, ".h5") == 0 || name.find(".h5.partial") != std::string::npos);
}

}  // namespace

TEST_F(RunReader, SecondReadComesFromTheIndex) {
  FolderReadStats first, second;
  auto a = read(Depth::Summary, &first);
  EXPECT_TRUE(first.index_rebuilt);  // none yet
  EXPECT_EQ(first.read, names_.size());
  EXPECT_EQ(first.from_index, 0u);
  EXPECT_TRUE(fs::exists(folder_ + "/" + kIndexName));
  auto b = read(Depth::Summary, &second);
  EXPECT_FALSE(second.index_rebuilt);
  // Everything but the live .partial (never indexed) is answered by the index, the corrupt file
  // (its verdict) included.
  EXPECT_EQ(second.read, 1u);
  EXPECT_EQ(second.from_index, names_.size() - 1);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    EXPECT_EQ(a[k].ok, b[k].ok) << a[k].name;
    EXPECT_EQ(a[k].error, b[k].error) << a[k].name;
    EXPECT_EQ(a[k].data.id, b[k].data.id);
    EXPECT_EQ(a[k].data.status, b[k].data.status);
    EXPECT_EQ(a[k].data.summary, b[k].data.summary);
    EXPECT_EQ(a[k].data.attrs, b[k].data.attrs);
    EXPECT_EQ(a[k].data.params.has_value(), b[k].data.params.has_value());
    EXPECT_EQ(a[k].data.attempts.size(), b[k].data.attempts.size());
  }
}

// FolderReadOptions::summary_keys (what `gridrun run` reconciles with): the same status and the
// named figures as a whole read, no attributes or parameters, from the index and from the files.
TEST_F(RunReader, SummaryKeysKeepOnlyThoseFigures) {
  const auto whole = read(Depth::Summary, nullptr);  // writes the index
  for (const bool indexed : {true, false}) {
    FolderReadOptions o;
    o.depth = Depth::Summary;
    o.use_index = indexed;
    o.summary_keys = {"wall_s", "no_such_figure"};
    FolderReadStats st;
    const auto some = read_job_files(folder_, names_, o, &st);
    EXPECT_EQ(indexed ? st.from_index : st.read, indexed ? names_.size() - 1 : names_.size());
    ASSERT_EQ(some.size(), whole.size());
    std::size_t with_wall = 0;
    for (std::size_t k = 0; k < some.size(); ++k) {
      EXPECT_EQ(some[k].ok, whole[k].ok) << some[k].name;
      EXPECT_EQ(some[k].data.status, whole[k].data.status) << some[k].name;
      if (!some[k].ok) continue;
      EXPECT_TRUE(some[k].data.attrs.empty()) << some[k].name;
      EXPECT_FALSE(some[k].data.params.has_value()) << some[k].name;
      const auto it = whole[k].data.summary.find("wall_s");
      if (it == whole[k].data.summary.end()) {
        EXPECT_TRUE(some[k].data.summary.empty()) << some[k].name;
        continue;
      }
      ++with_wall;
      EXPECT_EQ(some[k].data.summary, (Summary{{"wall_s", it->second}})) << some[k].name;
    }
    EXPECT_GT(with_wall, 0u);
  }
}

// `gridrun ls` reads runs without writing into them: while an IndexWritesOff lives, no index is
// written, an existing one is still used and left as it was; afterwards writing resumes.
TEST_F(RunReader, NoIndexWrittenWhileWritesAreOff) {
  const std::string index = folder_ + "/" + kIndexName;
  {
    const IndexWritesOff off;
    FolderReadStats st;
    const auto got = read(Depth::Summary, &st);
    EXPECT_EQ(st.read, names_.size());
    EXPECT_FALSE(fs::exists(index));
    EXPECT_EQ(got.size(), names_.size());
  }
  FolderReadStats st;
  read(Depth::Summary, &st);
  ASSERT_TRUE(fs::exists(index));
  const auto before = fs::last_write_time(index);
  const auto size = fs::file_size(index);
  {
    const IndexWritesOff off;
    fs::remove(folder_ + "/" + names_.front());  // a change that would rewrite the index (pruned entry)
    FolderReadOptions o;
    o.prune_index = true;
    FolderReadStats again;
    read_job_files(folder_, {names_.begin() + 1, names_.end()}, o, &again);
    EXPECT_EQ(again.from_index + again.read, names_.size() - 1);
    EXPECT_GT(again.from_index, 0u);  // the index is still read
  }
  EXPECT_EQ(fs::last_write_time(index), before);
  EXPECT_EQ(fs::file_size(index), size);
}

TEST_F(RunReader, ChangedFileIsReadAgain) {
  read(Depth::Summary, nullptr);
  // A changed file (here: rewritten with the same bytes, as a copy back would) has a new ctime.
  const std::string f = folder_ + "/cpu-r1-s0.h5";
  const std::string bytes = gridrun::results::testing::read_file(f);
  fs::remove(f);
  std::ofstream(f, std::ios::binary) << bytes;
  FolderReadStats st;
  auto got = read(Depth::Glance, &st);
  EXPECT_EQ(st.read, 2u);  // the changed file and the .partial
  for (const auto& r : got) {
    if (r.name == "cpu-r1-s0.h5") {
      EXPECT_FALSE(r.from_index);
    }
  }
}

// A large index is not written whole for a few files read again: their records are appended to
// the journal, which answers the next read (no file opened), until the journal passes its share of
// the index; then the index is written whole and the journal emptied (issue 60). Here the limits
// are lowered so that a small run takes the path a run of 100,000 jobs takes.
TEST_F(RunReader, FewChangedFilesGoToTheJournalNotAWholeIndex) {
  const IndexWriteOptions delta{0, 10.0};  // every index is "large"; the journal may grow to 10x it
  auto read_with = [&](const IndexWriteOptions& w, FolderReadStats* st) {
    ResultsFolder f(folder_, true, w);
    FolderReadOptions o;
    auto got = f.read(names_, o, st);
    f.flush();
    return got;
  };
  const auto want = read(Depth::Summary, nullptr);  // the index written whole (none before)
  const std::string index = folder_ + "/" + kIndexName, journal = folder_ + "/.gridrun-journal";
  ASSERT_TRUE(fs::exists(index));
  const std::string index_bytes = gridrun::results::testing::read_file(index);
  // A changed file (rewritten with the same bytes: a new inode and ctime) is read again...
  const std::string f = folder_ + "/cpu-r1-s0.h5";
  const std::string bytes = gridrun::results::testing::read_file(f);
  fs::remove(f);
  std::ofstream(f, std::ios::binary) << bytes;
  FolderReadStats st;
  read_with(delta, &st);
  EXPECT_EQ(st.read, 2u);  // the changed file and the .partial (never indexed)
  // ...and its record appended to the journal; the index is left as it was.
  EXPECT_EQ(gridrun::results::testing::read_file(index), index_bytes);
  ASSERT_TRUE(fs::exists(journal));
  EXPECT_GT(fs::file_size(journal), 0u);
  // The next read takes it from the journal: only the .partial is opened, the answers are a fresh
  // read's, and still nothing is written.
  FolderReadStats again;
  std::vector<JobFileRead> got;
  {
    OpenCounter counter(folder_);
    got = read_with(delta, &again);
    for (const auto& [name, n] : counter.take())
      if (is_job_file(name)) {
        EXPECT_NE(name.find(".partial"), std::string::npos) << name << " opened";
      }
  }
  EXPECT_EQ(again.read, 1u);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].ok, want[k].ok) << got[k].name;
    EXPECT_EQ(got[k].data.summary, want[k].data.summary) << got[k].name;
    EXPECT_EQ(got[k].data.status, want[k].data.status) << got[k].name;
  }
  EXPECT_EQ(gridrun::results::testing::read_file(index), index_bytes);
  // Past the journal's share (here: any journal at all), a read of another changed file writes the
  // index whole, with both files, and empties the journal.
  const std::string g = folder_ + "/cpu-r1-s1.h5";
  ASSERT_TRUE(fs::exists(g));
  const std::string gbytes = gridrun::results::testing::read_file(g);
  fs::remove(g);
  std::ofstream(g, std::ios::binary) << gbytes;
  FolderReadStats third;
  read_with(IndexWriteOptions{0, 0.0}, &third);
  EXPECT_EQ(third.read, 2u);
  EXPECT_NE(gridrun::results::testing::read_file(index), index_bytes);
  EXPECT_FALSE(fs::exists(journal));
  FolderReadStats last;
  read_with(delta, &last);
  EXPECT_EQ(last.read, 1u);  // the .partial only: both changed files are in the index now
  // A journal past its share whose records are all stale (their file changed again since) is
  // emptied by the next whole write, though none of its records was taken.
  auto rewrite = [&] {
    fs::remove(f);
    std::ofstream(f, std::ios::binary) << bytes;
  };
  rewrite();
  read_with(delta, nullptr);  // its record goes to the journal
  ASSERT_TRUE(fs::exists(journal));
  rewrite();  // the record is stale now
  FolderReadStats stale;
  read_with(IndexWriteOptions{0, 0.0}, &stale);
  EXPECT_EQ(stale.read, 2u);  // the file again (its record is of the old one) and the .partial
  EXPECT_FALSE(fs::exists(journal));
}

// A read of many files keeps what it read in the journal as it goes (FolderReadOptions::
// checkpoint_every): a command cut short before it wrote the index leaves its reads to the next,
// which opens none of those files again; the index written whole then empties the journal.
TEST_F(RunReader, ABigReadIsResumedFromTheJournal) {
  const std::string journal = folder_ + "/.gridrun-journal", index = folder_ + "/" + kIndexName;
  FolderReadOptions parts;
  parts.checkpoint_every = 2;
  auto cut_short = std::make_unique<ResultsFolder>(folder_);
  FolderReadStats first;
  const auto want = cut_short->read(names_, parts, &first);
  EXPECT_EQ(first.read, names_.size());
  // Not flushed: no index yet, but the records are in the journal.
  EXPECT_FALSE(fs::exists(index));
  ASSERT_TRUE(fs::exists(journal));
  FolderReadStats again;
  std::vector<JobFileRead> got;
  {
    OpenCounter counter(folder_);
    ResultsFolder next(folder_);
    got = next.read(names_, FolderReadOptions{}, &again);
    next.flush();
    for (const auto& [name, n] : counter.take()) {
      if (is_job_file(name) && name.find(".partial") == std::string::npos &&
          name.find("corrupt") == std::string::npos) {
        ADD_FAILURE() << name << " opened again";
      }
    }
  }
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].ok, want[k].ok) << got[k].name;
    EXPECT_EQ(got[k].data.summary, want[k].data.summary) << got[k].name;
  }
  EXPECT_TRUE(fs::exists(index));
  EXPECT_FALSE(fs::exists(journal));  // the index holds its records now
  cut_short.reset();                  // its own flush, later: the index again, no journal left
  EXPECT_TRUE(fs::exists(index));
  EXPECT_FALSE(fs::exists(journal));
}

// An index past a megabyte is written in pieces (base::AtomicFileWriter), its checksum taken
// piece by piece across boundaries that split its 8-byte words: the next reader takes every record
// from it (a wrong checksum would rebuild it from the files).
TEST_F(RunReader, AnIndexWrittenInPiecesIsReadBackWhole) {
  std::string source;
  for (const auto& r : read(Depth::Summary, nullptr))
    if (r.ok && r.name.find(".partial") == std::string::npos) source = r.path;
  ASSERT_FALSE(source.empty());
  const std::string many = dir_.path() + "/many";
  fs::create_directories(many);
  std::vector<std::string> names;
  for (int k = 0; k < 600; ++k) {
    char name[32];
    std::snprintf(name, sizeof name, "%012x.h5", 0xa0000 + k);
    fs::copy_file(source, many + "/" + name);
    names.emplace_back(name);
  }
  FolderReadStats first, second;
  {
    ResultsFolder folder(many);
    folder.read(names, FolderReadOptions{}, &first);
  }
  EXPECT_EQ(first.read, names.size());
  ASSERT_GT(fs::file_size(many + "/" + kIndexName), std::uintmax_t{1} << 20) << "one piece only";
  ResultsFolder again(many);
  const auto got = again.read(names, FolderReadOptions{}, &second);
  EXPECT_FALSE(second.index_rebuilt);
  EXPECT_EQ(second.from_index, names.size());
  EXPECT_EQ(second.read, 0u);
  ASSERT_EQ(got.size(), names.size());
  EXPECT_TRUE(got.back().ok) << got.back().error;
}

TEST_F(RunReader, DamagedOrForeignIndexIsRebuilt) {
  auto want = read(Depth::Summary, nullptr);
  const std::string index = folder_ + "/" + kIndexName;
  std::string bytes = gridrun::results::testing::read_file(index);
  for (const std::string& damaged : {bytes.substr(0, bytes.size() / 2), std::string("not an index"), [&] {
                                       std::string b = bytes;
                                       b[b.size() / 2] = static_cast<char>(b[b.size() / 2] ^ 0x10);
                                       return b;
                                     }()}) {
    std::ofstream(index, std::ios::binary | std::ios::trunc) << damaged;
    FolderReadStats st;
    auto got = read(Depth::Summary, &st);
    EXPECT_TRUE(st.index_rebuilt);
    EXPECT_EQ(st.read, names_.size());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].ok, want[k].ok);
      EXPECT_EQ(got[k].data.summary, want[k].data.summary);
    }
    FolderReadStats again;
    read(Depth::Summary, &again);
    EXPECT_FALSE(again.index_rebuilt);  // written whole again
    EXPECT_EQ(again.read, 1u);
  }
}

TEST_F(RunReader, OneVerdictAtEveryDepth) {
  for (int pass = 0; pass < 2; ++pass)  // fresh reads, then the index's verdicts
    for (Depth d : {Depth::Glance, Depth::Summary, Depth::Full}) {
      auto got = read(d, nullptr);
      for (const auto& r : got) {
        if (r.name == "corrupt000000.h5") {
          EXPECT_FALSE(r.ok);
          EXPECT_EQ(r.error.rfind(r.path + ": ", 0), 0u) << r.error;
        } else {
          EXPECT_TRUE(r.ok) << r.error;
        }
        if (r.ok && d == Depth::Full) {
          EXPECT_GT(r.data.steps.rows, 0u) << r.name;
        }
        if (r.ok && d == Depth::Glance) {
          EXPECT_TRUE(r.data.summary.empty());
        }
      }
    }
}

// Each command of the reports opens each job file at most once; with the index in place, the text
// report and collect open no finished job file at all.
TEST_F(RunReader, EveryCommandOpensEachJobFileAtMostOnce) {
  auto once = [&](const std::string& what, const std::function<void()>& command, bool cold) {
    if (cold) fs::remove(folder_ + "/" + kIndexName);
    OpenCounter counter(folder_);
    command();
    int job_opens = 0;
    for (const auto& [name, n] : counter.take()) {
      if (!is_job_file(name)) continue;
      EXPECT_LE(n, 1) << what << " opened " << name << " " << n << " times";
      if (name.find(".partial") == std::string::npos) job_opens += n;
    }
    return job_opens;
  };
  std::ostringstream out, log;
  ReportOptions ro;
  ro.input = run_;
  for (bool cold : {true, false}) {
    const int text = once(
        "report", [&] { write_report(ro, *make_reporter("table"), out, log); }, cold);
    const int coll = once(
        "collect",
        [&] {
          collect(CollectOptions{run_, true}, log);
        },
        cold);
    ReportOptions ho = ro;
    ho.output = dir_.path() + "/r.html";
    once(
        "report --html", [&] { write_report(ho, *make_reporter("html"), out, log); }, cold);
    once(
        "report --profile", [&] { write_report(ro, *make_reporter("profile"), out, log); }, cold);
    if (cold) {
      EXPECT_GT(text, 0);
    } else {
      EXPECT_EQ(text, 0);
      EXPECT_EQ(coll, 0);
    }
  }
}

namespace {

// Figures as text, so that two NaNs compare equal.
std::string figures_text(const Summary& s) {
  std::ostringstream os;
  os.precision(17);
  for (const auto& [k, v] : s) os << k << "=" << v << " ";
  return os.str();
}

// A run directory whose jobs were written by JobWriter (each leaves its record in the journal):
// jobs `first` .. first+n-1.
std::vector<std::string> write_journaled_jobs(const std::string& run, int n, int first = 0) {
  fs::create_directories(run + "/jobs");  // a run directory (RunDir::holds_run)
  fs::create_directories(run + "/results");
  std::vector<std::string> names;
  for (int k = first; k < first + n; ++k) {
    JobFileInfo i;
    i.id = "job" + std::to_string(k);
    i.run = "journal";
    i.params = gridrun::jobs::job_params_from_json("{\"lr\":0.1,\"seed\":" + std::to_string(k) + "}");
    i.ranks = 1;
    i.flush_interval_s = 0;
    auto w = JobWriter::create(run + "/results", i);
    StepRow s;
    s.rank_step_s = {0.01};
    for (int t = 1; t <= 8; ++t) {
      s.step = t;
      s.wall_s = 0.01 * t;
      s.loss = 1.0 / t + k;
      s.step_s = 0.01;
      s.samples_per_s = 100;
      w->append_step(s);
    }
    w->finish(Status::Completed, "", Summary{{"final_test_acc", 0.5 + 0.1 * k}});
    names.push_back(i.id + ".h5");
  }
  return names;
}

}  // namespace

// The records JobWriter leaves in the journal answer the first read of a run's files (no job file
// opened), the same as reading the files; the index then takes the journal's place.
TEST(RunReaderJournal, AnswersTheFirstReadAsTheFilesWould) {
  TempDir dir;
  const std::string run = dir.path() + "/run", folder = run + "/results";
  const std::vector<std::string> names = write_journaled_jobs(run, 3);
  ASSERT_TRUE(fs::exists(folder + "/.gridrun-journal"));
  FolderReadOptions fresh;
  fresh.use_index = false;
  const auto files = read_job_files(folder, names, fresh);
  OpenCounter opens(folder);
  FolderReadStats st;
  const auto got = read_job_files(folder, names, FolderReadOptions{}, &st);
  EXPECT_EQ(st.read, 0u);
  EXPECT_EQ(st.from_index, 3u);
  for (const auto& [name, n] : opens.take()) EXPECT_NE(name.rfind("job", 0), 0u) << name << " opened " << n;
  ASSERT_EQ(got.size(), files.size());
  for (std::size_t k = 0; k < got.size(); ++k) {
    ASSERT_TRUE(got[k].ok && files[k].ok) << got[k].error << files[k].error;
    EXPECT_EQ(got[k].data.id, files[k].data.id);
    EXPECT_EQ(got[k].data.status, files[k].data.status);
    EXPECT_EQ(figures_text(got[k].data.summary), figures_text(files[k].data.summary));  // NaN == NaN
    EXPECT_EQ(got[k].data.attrs, files[k].data.attrs);
    EXPECT_EQ(got[k].data.params, files[k].data.params);
    EXPECT_EQ(got[k].data.end_time, files[k].data.end_time);
    EXPECT_EQ(got[k].data.partial, files[k].data.partial);
    EXPECT_EQ(got[k].data.attempts.size(), files[k].data.attempts.size());
  }
  EXPECT_DOUBLE_EQ(got[2].data.summary.at("final_test_acc"), 0.7);
  // Its records are in the index now: the journal is emptied, the next read is the index's.
  EXPECT_FALSE(fs::exists(folder + "/.gridrun-journal"));
  EXPECT_TRUE(fs::exists(folder + "/" + kIndexName));
  read_job_files(folder, names, FolderReadOptions{}, &st);
  EXPECT_EQ(st.read, 0u);
  EXPECT_EQ(st.from_index, 3u);
}

// A record is trusted only for the file its writer saw: a file changed since, and a damaged or
// torn frame, are read from the file; neither is fatal.
TEST(RunReaderJournal, ChangedFilesAndDamagedFramesAreReadAgain) {
  TempDir dir;
  const std::string run = dir.path() + "/run", folder = run + "/results";
  const std::vector<std::string> names = write_journaled_jobs(run, 3);
  const std::string journal = folder + "/.gridrun-journal";
  // job0 changed after its record (a byte rewritten in place: its ctime moves), job1's frame
  // damaged (one byte flipped in its middle), and a torn frame at the end.
  {
    std::fstream f(folder + "/job0.h5", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(0, std::ios::end);
    f << 'x';
  }
  std::string bytes;
  {
    std::ifstream in(journal, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::size_t job1 = bytes.find("job1.h5");
  ASSERT_NE(job1, std::string::npos);
  bytes[job1 + 200] = static_cast<char>(bytes[job1 + 200] ^ 0x5a);
  bytes += bytes.substr(0, 100);
  {
    std::ofstream out(journal, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  FolderReadStats st;
  const auto got = read_job_files(folder, names, FolderReadOptions{}, &st);
  EXPECT_EQ(st.from_index, 1u);  // job2 only
  EXPECT_EQ(st.read, 2u);
  EXPECT_TRUE(got[1].ok) << got[1].error;
  EXPECT_TRUE(got[2].ok) << got[2].error;
  EXPECT_EQ(got[1].data.id, "job1");
}

// A record appended while a command reads the journal (a job that ends meanwhile) is put back when
// that command empties it, and answers the next command.
TEST(RunReaderJournal, RecordsAppendedMeanwhileArePutBack) {
  TempDir dir;
  const std::string run = dir.path() + "/run", folder = run + "/results";
  const std::vector<std::string> names = write_journaled_jobs(run, 2);
  {
    ResultsFolder f(folder);
    FolderReadStats st;
    f.read(names, FolderReadOptions{}, &st);
    EXPECT_EQ(st.from_index, 2u);
    write_journaled_jobs(run, 1, 2);  // job2 ends while the index is not written yet
  }                                   // flush: the index written, the journal emptied but for job2's record
  ASSERT_TRUE(fs::exists(folder + "/.gridrun-journal"));
  FolderReadStats st;
  const auto got = read_job_files(folder, {"job0.h5", "job1.h5", "job2.h5"}, FolderReadOptions{}, &st);
  EXPECT_EQ(st.read, 0u);
  EXPECT_EQ(st.from_index, 3u);
  EXPECT_TRUE(got[2].ok) << got[2].error;
  EXPECT_FALSE(fs::exists(folder + "/.gridrun-journal"));
}

// A command that reads some of the files takes their records into the index and leaves the others'
// in the journal, for the command that reads those.
TEST(RunReaderJournal, RecordsOfFilesNotAskedForStay) {
  TempDir dir;
  const std::string run = dir.path() + "/run", folder = run + "/results";
  write_journaled_jobs(run, 3);
  FolderReadStats st;
  read_job_files(folder, {"job0.h5"}, FolderReadOptions{}, &st);
  EXPECT_EQ(st.from_index, 1u);
  ASSERT_TRUE(fs::exists(folder + "/.gridrun-journal"));
  const auto got = read_job_files(folder, {"job1.h5", "job2.h5"}, FolderReadOptions{}, &st);
  EXPECT_EQ(st.read, 0u);
  EXPECT_EQ(st.from_index, 2u);
  EXPECT_TRUE(got[0].ok && got[1].ok);
  EXPECT_FALSE(fs::exists(folder + "/.gridrun-journal"));
}

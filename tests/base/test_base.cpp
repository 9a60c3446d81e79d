// Unit tests of the base layer: each helper here is used by several modules, so a regression
// would show up far away from its cause.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/json_checked.hpp"
#include "gridrun/base/net.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/stats.hpp"
#include "gridrun/base/table.hpp"
#include "gridrun/base/tee.hpp"
#include "gridrun/base/text.hpp"

namespace fs = std::filesystem;
using namespace gridrun::base;

namespace {
// The files these tests write and read back: small, never links.
constexpr FileKind kTestFile{"test file", kinds::kMiB, false};
}  // namespace

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
}  // namespace

TEST(Json, ParseErrorNamesOriginLineAndColumn) {
  try {
    parse_json("{\n  \"a\": 1,\n  \"b\": tru\n}", "job.json");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.json:3:", 0), 0u) << e.what();
  }
}

TEST(Json, KeepsKeyOrderAndTypedAccess) {
  const Json j = parse_json(R"({"z": 1, "a": "x", "f": 2.5, "b": true})", "t");
  std::string keys;
  for (const auto& kv : j.items()) keys += kv.key();
  EXPECT_EQ(keys, "zafb");
  EXPECT_EQ(get_int(j, "z"), 1);
  EXPECT_EQ(get_string(j, "a"), "x");
  EXPECT_DOUBLE_EQ(get_number(j, "f"), 2.5);
  EXPECT_TRUE(get_bool(j, "b"));
  EXPECT_EQ(get_string(j, "z", "fallback"), "fallback");  // mistyped -> fallback, no throw
  EXPECT_EQ(get_int(j, "missing", 7), 7);
}

// Values nlohmann can parse but not hold, found by fuzzing job files and state.json (issue 24):
// clear errors or absent values, never std::terminate or undefined behaviour.
// TeeStream: what is written goes through at once and is kept, up to its bound.
TEST(Tee, WritesThroughAndKeeps) {
  std::ostringstream through;
  TeeStream tee(through, 16);
  tee << "run x: " << 3 << " jobs\n" << std::flush;
  EXPECT_EQ(through.str(), "run x: 3 jobs\n");
  tee.put('!');
  EXPECT_EQ(tee.kept(), "run x: 3 jobs\n!");
  EXPECT_TRUE(tee.whole());
  EXPECT_EQ(through.str(), tee.kept());
  // Past its bound it keeps nothing and says so; the output still goes through whole.
  tee << "a longer line";
  EXPECT_FALSE(tee.whole());
  EXPECT_EQ(tee.kept(), "");
  EXPECT_EQ(through.str(), "run x: 3 jobs\n!a longer line");
}

TEST(Json, SkippedRootMembersAreCheckedButNotKept) {
  const std::string text =
      R"({"name": "r", "jobs": {"a": {"x": [1, {"y": null}], "z": "s"}, "b": 2}, "phases": {"jobs": [1]},)"
      R"( "list": [3], "jobs2": 7})";
  JsonParseOptions o;
  o.skip_members = {"jobs"};
  const Json j = parse_json(text, "state.json", o);
  EXPECT_FALSE(j.contains("jobs"));
  // Only the root's member: a nested "jobs" is kept, and so is everything after the skipped value.
  EXPECT_EQ(j.at("phases").at("jobs"), Json::array({1}));
  EXPECT_EQ(j.at("name"), "r");
  EXPECT_EQ(j.at("list"), Json::array({3}));
  EXPECT_EQ(j.at("jobs2"), 7);
  o.skip_members = {"name"};  // a scalar member
  EXPECT_FALSE(parse_json(text, "state.json", o).contains("name"));
  EXPECT_EQ(parse_json(text, "state.json", o).at("jobs").at("b"), 2);
  // A skipped member is still parsed: its syntax errors are errors.
  o.skip_members = {"jobs"};
  EXPECT_THROW(parse_json(R"({"jobs": {"a": [1,]}, "b": 1})", "state.json", o), std::runtime_error);
}

// A streamed member's members reach the callback one by one, each whole, in file order (a
// repeated key again), and the result holds the member as an empty object; a nested member of the
// same name and one that is not an object are parsed as usual (issue 60: state.json's jobs).
TEST(Json, StreamedMemberHandsOverEachMemberWhole) {
  const std::string text =
      R"({"name": "r", "jobs": {"a": {"x": [1, {"y": null}], "z": "s"}, "b": 2, "c": [3, [4]], "a": "again"},)"
      R"( "phases": {"jobs": {"p": 1}}, "list": [3]})";
  JsonParseOptions o;
  std::vector<std::pair<std::string, Json>> got;
  o.stream_member = "jobs";
  o.on_member = [&](std::string& k, Json& v) { got.emplace_back(k, std::move(v)); };
  const Json j = parse_json(text, "state.json", o);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].first, "a");
  EXPECT_EQ(got[0].second, Json::parse(R"({"x": [1, {"y": null}], "z": "s"})"));
  EXPECT_EQ(got[1], (std::pair<std::string, Json>{"b", 2}));
  EXPECT_EQ(got[2].second, Json::parse("[3, [4]]"));
  EXPECT_EQ(got[3], (std::pair<std::string, Json>{"a", "again"}));
  EXPECT_EQ(j.at("jobs"), Json::object());
  EXPECT_EQ(j.at("phases").at("jobs").at("p"), 1);
  EXPECT_EQ(j.at("name"), "r");
  EXPECT_EQ(j.at("list"), Json::array({3}));
  got.clear();
  EXPECT_EQ(parse_json(R"({"jobs": [1, {"a": 2}]})", "state.json", o).at("jobs"),
            Json::parse(R"([1, {"a": 2}])"));
  EXPECT_TRUE(got.empty());
  // A syntax error inside is still one (the members before it were handed over).
  EXPECT_THROW(parse_json(R"({"jobs": {"a": 1, "b": [1,]}})", "state.json", o), std::runtime_error);
}

TEST(Json, OverflowsAreClearErrorsOrAbsent) {
  try {
    parse_json(R"({"a": 1e999})", "job.json");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("job.json: invalid JSON:", 0), 0u) << e.what();
  }
  const Json j = parse_json(R"({"f": 1e300, "u": 18446744073709551615, "ok": 3.0})", "t");
  EXPECT_EQ(get_int(j, "f", -1), -1);
  EXPECT_EQ(get_int(j, "u", -1), -1);
  EXPECT_EQ(get_int(j, "ok", -1), 3);
}

// Self-checking files (issue 45): every single-bit flip of a checked file is either detected
// (throws, naming the file) or leaves the parsed value exactly as written; a file without a
// checksum (an older gridrun's) is read as it is.
TEST(Json, CheckedTextDetectsEveryBitFlip) {
  Json j = {{"name", "r"}, {"step_s", 0.25}, {"jobs", {{"a", {{"state", "completed"}}}}}};
  for (int indent : {1, 2}) {
    const std::string text = checked_json_text(j, indent);
    bool checked = false;
    EXPECT_EQ(parse_checked_json(text, "x.json", &checked), j);
    EXPECT_TRUE(checked);
    EXPECT_EQ(parse_json(text, "x.json")["checksum"].get<std::string>().substr(0, 7), "sha256:");
    int detected = 0, same = 0;
    for (std::size_t i = 0; i < text.size(); ++i)
      for (int bit = 0; bit < 8; ++bit) {
        std::string d = text;
        d[i] = static_cast<char>(d[i] ^ (1 << bit));
        try {
          EXPECT_EQ(parse_checked_json(d, "x.json"), j)
              << "byte " << i << " bit " << bit << " changed a value silently";
          ++same;
        } catch (const std::runtime_error& e) {
          EXPECT_EQ(std::string(e.what()).rfind("x.json", 0), 0U) << e.what();
          ++detected;
        }
      }
    EXPECT_GT(detected, 0);
    EXPECT_EQ(detected + same, static_cast<int>(text.size()) * 8);
  }
  bool checked = true;
  EXPECT_EQ(parse_checked_json(R"({"a": 1})", "old.json", &checked)["a"], 1);
  EXPECT_FALSE(checked);
  parse_checked_json(checked_json_text(Json::object(), 1), "e", &checked);
  EXPECT_TRUE(checked);
}

// The streaming writers (a status of 100,000 jobs) read back as nlohmann wrote the same values.
TEST(Json, StreamingWritersReadBackAsTheTreeWrites) {
  std::string out;
  for (double v : {0.1, 12.5, 1e300, -3e-9, 0.0, 1234567.125}) {
    out.clear();
    append_json_double(out, v);
    EXPECT_EQ(parse_json(out, "t").get<double>(), v) << out;
  }
  for (double v : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    out.clear();
    append_json_double(out, v);
    EXPECT_EQ(out, "null");
  }
  out.clear();
  append_json_string(out, "a\"b\n");
  EXPECT_EQ(out, Json("a\"b\n").dump());
  out.clear();
  append_json_string(out, std::string("bad \xff byte"));
  EXPECT_EQ(out, Json(std::string("bad \xff byte")).dump(-1, ' ', false, Json::error_handler_t::replace));
  EXPECT_EQ(parse_json(out, "t").get<std::string>(), "bad \xef\xbf\xbd byte");
}

TEST(Json, EscapesEveryControlCharacter) {
  EXPECT_EQ(json_quote("a\"b\\c\n\t\x01"), "\"a\\\"b\\\\c\\n\\t\\u0001\"");
  EXPECT_EQ(parse_json(json_quote("a\"b\\c\n\t\x01 é"), "t").get<std::string>(), "a\"b\\c\n\t\x01 é");
}

TEST(Fs, AbsolutePathPutsTheWorkingDirectoryInFront) {
  const std::string cwd = std::filesystem::current_path().string();
  EXPECT_EQ(absolute_path("runs/x"), cwd + "/runs/x");
  EXPECT_EQ(absolute_path("/abs/runs"), "/abs/runs");
  EXPECT_EQ(absolute_path(""), "");
}

TEST(Fs, AtomicWriteReplacesWholeAndLeavesNoTemporary) {
  TempDir d;
  const std::string p = (d.path / "state.json").string();
  write_file_atomic(p, "old");
  write_file_atomic(p, "new content");
  EXPECT_EQ(read_file(p, kTestFile), "new content");
  int n = 0;
  for (const auto& e : fs::directory_iterator(d.path)) (void)e, ++n;
  EXPECT_EQ(n, 1);
}

TEST(Fs, AtomicFileWriterRenamesOnCommitOnlyAndRemovesItsTemporary) {
  TempDir d;
  const std::string p = (d.path / "index").string();
  write_file_atomic(p, "old");
  {
    AtomicFileWriter w(p);
    w.append("half ");
    // Destroyed uncommitted (an exception on the way): the old file stays, no temporary is left.
  }
  EXPECT_EQ(read_file(p, kTestFile), "old");
  {
    AtomicFileWriter w(p);
    w.append("new ");
    w.append("content");
    EXPECT_EQ(read_file(p, kTestFile), "old") << "replaced before commit";
    w.commit();
  }
  EXPECT_EQ(read_file(p, kTestFile), "new content");
  int n = 0;
  for (const auto& e : fs::directory_iterator(d.path)) (void)e, ++n;
  EXPECT_EQ(n, 1);
}

TEST(Fs, ListFolderNamesEveryEntryButDots) {
  TempDir d;
  write_file_atomic((d.path / "a.h5").string(), "x");
  fs::create_directory(d.path / "sub");
  auto names = list_folder(d.path.string());
  ASSERT_TRUE(names.has_value());
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"a.h5", "sub"}));
  int err = 0;
  EXPECT_FALSE(list_folder((d.path / "absent").string(), &err).has_value());
  EXPECT_EQ(err, ENOENT);
}

TEST(Fs, AtomicWriteFailureNamesPathAndKeepsOldFile) {
  TempDir d;
  const std::string p = (d.path / "f").string();
  write_file_atomic(p, "old");
  ::chmod(d.path.c_str(), 0500);
  if (::access(d.path.c_str(), W_OK) == 0) {  // root ignores the mode: use a file-size limit instead
    ::chmod(d.path.c_str(), 0700);
    struct rlimit old {
    }, lim{};
    ::getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 2;
    ::signal(SIGXFSZ, SIG_IGN);
    ::setrlimit(RLIMIT_FSIZE, &lim);
    EXPECT_THROW(
        {
          try {
            write_file_atomic(p, "longer than two bytes");
          } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(p + ": cannot write"), std::string::npos) << e.what();
            throw;
          }
        },
        std::runtime_error);
    ::setrlimit(RLIMIT_FSIZE, &old);
  } else {
    EXPECT_THROW(write_file_atomic(p, "new"), std::runtime_error);
    ::chmod(d.path.c_str(), 0700);
  }
  EXPECT_EQ(read_file(p, kTestFile), "old");
  int n = 0;
  for (const auto& e : fs::directory_iterator(d.path)) (void)e, ++n;
  EXPECT_EQ(n, 1) << "a temporary was left behind";
}

TEST(Fs, ReadMissingFileNamesIt) {
  EXPECT_FALSE(try_read_file("/nonexistent/x", kTestFile).has_value());
  try {
    read_file("/nonexistent/x", kTestFile);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "/nonexistent/x: cannot read: No such file or directory");
  }
}

TEST(Fs, QuarantineNeverOverwritesAnEarlierOne) {
  TempDir d;
  const std::string p = (d.path / "r.h5").string();
  std::ofstream(p) << "1";
  EXPECT_EQ(quarantine(p), p + ".damaged");
  std::ofstream(p) << "2";
  EXPECT_EQ(quarantine(p), p + ".damaged.2");
  EXPECT_EQ(read_file(p + ".damaged", kTestFile), "1");
  EXPECT_EQ(quarantine(p), "");  // gone: nothing to move
}

TEST(Text, CsvAndShellQuoting) {
  EXPECT_EQ(csv_quote("plain"), "plain");
  EXPECT_EQ(csv_quote("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_quote("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(shell_quote("a/b.c"), "a/b.c");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

TEST(Text, TimeDurationSplitTrim) {
  EXPECT_EQ(iso_time(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(format_duration(42), "42s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(7800), "2h10m");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(trim("  x y \n"), "x y");
  EXPECT_TRUE(starts_with("gridrun", "grid"));
  EXPECT_EQ(printable_line("bad\n\x01\xff end"), "bad ?? end");
}

// Issue 58: "1 nodes" in simulate's header.
TEST(Text, CountedIsSingularForOneOnly) {
  EXPECT_EQ(counted("node", 1), "1 node");
  EXPECT_EQ(counted("node", 0), "0 nodes");
  EXPECT_EQ(counted("job", 16), "16 jobs");
}

TEST(Text, IsUtf8AcceptsWellFormedTextOnly) {
  EXPECT_TRUE(is_utf8(""));
  EXPECT_TRUE(is_utf8("/runs/plain path"));
  EXPECT_TRUE(is_utf8("/runs/r\u00e9sum\u00e9/\u6f22\u5b57/\U0001F600"));  // 2, 3 and 4 bytes
  EXPECT_FALSE(is_utf8("/runs/latin1-\xe9t\xe9"));                         // ISO 8859-1 bytes
  EXPECT_FALSE(is_utf8("cut \xe6\xbc"));                                   // a sequence cut short
  EXPECT_FALSE(is_utf8("\x80 first"));                                     // a continuation byte first
  EXPECT_FALSE(is_utf8("\xc0\xaf"));                                       // overlong '/'
  EXPECT_FALSE(is_utf8("\xed\xa0\x80"));                                   // a surrogate (U+D800)
  EXPECT_FALSE(is_utf8("\xf4\x90\x80\x80"));                               // above U+10FFFF
  EXPECT_FALSE(is_utf8("\xff"));
}

TEST(Text, WrapWordsBreaksBeforeTheWidthAndIndentsContinuations) {
  EXPECT_EQ(wrap_words("lead:", {"a,", "b,", "c"}, 80, "  "), (std::vector<std::string>{"lead: a, b, c"}));
  // "lead: aaaa" is 10 bytes: the next word would make 15 > 12.
  EXPECT_EQ(wrap_words("lead:", {"aaaa", "bbbb", "cc"}, 12, "  "),
            (std::vector<std::string>{"lead: aaaa", "  bbbb cc"}));
  EXPECT_EQ(wrap_words("x", {"longer-than-width"}, 5, "> "),
            (std::vector<std::string>{"x", "> longer-than-width"}));
  EXPECT_EQ(wrap_words("only", {}, 3, ""), (std::vector<std::string>{"only"}));
}

// Fit::Drop with a shrinkable column (status's reasons): its long cells are cut to what the other
// columns leave, ending in "…", only in the table; CSV keeps them whole.
TEST(Table, DropFitCutsTheShrinkColumnWithAnEllipsis) {
  gridrun::base::Table t;
  t.title = "Jobs";
  t.columns = {"id", "node", "reason"};
  const std::string reason = "missing data file /data/cifar10/data_batch_1.bin (expected the binary version)";
  t.rows = {{gridrun::base::text_cell("a1"), gridrun::base::text_cell("node-one"),
             gridrun::base::text_cell(reason)},
            {gridrun::base::text_cell("b2"), gridrun::base::text_cell("n2"), gridrun::base::text_cell("-")}};
  t.drop_order = {1};
  t.shrink_column = 2;
  t.shrink_min = 20;
  gridrun::base::TableStyle style;
  style.fit = gridrun::base::TableStyle::Fit::Drop;
  style.heading = false;
  style.width = 50;
  std::ostringstream out;
  gridrun::base::render_tables({t}, style, out);
  // id (2) + node (8) + 2 separators leave 36 columns: 35 of the reason and the ellipsis.
  EXPECT_EQ(out.str(),
            "id  node      reason\n"
            "a1  node-one  " +
                reason.substr(0, 35) +
                "…\n"
                "b2  n2        -\n");
  // Too narrow for the minimum beside node: node is dropped first, the reason keeps the rest.
  style.width = 28;
  out.str("");
  gridrun::base::render_tables({t}, style, out);
  EXPECT_EQ(out.str(),
            "id  reason\n"
            "a1  " +
                reason.substr(0, 23) +
                "…\n"
                "b2  -\n"
                "(not shown to fit 28 columns:\n"
                "  node, use --format csv)\n");
  // A short reason is not cut, and the machine formats have every reason whole.
  style.width = 200;
  out.str("");
  gridrun::base::render_tables({t}, style, out);
  EXPECT_NE(out.str().find(reason + "\n"), std::string::npos) << out.str();
  style.format = "csv";
  out.str("");
  gridrun::base::render_tables({t}, style, out);
  EXPECT_NE(out.str().find(reason), std::string::npos) << out.str();
}

TEST(Spawn, CapturesOutputsAndExitCodeSeparately) {
  const auto r = run_captured({"sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(r.exit_code, 3);
  const auto missing = run_captured({"/nonexistent/program"});
  EXPECT_FALSE(missing.started);
}

TEST(Spawn, CapturedChildGetsItsLimitsEnvironmentAndTimeout) {
  // The model check's bounds (CaptureOptions): RLIMIT_AS set in the child before exec (`ulimit -v`
  // reads it, in KiB), the environment entries, and a child killed past its timeout (a 300 s sleep
  // against 0.2 s: no machine is that slow).
  CaptureOptions o;
  o.max_address_space = std::uint64_t{256} << 20;
  o.env_set = {"GRIDRUN_SPAWN_TEST=yes"};
  auto r = run_captured({"sh", "-c", "ulimit -v; echo $GRIDRUN_SPAWN_TEST"}, o);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.out, "262144\nyes\n");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(run_captured({"/nonexistent/program"}, o).started);  // exec's error, reported
  CaptureOptions t;
  t.timeout_s = 0.2;
  r = run_captured({"sleep", "300"}, t);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
}

TEST(Spawn, ChildInItsOwnGroupIsKilledWithItsChildrenOnDestruction) {
  TempDir d;
  const std::string pidfile = (d.path / "grandchild").string();
  int grandchild = 0;
  {
    SpawnOptions o;
    o.argv = {"sh", "-c",
              "sleep 300 & echo $! > " + pidfile + ".tmp; mv " + pidfile + ".tmp " + pidfile + "; wait"};
    o.new_process_group = true;
    o.reset_signals = true;
    Child c = spawn(o);
    // Wait for the grandchild's pid file (written by rename: complete when it exists).
    while (!try_read_file(pidfile, kTestFile)) {
      if (c.try_wait()) FAIL() << "shell ended early";
      ::usleep(1000);
    }
    grandchild = std::stoi(read_file(pidfile, kTestFile));
    EXPECT_EQ(::kill(grandchild, 0), 0);
  }  // destructor: SIGKILL to the group
  // The grandchild is re-parented (to init or a subreaper, which may not reap it at once): it is
  // dead when it is gone or a zombie. SIGKILL is delivered before kill() returns for a process
  // that is not in uninterruptible sleep, so this holds at once; the loop only covers the exit path.
  auto alive = [&] {
    const auto stat = try_read_file("/proc/" + std::to_string(grandchild) + "/stat", kinds::kProcFile);
    if (!stat) return false;
    const auto rp = stat->rfind(')');
    return rp != std::string::npos && rp + 2 < stat->size() && (*stat)[rp + 2] != 'Z' &&
           (*stat)[rp + 2] != 'X';
  };
  for (int i = 0; i < 30000 && alive(); ++i) ::usleep(1000);
  EXPECT_FALSE(alive());
}

TEST(Spawn, EnvironmentEntriesAreReplaced) {
  TempDir d;
  const std::string out = (d.path / "o").string();
  SpawnOptions o;
  o.argv = {"sh", "-c", "echo $GRIDRUN_T"};
  o.env_set = {"GRIDRUN_T=two"};
  o.stdout_path = out;
  ::setenv("GRIDRUN_T", "one", 1);
  Child c = spawn(o);
  EXPECT_EQ(c.wait(), 0);
  EXPECT_EQ(read_file(out, kTestFile), "two\n");
}

// run_isolated: what a crash, an exception, a hang and a clean run each report, and the parent
// unharmed by all of them (the crash is a real SIGSEGV, as libhdf5's on a bit-flipped file).
TEST(Spawn, IsolatedRunSurvivesCrashExceptionAndHang) {
  auto ok = run_isolated([] { return std::string(); }, 10);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.signal, 0);
  auto msg = run_isolated([] { return std::string("not a gridrun job file"); }, 10);
  EXPECT_FALSE(msg.ok);
  EXPECT_EQ(msg.message, "not a gridrun job file");
  auto thrown = run_isolated([]() -> std::string { throw std::runtime_error("bad row count"); }, 10);
  EXPECT_FALSE(thrown.ok);
  EXPECT_EQ(thrown.message, "bad row count");
  // The caller's own SIGSEGV handler (as AddressSanitizer installs one, which reports and exits 1)
  // must not turn the copy's crash into an exit code.
  void (*const exit3)(int) = [](int) { ::_exit(3); };
  auto* const before = std::signal(SIGSEGV, exit3);
  auto crash = run_isolated(
      [] {
        std::raise(SIGSEGV);
        return std::string();
      },
      10);
  std::signal(SIGSEGV, before);
  EXPECT_FALSE(crash.ok);
  EXPECT_EQ(crash.signal, SIGSEGV);
  EXPECT_NE(crash.message.find("signal 11"), std::string::npos) << crash.message;
  auto abort_free = run_isolated(
      [] {
        std::abort();
        return std::string();
      },
      10);
  EXPECT_EQ(abort_free.signal, SIGABRT);
  // A hang is cut at the timeout and the copy is gone (pause() never returns on its own).
  auto hang = run_isolated(
      [] {
        for (;;) ::pause();
        return std::string();
      },
      0.3);
  EXPECT_FALSE(hang.ok);
  EXPECT_TRUE(hang.timed_out);
}

// run_isolated_each: one copy for many items; a crash or a hang costs its own item only, the items
// before it keep their results and a new copy goes on with the next one.
// A pool of copies: each works its own contiguous range at the same time; a crash or a hang in one
// range costs that item only, the other ranges go on, and the results keep the items' order.
TEST(Spawn, IsolatedEachPoolKeepsOrderAndIsolatesPerRange) {
  auto got = run_isolated_each(
      12,
      [](std::size_t k) -> std::string {
        if (k == 1) std::raise(SIGSEGV);
        if (k == 6)
          for (;;) ::pause();
        return "item " + std::to_string(k) + " pid " + std::to_string(::getpid());
      },
      0.5, 3);
  ASSERT_EQ(got.size(), 12u);
  std::set<std::string> pids;
  for (std::size_t k = 0; k < got.size(); ++k) {
    if (k == 1 || k == 6) continue;
    ASSERT_TRUE(got[k].ok) << k << ": " << got[k].message;
    EXPECT_EQ(got[k].message.rfind("item " + std::to_string(k) + " ", 0), 0u) << got[k].message;
    pids.insert(got[k].message.substr(got[k].message.find("pid")));
  }
  EXPECT_EQ(got[1].signal, SIGSEGV);
  EXPECT_TRUE(got[6].timed_out);
  // Three ranges, and a new copy after the crash and after the hang: five copies in all.
  EXPECT_EQ(pids.size(), 5u);
}

TEST(Spawn, IsolatedEachIsolatesOneItemAndGoesOn) {
  auto got = run_isolated_each(
      6,
      [](std::size_t k) -> std::string {
        if (k == 2) std::raise(SIGSEGV);
        if (k == 3) throw std::runtime_error("bad row count");
        if (k == 4)
          for (;;) ::pause();
        return "item " + std::to_string(k) + " pid " + std::to_string(::getpid());
      },
      0.5);
  ASSERT_EQ(got.size(), 6u);
  EXPECT_TRUE(got[0].ok);
  EXPECT_TRUE(got[1].ok);
  EXPECT_EQ(got[0].message.substr(0, 6), "item 0");
  // Items 0 and 1 ran in the same copy (one fork for both), not in this process.
  EXPECT_EQ(got[0].message.substr(got[0].message.find("pid")),
            got[1].message.substr(got[1].message.find("pid")));
  EXPECT_EQ(got[0].message.find("pid " + std::to_string(::getpid())), std::string::npos);
  EXPECT_FALSE(got[2].ok);
  EXPECT_EQ(got[2].signal, SIGSEGV);
  EXPECT_FALSE(got[3].ok);
  EXPECT_EQ(got[3].signal, 0);
  EXPECT_EQ(got[3].message, "bad row count");
  EXPECT_FALSE(got[4].ok);
  EXPECT_TRUE(got[4].timed_out);
  EXPECT_TRUE(got[4].no_answer);
  EXPECT_TRUE(got[2].no_answer);
  EXPECT_FALSE(got[3].no_answer);  // an exception is an answer
  EXPECT_TRUE(got[5].ok);
  EXPECT_EQ(got[5].message.substr(0, 6), "item 5");
  // An exit from inside fn (a sanitizer's report, a library's exit()) is no answer either.
  auto exited = run_isolated_each(
      2, [](std::size_t k) -> std::string { return k == 0 ? (::_exit(1), std::string()) : "next"; }, 10);
  EXPECT_FALSE(exited[0].ok);
  EXPECT_TRUE(exited[0].no_answer);
  EXPECT_EQ(exited[0].message, "exited with code 1 before it finished");
  EXPECT_TRUE(exited[1].ok);
  // Large results come back whole (more than a pipe buffer each).
  auto big = run_isolated_each(
      3, [](std::size_t k) { return std::string(300000 + k, static_cast<char>('a' + k)); }, 10);
  for (std::size_t k = 0; k < 3; ++k) {
    EXPECT_TRUE(big[k].ok);
    EXPECT_EQ(big[k].message, std::string(300000 + k, static_cast<char>('a' + k)));
  }
  EXPECT_TRUE(run_isolated_each(
                  0, [](std::size_t) { return std::string(); }, 1)
                  .empty());
}

TEST(Host, FactsAreReadable) {
  EXPECT_FALSE(hostname().empty());
  EXPECT_FALSE(cpu_model().empty());
  EXPECT_EQ(comm_of(999999999), "");
  EXPECT_TRUE(children_of(999999999).empty());
  Child c = spawn({{"sleep", "30"}, {}, "", "", false, false, false, false, {}});
  EXPECT_EQ(children_of(::getpid()), std::vector<int>{c.pid()});
  EXPECT_EQ(comm_of(c.pid()), "sleep");
}

// own_processes_with_env: a process is found by its environment only (whole entries, every one
// asked for), of our own user only; arguments naming the mark count for nothing.
TEST(Host, OwnProcessesAreFoundByTheirEnvironment) {
  const std::string mark = "gridrun-test-mark-" + std::to_string(::getpid());
  const std::string entry = "GRIDRUN_TEST_MARK=" + mark;
  TempDir d;
  ::chmod(d.path.c_str(), 0755);  // the other user's sh below writes to the FIFO too
  // Each sh says it runs through a FIFO (open blocks until it does: no sleeps), after it started
  // its sleep: the processes that carry the entry are all there before the first look (the sleep
  // started after the "up" made two looks count 1 and 2 processes). "wait" keeps sh itself running.
  const std::string fifo = (d.path / "ready").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  ::chmod(fifo.c_str(), 0666);
  const std::string script = "sleep 30 & echo up > '" + fifo + "'; wait; :";
  // Each sh leads its own process group, so that its sleep dies with it at the end of the test.
  std::vector<Child> shells;
  auto start = [&](std::vector<std::string> argv, std::vector<std::string> env) {
    shells.push_back(spawn({std::move(argv), std::move(env), "", "", true, false, false, false, {}}));
    return shells.back().pid();
  };
  const int ours = start({"sh", "-c", script}, {entry, "GRIDRUN_TEST_SECOND=1"});
  const int other_value = start({"sh", "-c", script}, {entry + "b"});
  const int longer_name = start({"sh", "-c", script}, {"X" + entry});
  const int in_arguments = start({"sh", "-c", script, entry, "--job=" + mark}, {});
  int other_user = -1;
  if (::geteuid() == 0 && ::access("/usr/bin/setpriv", X_OK) == 0)
    other_user = start({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", script},
                       {entry, "GRIDRUN_TEST_SECOND=1"});
  // A writer's open blocks until we read, so every line arrives, in one opening or in several.
  for (std::size_t lines = 0; lines < shells.size();) {
    std::ifstream ready(fifo);
    for (std::string line; std::getline(ready, line);) ++lines;
  }
  std::vector<int> found;
  for (const auto& p : own_processes_with_env({entry})) found.push_back(p.pid());
  // `ours` and nothing outside its group (its sleep inherited the environment: ours too).
  EXPECT_NE(std::find(found.begin(), found.end(), ours), found.end());
  for (int p : found) EXPECT_EQ(::getpgid(p), ours) << p;
  for (int p : {other_value, longer_name, in_arguments, other_user})
    EXPECT_EQ(std::find(found.begin(), found.end(), p), found.end()) << p;
  // Every entry asked for must be there.
  EXPECT_EQ(own_processes_with_env({entry, "GRIDRUN_TEST_SECOND=1"}).size(), found.size());
  EXPECT_TRUE(own_processes_with_env({entry, "GRIDRUN_TEST_SECOND=2"}).empty());
  EXPECT_TRUE(own_processes_with_env({}).empty());
}

// A pinned process is signalled while it lives and never after; start_ticks names one process.
TEST(Host, PinnedProcessAndStartTicks) {
  EXPECT_FALSE(PinnedProcess::open(999999999));
  EXPECT_FALSE(start_ticks(999999999));
  const auto mine = start_ticks(::getpid());
  ASSERT_TRUE(mine);
  Child c = spawn({{"sleep", "30"}, {}, "", "", false, false, false, false, {}});
  const auto its = start_ticks(c.pid());
  ASSERT_TRUE(its);
  EXPECT_GE(*its, *mine);
  auto p = PinnedProcess::open(c.pid());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pid(), c.pid());
  EXPECT_FALSE(p->exited());
  EXPECT_FALSE(p->wait_exit(0.05));
  EXPECT_TRUE(p->signal(0));
  EXPECT_TRUE(p->signal(SIGTERM));
  EXPECT_TRUE(p->wait_exit(30));
  EXPECT_EQ(c.wait(), 128 + SIGTERM);
  EXPECT_TRUE(p->exited());
  EXPECT_FALSE(p->signal(SIGTERM));  // reaped: nothing, whoever has its PID now
  PinnedProcess moved = std::move(*p);
  EXPECT_TRUE(moved.exited());
}

// holds_flock: an exclusive flock through an open file of that process, on that very file.
TEST(Host, HoldsFlock) {
  TempDir d;
  const std::string lock = (d.path / "lock").string(), other = (d.path / "other").string();
  std::ofstream(lock) << "x";
  std::ofstream(other) << "x";
  const int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(holds_flock(::getpid(), lock));  // open only
  ASSERT_EQ(::flock(fd, LOCK_SH), 0);
  EXPECT_FALSE(holds_flock(::getpid(), lock));  // shared: not the run's lock
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  EXPECT_TRUE(holds_flock(::getpid(), lock));
  EXPECT_FALSE(holds_flock(::getpid(), other));
  EXPECT_FALSE(holds_flock(::getpid(), (d.path / "missing").string()));
  Child c = spawn({{"sleep", "30"}, {}, "", "", false, false, false, false, {}});
  EXPECT_FALSE(holds_flock(c.pid(), lock));  // it has no such file open
  EXPECT_FALSE(holds_flock(999999999, lock));
  ASSERT_EQ(::flock(fd, LOCK_UN), 0);
  EXPECT_FALSE(holds_flock(::getpid(), lock));
  ::close(fd);
}

// The outside share of two CPU snapshots: node busy minus our own tree, over the capacity; a
// snapshot that could not be read gives NaN, never a number.
TEST(Host, OutsideCpuShare) {
  gridrun::base::CpuSnapshot a, b;
  a.ok = b.ok = true;
  a.cores = b.cores = 2;
  a.node_busy_s = 100;
  a.own_s = 10;
  b.node_busy_s = 110;  // 10 busy core-seconds over 10 s on 2 cores
  b.own_s = 14;         // 4 of them ours
  EXPECT_DOUBLE_EQ(gridrun::base::outside_cpu_share(a, b, 10), 0.3);
  b.own_s = 25;  // tick rounding: ours can exceed the node's
  EXPECT_DOUBLE_EQ(gridrun::base::outside_cpu_share(a, b, 10), 0.0);
  EXPECT_TRUE(std::isnan(gridrun::base::outside_cpu_share(a, b, 0)));
  b.ok = false;
  EXPECT_TRUE(std::isnan(gridrun::base::outside_cpu_share(a, b, 10)));
  const auto now = gridrun::base::cpu_snapshot();
  EXPECT_TRUE(now.ok);
  EXPECT_GT(now.cores, 0);
  EXPECT_GT(now.node_busy_s, 0);
}

// The one median and t interval of the project (report aggregates, the verdict, calibration).
TEST(Stats, MedianAndMeanWithItsInterval) {
  EXPECT_DOUBLE_EQ(gridrun::base::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(gridrun::base::median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(gridrun::base::median({})));
  EXPECT_DOUBLE_EQ(gridrun::base::t95(2), 4.303);
  EXPECT_TRUE(std::isnan(gridrun::base::t95(0)));
  EXPECT_DOUBLE_EQ(gridrun::base::t95(100), 1.96);
  const auto m = gridrun::base::mean_ci95({1, 2, 3, std::nan("")});
  EXPECT_EQ(m.n, 3u);
  EXPECT_DOUBLE_EQ(m.mean, 2);
  EXPECT_NEAR(m.half_width, 4.303 * 1.0 / std::sqrt(3.0), 1e-12);
  const auto one = gridrun::base::mean_ci95({5});
  EXPECT_DOUBLE_EQ(one.mean, 5);
  EXPECT_TRUE(std::isnan(one.half_width));
  EXPECT_TRUE(std::isnan(gridrun::base::mean_ci95({}).mean));
}

// A command job's rendezvous (exec/): a port the kernel gave out is a real one, and an interface's
// IPv4 address is read from the interface (every Linux machine has a loopback named lo).
TEST(Net, FreePortAndInterfaceAddress) {
  const int port = gridrun::base::free_local_port();
  EXPECT_GT(port, 0);
  EXPECT_LE(port, 65535);
  EXPECT_EQ(gridrun::base::interface_ipv4("lo"), "127.0.0.1");
  EXPECT_EQ(gridrun::base::interface_ipv4("no-such-if9"), "");
}

// Golden-file tests of generated sbatch scripts (cpu, gpu, packed, split-array) and unit tests of
// the Slurm output parsers on text captured from slurm-wlm 22.05, and `submit`'s dry run (no Slurm).
//
// Why golden files: the scripts are what users read and what Slurm runs; any change to them should
// be a reviewed diff. Regenerate after an intended change with
//   build/bin/test_slurm_scripts --update-golden
// and review `git diff tests/slurm/golden`. Job ids here are fixed strings (not hashes) so the
// goldens do not move when the parameter table grows.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/slurm/script.hpp"
#include "gridrun/slurm/slurm_cli.hpp"
#include "gridrun/slurm/submit.hpp"

using namespace gridrun;

namespace {

bool g_update = false;

jobs::Job make_job(const std::string& id, std::size_t index, const std::string& device, int ranks,
                   int threads, const std::string& time_limit = "") {
  jobs::Job j;
  j.id = id;
  j.run = "golden";
  j.index = index;
  jobs::JobParams p;
  p.device = *base::parse_device(device);
  p.ranks = ranks;
  p.threads_per_rank = threads;
  p.global_batch = p.batch_per_rank * ranks;
  p.time_limit = time_limit;
  j.params = p;
  return j;
}

slurm::ScriptOptions base_options() {
  slurm::ScriptOptions o;
  o.run_dir = "/work/runs/golden";
  o.run_name = "golden";
  o.grid_file = "/work/grids/golden.yaml";
  o.out_dir = "/work/runs";
  o.train_bin = "/opt/gridrun/bin/gridrun-train";
  o.gridrun_bin = "/opt/gridrun/bin/gridrun";
  return o;
}

std::string render(const slurm::ScriptSet& set) {
  std::string s;
  for (const auto& a : set.arrays) {
    s += "==> " + a.list_path + " <==\n" + a.job_list;
    s += "==> " + a.script_path + " <==\n" + a.script;
  }
  s += "==> " + set.collect_path + " <==\n" + set.collect_script;
  return s;
}

void check_golden(const std::string& name, const std::string& text) {
  const std::string path = std::string(GOLDEN_DIR) + "/" + name + ".txt";
  if (g_update) {
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << "missing golden file " << path << " (run with --update-golden)";
  std::ostringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), text) << "generated scripts differ from " << path;
}

}  // namespace

TEST(SlurmScripts, CpuArraysByShape) {
  std::vector<jobs::Job> js = {
      make_job("c00000000001", 0, "cpu", 1, 1, "10"), make_job("c00000000002", 1, "cpu", 2, 1, "10"),
      make_job("c00000000003", 2, "cpu", 1, 1, "10"), make_job("c00000000004", 3, "cpu", 2, 1, "10"),
      make_job("c00000000005", 4, "cpu", 1, 2, "")};
  auto o = base_options();
  o.default_time = "30";
  auto set = slurm::generate_scripts(js, {}, o);
  ASSERT_EQ(set.arrays.size(), 3u);
  EXPECT_EQ(set.arrays[0].tasks.size(), 2u);  // the two 1x1 jobs
  EXPECT_EQ(set.arrays[0].tasks[1][0], "c00000000003");
  EXPECT_EQ(set.arrays[2].shape.time_s, 1800);  // --time for the job without time_limit
  EXPECT_NE(set.arrays[1].script.find("#SBATCH --ntasks=2\n"), std::string::npos);
  EXPECT_EQ(set.arrays[1].script.find("#SBATCH --gres"), std::string::npos);
  check_golden("cpu", render(set));
}

// issue 23: a job across hosts asks for --nodes=N and R/N tasks (and GPUs) per node; --network
// reaches Open MPI and NCCL; compare-by phases become separate arrays.
TEST(SlurmScripts, MultiNodeJobsAndNetwork) {
  std::vector<jobs::Job> js = {make_job("m00000000001", 0, "gpu", 8, 2, "10"),
                               make_job("m00000000002", 1, "gpu", 2, 2, "10"),
                               make_job("m00000000003", 2, "cpu", 4, 1, "10")};
  js[0].params.nodes = 2;
  js[2].params.nodes = 2;
  js[2].meta["phase"] = "2";
  auto o = base_options();
  o.network = "eth1,10.1.0.0/16";
  auto set = slurm::generate_scripts(js, {}, o);
  ASSERT_EQ(set.arrays.size(), 3u);
  EXPECT_EQ(set.arrays[0].name, "s1-a0-gpu-r8-t2-n2");
  const std::string& s = set.arrays[0].script;
  for (const char* line : {"#SBATCH --nodes=2\n", "#SBATCH --ntasks=8\n", "#SBATCH --ntasks-per-node=4\n",
                           "#SBATCH --gres=gpu:4\n", "#SBATCH --cpus-per-task=2\n", "--nodes=\"$ENTRY_N\"",
                           "\nexport OMPI_MCA_btl_tcp_if_include=eth1,10.1.0.0/16\n",
                           "\nexport OMPI_MCA_oob_tcp_if_include=eth1,10.1.0.0/16\n",
                           "\nexport NCCL_SOCKET_IFNAME=eth1\n", " --network eth1,10.1.0.0/16"})
    EXPECT_NE(s.find(line), std::string::npos) << line;
  const std::string& one = set.arrays[1].script;
  EXPECT_NE(one.find("#SBATCH --nodes=1\n"), std::string::npos);
  EXPECT_EQ(one.find("--ntasks-per-node"), std::string::npos);
  // The steps' shape comes from the job files (`gridrun job-shape`), never from script text.
  for (const auto* a : {&s, &one})
    for (const char* var : {"\nNODES=", "\nRANKS=", "\nTHREADS="})
      EXPECT_EQ(a->find(var), std::string::npos) << var;
  EXPECT_EQ(set.arrays[2].shape.phase, "2");
  EXPECT_EQ(set.arrays[2].name, "s1-a2-cpu-r4-t1-n2");
}

TEST(SlurmScripts, GpuWithSiteLinesThrottleAndMpirun) {
  std::vector<jobs::Job> js;
  for (int i = 0; i < 4; ++i)
    js.push_back(make_job("g0000000000" + std::to_string(i), i, "gpu", 2, 4, "1:00:00"));
  auto o = base_options();
  o.partition = "gpu";
  o.account = "proj42";
  o.qos = "normal";
  o.constraint = "a100";
  o.throttle = 2;
  o.launcher = "mpirun";
  o.signal = "B:USR1@300";
  o.template_text = "#SBATCH --mail-type=FAIL\nmodule load openmpi\n";
  o.sbatch_args = {"--mem=32G"};
  auto set = slurm::generate_scripts(js, {}, o);
  ASSERT_EQ(set.arrays.size(), 1u);
  const auto& s = set.arrays[0].script;
  EXPECT_NE(s.find("#SBATCH --gres=gpu:2\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --cpus-per-task=4\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --array=0-3%2\n"), std::string::npos);
  EXPECT_NE(s.find("#SBATCH --signal=B:USR1@300\n"), std::string::npos);
  EXPECT_NE(s.find("LAUNCHER=mpirun\n"), std::string::npos);
  // site lines come after gridrun's, so they override them
  EXPECT_LT(s.find("#SBATCH --requeue"), s.find("#SBATCH --mem=32G"));
  // ... and every #SBATCH line before the template's first command: sbatch reads none after it
  EXPECT_LT(s.find("#SBATCH --mem=32G"), s.find("module load openmpi"));
  EXPECT_LT(s.find("#SBATCH --mail-type=FAIL"), s.find("module load openmpi"));
  check_golden("gpu", render(set));
}

TEST(SlurmScripts, PackedNodesUseSchedulerPlacement) {
  std::vector<jobs::Job> js = {
      make_job("p00000000001", 0, "gpu", 1, 1, "20"), make_job("p00000000002", 1, "gpu", 2, 1, "20"),
      make_job("p00000000003", 2, "gpu", 1, 1, "20"), make_job("p00000000004", 3, "gpu", 3, 1, "20"),
      make_job("p00000000005", 4, "gpu", 4, 1, "20"),   // whole node: array
      make_job("p00000000006", 5, "cpu", 1, 1, "20")};  // cpu: array
  auto o = base_options();
  o.node_gpus = 4;
  o.pack_nodes = true;
  auto pk = slurm::pack_jobs(js, 4, 8, o);
  ASSERT_EQ(pk.rest.size(), 2u);
  // Every bundle fits the node and its steps have disjoint GPUs and cores.
  std::size_t packed = 0;
  for (const auto& b : pk.bundles) {
    std::set<std::string> gpus, cores;
    int used = 0;
    for (const auto& st : b) {
      std::stringstream g(st.gpus), c(st.cores);
      for (std::string x; std::getline(g, x, ',');) EXPECT_TRUE(gpus.insert(x).second) << st.gpus;
      for (std::string x; std::getline(c, x, ',');) EXPECT_TRUE(cores.insert(x).second) << st.cores;
      used += static_cast<int>(st.ranks);
      ++packed;
    }
    EXPECT_LE(used, 4);
  }
  EXPECT_EQ(packed, 4u);
  EXPECT_EQ(pk.bundles.size(), 2u);  // 3+1 and 2+1 GPUs
  auto set = slurm::generate_scripts(pk.rest, pk.bundles, o);
  ASSERT_EQ(set.arrays.size(), 3u);
  const auto& packed_script = set.arrays[2].script;
  EXPECT_NE(packed_script.find("#SBATCH --exclusive\n"), std::string::npos);
  EXPECT_NE(packed_script.find("STEP_FLAGS=(--exact)\n"), std::string::npos);
  check_golden("packed", render(set));
}

// --jobs-per-task and --launch warm: five jobs of one shape become three tasks (2+2+1, a line
// ID+ID each) whose time limit is the chain's sum; two packed bundles of one layout become one
// bundle whose steps are chains; the script tells the body to run warm and where the workers go.
TEST(SlurmScripts, WarmChainsRunSeveralJobsPerTask) {
  std::vector<jobs::Job> js;
  for (int i = 0; i < 5; ++i) js.push_back(make_job("w0000000000" + std::to_string(i), i, "cpu", 2, 1, "10"));
  auto o = base_options();
  o.launch = run::Launch::Warm;
  o.jobs_per_task = 2;
  std::vector<slurm::Bundle> bundles(2);
  for (int b = 0; b < 2; ++b)
    for (int s = 0; s < 2; ++s)
      bundles[b].push_back({"g000000000" + std::to_string(b) + std::to_string(s), 2, 1, 600,
                            s == 0 ? "0,1" : "2,3", s == 0 ? "0,1" : "2,3"});
  o.pack_nodes = true;
  auto set = slurm::generate_scripts(js, bundles, o);
  ASSERT_EQ(set.arrays.size(), 2u);
  const auto& plain = set.arrays[0];
  ASSERT_EQ(plain.tasks.size(), 3u);
  EXPECT_EQ(plain.tasks[0], (std::vector<std::string>{"w00000000000", "w00000000001"}));
  EXPECT_EQ(plain.job_list, "w00000000000+w00000000001\nw00000000002+w00000000003\nw00000000004\n");
  EXPECT_NE(plain.script.find("#SBATCH --time=0:20:00\n"), std::string::npos);
  EXPECT_NE(plain.script.find("LAUNCH=warm\n"), std::string::npos);
  EXPECT_NE(plain.script.find("WORKERS_DIR=/work/runs/golden/workers\n"), std::string::npos);
  EXPECT_NE(plain.script.find(" --launch warm --jobs-per-task 2"), std::string::npos);
  const auto& packed = set.arrays[1];
  ASSERT_EQ(packed.tasks.size(), 1u);
  EXPECT_EQ(packed.tasks[0].size(), 4u);
  EXPECT_EQ(packed.job_list, "g00000000000+g00000000010 g00000000001+g00000000011\n");
  EXPECT_NE(packed.script.find("#SBATCH --time=0:20:00\n"), std::string::npos);
  check_golden("warm", render(set));
  o.jobs_per_task = 0;
  EXPECT_THROW(slurm::generate_scripts(js, {}, o), std::invalid_argument);
  o.jobs_per_task = 1;
  EXPECT_THROW(run::parse_launch("tepid"), std::invalid_argument);  // the flag's text, at the edge
  // Warm task messages are JSON: a run directory that is not UTF-8 is refused, for warm only.
  o.run_dir = "/work/runs/latin1-\xe9";
  o.launch = run::Launch::Cold;
  EXPECT_NO_THROW(slurm::generate_scripts(js, {}, o));
  o.launch = run::Launch::Warm;
  EXPECT_THROW(slurm::generate_scripts(js, {}, o), std::invalid_argument);
}

TEST(SlurmScripts, SplitArraysAtMaxArray) {
  std::vector<jobs::Job> js;
  for (int i = 0; i < 5; ++i) js.push_back(make_job("s0000000000" + std::to_string(i), i, "cpu", 1, 1));
  auto o = base_options();
  o.max_array = 2;
  auto set = slurm::generate_scripts(js, {}, o);
  ASSERT_EQ(set.arrays.size(), 3u);
  EXPECT_EQ(set.arrays[0].tasks.size(), 2u);
  EXPECT_EQ(set.arrays[2].tasks.size(), 1u);
  EXPECT_EQ(set.arrays[2].tasks[0][0], "s00000000004");
  EXPECT_NE(set.arrays[2].script.find("#SBATCH --array=0-0\n"), std::string::npos);
  EXPECT_EQ(set.arrays[0].script.find("--time"), std::string::npos);  // no limit anywhere
  check_golden("split", render(set));
}

TEST(SlurmScripts, BadOptionsNameTheFlag) {
  auto o = base_options();
  o.launcher = "ssh";
  try {
    slurm::generate_scripts({make_job("x", 0, "cpu", 1, 1)}, {}, o);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--launcher"), std::string::npos);
  }
  o = base_options();
  o.max_array = 0;
  EXPECT_THROW(slurm::generate_scripts({make_job("x", 0, "cpu", 1, 1)}, {}, o), std::invalid_argument);
}

// Issue 24: every value that lands in a script is checked; each case names its flag.
TEST(SlurmScripts, InjectedValuesAreRejectedNamingTheFlag) {
  struct Case {
    const char* flag;
    void (*set)(slurm::ScriptOptions&);
  };
  const Case cases[] = {
      {"--sbatch-arg", [](slurm::ScriptOptions& o) { o.sbatch_args = {"--mem=1G\ntouch /tmp/x"}; }},
      {"--sbatch-arg", [](slurm::ScriptOptions& o) { o.sbatch_args = {"mem=1G"}; }},
      {"--sbatch-arg", [](slurm::ScriptOptions& o) { o.sbatch_args = {"--array=0-9"}; }},
      {"--partition", [](slurm::ScriptOptions& o) { o.partition = "x; y"; }},
      {"--network", [](slurm::ScriptOptions& o) { o.network = "eth0; reboot"; }},
      {"--network", [](slurm::ScriptOptions& o) { o.network = "eth0\nib0"; }},
      {"--partition", [](slurm::ScriptOptions& o) { o.partition = "x\ny"; }},
      {"--account", [](slurm::ScriptOptions& o) { o.account = "$(id)"; }},
      {"--qos", [](slurm::ScriptOptions& o) { o.qos = "a b"; }},
      {"--constraint", [](slurm::ScriptOptions& o) { o.constraint = "gpu#x"; }},
      {"--time", [](slurm::ScriptOptions& o) { o.default_time = "1:00\n"; }},
      {"--train-bin", [](slurm::ScriptOptions& o) { o.train_bin = "/t\rx"; }},
      {"--out", [](slurm::ScriptOptions& o) { o.out_dir = "/r\nx"; }},
      {"--set", [](slurm::ScriptOptions& o) { o.set_args = {"data_dir=/d\ntouch /tmp/x"}; }},
      {"--only", [](slurm::ScriptOptions& o) { o.only_args = {"data_dir=/d\ntouch /tmp/x"}; }},
      {"--template t.txt:3",
       [](slurm::ScriptOptions& o) {
         o.template_path = "t.txt";
         o.template_text = "#SBATCH --mem=1G\nmodule load x\n#SBATCH --exclusive\n";
       }},
      {"--template t.txt:2",
       [](slurm::ScriptOptions& o) {
         o.template_path = "t.txt";
         o.template_text = "# ok\nmodule load \x1b[2J\n";
       }},
  };
  for (const auto& c : cases) {
    auto o = base_options();
    c.set(o);
    try {
      slurm::check_script_options(o);
      ADD_FAILURE() << c.flag << ": accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(c.flag), std::string::npos) << e.what();
    }
  }
  // What a site really writes passes: lists, constraint expressions, a template with commands.
  auto o = base_options();
  o.partition = "gpu,gpu-long";
  o.constraint = "[rack1|rack2]&a100*2";
  o.template_text = "#SBATCH --mail-type=FAIL\n\n# site\nmodule load openmpi\nexport X=1\n";
  EXPECT_NO_THROW(slurm::check_script_options(o));
}

// A run directory with a space or '#' is quoted for sbatch on the --output line (sbatch would end
// the value there) and for the shell on the comment lines.
TEST(SlurmScripts, PathsWithSpacesAreQuoted) {
  auto o = base_options();
  o.run_dir = "/work/my runs/golden#1";
  o.grid_file = "/work/my grids/g.yaml";
  auto set = slurm::generate_scripts({make_job("c00000000001", 0, "cpu", 1, 1, "10")}, {}, o);
  const auto& s = set.arrays.at(0).script;
  EXPECT_NE(s.find("#SBATCH --output=\"/work/my runs/golden#1/logs/slurm-%A_%a.out\"\n"), std::string::npos)
      << s;
  EXPECT_NE(s.find("#   '/work/my grids/g.yaml'\n"), std::string::npos) << s;
  EXPECT_NE(set.collect_script.find("--output=\"/work/my runs/golden#1/logs/collect-%j.out\""),
            std::string::npos);
}

// Issue 45: odd characters in the run directory. '%' is doubled on the #SBATCH --output lines
// (Slurm expands %j there) while the log name's own %A_%a / %j stay patterns; the per-job paths
// are ('PREFIX' 'SUFFIX') arrays joined by plain expansion, so the real bash of the task body gets
// exactly the run directory's bytes back (a printf format turned o\tb into a TAB).
TEST(SlurmScripts, PercentSpaceAndUnicodeInTheRunDirectoryReachEveryPathUnchanged) {
  auto o = base_options();
  o.run_dir = "/work/my runs/100%j \xc3\xa9t\xc3\xa9 'q' $HOME/golden";
  auto set = slurm::generate_scripts({make_job("c00000000001", 0, "cpu", 1, 1, "10")}, {}, o);
  const std::string& s = set.arrays.at(0).script;
  EXPECT_NE(s.find("#SBATCH --output=\"/work/my runs/100%%j \xc3\xa9t\xc3\xa9 'q' $HOME/golden/logs/"
                   "slurm-%A_%a.out\"\n"),
            std::string::npos)
      << s;
  EXPECT_NE(set.collect_script.find("--output=\"/work/my runs/100%%j \xc3\xa9t\xc3\xa9 'q' $HOME/golden/"
                                    "logs/collect-%j.out\"\n"),
            std::string::npos)
      << set.collect_script;
  // No printf format built from a path: every printf's format is a literal in single quotes.
  for (std::size_t at = s.find("printf "); at != std::string::npos; at = s.find("printf ", at + 1)) {
    std::size_t f = at + 7;
    if (s.compare(f, 3, "-v ") == 0) f = s.find(' ', f + 3) + 1;  // -v NAME
    EXPECT_EQ(s[f], '\'') << "printf with a format that is not a literal: "
                          << s.substr(at, s.find('\n', at) - at);
  }
  // The variables and the body's four expansions, run by bash: each path is the run directory's.
  const auto begin = s.find("\nTRAIN=");
  const auto end = s.find("# ---- task body");
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  std::string program = s.substr(begin, end - begin);
  // The body's own function for the per-job paths (the warm worker's task message is written by
  // `gridrun worker-msg`, whose odd paths tests/app/test_worker_msg.cpp checks).
  {
    const auto at = s.find("job_paths() {");
    ASSERT_NE(at, std::string::npos);
    program += s.substr(at, s.find("\n}\n", at) + 3 - at);
  }
  program += "job_paths c00000000001\n";
  program += "printf '%s\\n' \"$RESULTS_DIR\" \"$JOB_JSON\" \"$JOB_OUT\" \"$JOB_ERR\" \"$JOB_CKPT\"\n";
  namespace fs = std::filesystem;
  const fs::path file =
      fs::temp_directory_path() / ("gridrun-slurm-paths-" + std::to_string(::getpid()) + ".sh");
  std::ofstream(file) << program;
  FILE* pipe = ::popen(("bash " + file.string()).c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string got;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) got.append(buf, n);
  EXPECT_EQ(::pclose(pipe), 0) << program;
  fs::remove(file);
  const run::RunDir rd(o.run_dir);
  const std::vector<std::string> lines = base::split(got, '\n');
  ASSERT_EQ(lines.size(), 6u) << got;
  EXPECT_EQ(lines[0], rd.results_dir());
  EXPECT_EQ(lines[1], rd.job_file("c00000000001"));
  EXPECT_EQ(lines[2], rd.log_out("c00000000001"));
  EXPECT_EQ(lines[3], rd.log_err("c00000000001"));
  EXPECT_EQ(lines[4], rd.checkpoint_dir("c00000000001"));
}

// Slurm strips every backslash from an --output path (and then expands nothing in it), so no
// #SBATCH line can name a run directory with one: refused, naming it, before anything is written.
TEST(SlurmScripts, BackslashInTheRunDirectoryIsRefused) {
  auto o = base_options();
  o.run_dir = "/work/o\\tb/golden";
  try {
    slurm::generate_scripts({make_job("c00000000001", 0, "cpu", 1, 1, "10")}, {}, o);
    ADD_FAILURE() << "a run directory with a backslash was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("the run directory /work/o\\tb/golden contains a backslash (character 8)"),
        std::string::npos)
        << e.what();
  }
}

TEST(SlurmParsers, ScontrolExpandsPendingArrayRecords) {
  // Captured from slurmctld 22.05 (trimmed): a pending remainder, a running task, a plain job.
  const std::string text =
      "JobId=3 ArrayJobId=3 ArrayTaskId=2-5%2 ArrayTaskThrottle=2 JobName=wrap JobState=PENDING "
      "Reason=JobArrayTaskLimit Requeue=1 Restarts=0 BatchFlag=1 ExitCode=0:0 RunTime=00:00:00 "
      "NodeList=(null)\n"
      "JobId=5 ArrayJobId=3 ArrayTaskId=1 ArrayTaskThrottle=2 JobName=wrap JobState=RUNNING "
      "Reason=None Restarts=1 ExitCode=0:0 RunTime=00:00:01 NodeList=vm\n"
      "JobId=9 JobName=collect JobState=FAILED Reason=NonZeroExitCode Restarts=0 ExitCode=3:0 "
      "RunTime=00:00:04 NodeList=vm\n";
  auto ts = slurm::parse_scontrol(text);
  ASSERT_EQ(ts.size(), 6u);
  EXPECT_EQ(ts[0].id, "3_2");
  EXPECT_EQ(ts[3].id, "3_5");
  EXPECT_EQ(ts[3].state, "PENDING");
  EXPECT_EQ(ts[4].id, "3_1");
  EXPECT_EQ(ts[4].restarts, 1);
  EXPECT_EQ(ts[4].node, "vm");
  EXPECT_EQ(ts[5].id, "9");
  EXPECT_EQ(ts[5].exit_code, 3);
}

TEST(SlurmParsers, SqueueSacctAndConfig) {
  auto q = slurm::parse_squeue("3_2|PENDING|0:00||JobArrayTaskLimit\n3_0|RUNNING|0:01|vm|None\n");
  ASSERT_EQ(q.size(), 2u);
  EXPECT_EQ(q[1].node, "vm");
  auto a = slurm::parse_sacct(
      "12_0|COMPLETED|0:0|00:00:05|n1\n12_[1-3%2]|PENDING|0:0|00:00:00|None assigned\n"
      "13|CANCELLED by 0|0:15|00:01:00|n2\n");
  ASSERT_EQ(a.size(), 5u);
  EXPECT_EQ(a[3].id, "12_3");
  EXPECT_EQ(a[4].state, "CANCELLED");
  EXPECT_EQ(a[4].exit_code, 128 + 15);
  // Out-of-range codes and signals are unknown (-1), not an overflowed sum (fuzzing, issue 24).
  const auto odd = slurm::parse_sacct("14|FAILED|0:2147483647|00:00:01|n1\n15|FAILED|300:0|00:00:01|n1\n");
  ASSERT_EQ(odd.size(), 2u);
  EXPECT_EQ(odd[0].exit_code, -1);
  EXPECT_EQ(odd[1].exit_code, -1);
  EXPECT_EQ(slurm::parse_max_array_size("KillWait = 5 sec\nMaxArraySize            = 1001\n"), 1001u);
  EXPECT_FALSE(slurm::parse_max_array_size("KillWait = 5 sec\n").has_value());
  EXPECT_EQ(slurm::expand_task_range("1,4,7-9%3"), (std::vector<int>{1, 4, 7, 8, 9}));
  // Bounds no Slurm can have are damaged text, skipped (before: INT_MAX made `i += step` overflow
  // and loop for ever; found by bench/fuzz/run.sh slurm_text).
  EXPECT_EQ(slurm::expand_task_range("0-2147483647"), std::vector<int>{});
  EXPECT_EQ(slurm::expand_task_range("3,-5-2,4000001-4000002"), std::vector<int>{3});
  EXPECT_EQ(slurm::expand_task_range("3999999-4000000"), (std::vector<int>{3999999, 4000000}));
  // More tasks than gridrun ever puts in one array: skipped, not expanded (a 2,147,483-task range
  // held the parser for seconds; fuzzing, issue 24). The bound itself still expands.
  EXPECT_EQ(slurm::expand_task_range("0-100000"), std::vector<int>{});
  EXPECT_EQ(slurm::expand_task_range("1-100000").size(), slurm::kMaxArrayTasks);
  // ... and for a whole listing: three such records give one record's worth, not three.
  const std::string big = "7_[1-100000]|PENDING|0:0|00:00:00|None assigned\n";
  EXPECT_EQ(slurm::parse_sacct(big + big + big).size(), slurm::kMaxArrayTasks);
}

TEST(SlurmParsers, StateMapping) {
  using S = run::JobOutcome;
  EXPECT_EQ(slurm::map_slurm_state("PENDING", 0), S::Submitted);
  EXPECT_EQ(slurm::map_slurm_state("RUNNING", 0), S::Running);
  EXPECT_EQ(slurm::map_slurm_state("COMPLETED", 0), S::Completed);
  EXPECT_EQ(slurm::map_slurm_state("FAILED", 1), S::Failed);
  EXPECT_EQ(slurm::map_slurm_state("FAILED", 75), S::Interrupted);
  EXPECT_EQ(slurm::map_slurm_state("TIMEOUT", 0), S::Interrupted);
  EXPECT_EQ(slurm::map_slurm_state("CANCELLED", 0), S::Interrupted);
  EXPECT_EQ(slurm::map_slurm_state("PREEMPTED", 0), S::Interrupted);
  EXPECT_EQ(slurm::map_slurm_state("NODE_FAIL", 0), S::Failed);
  EXPECT_EQ(slurm::map_slurm_state("OUT_OF_MEMORY", 0), S::Failed);
}

// A task that runs a chain of jobs (--jobs-per-task): each job's outcome from the task's and what
// the body recorded of the job (slurm/ended/<id>, the start/end listings of logs/<id>.others).
TEST(SlurmParsers, JobOutcomeInItsTask) {
  using S = run::JobOutcome;
  const slurm::TaskJobTrace waiting, started{std::nullopt, true}, ok{0, false}, failed{2, false};
  const slurm::TaskView running{S::Running, 0, true};
  EXPECT_EQ(slurm::job_outcome_in_task(running, waiting), S::Submitted);  // its turn not yet come
  EXPECT_EQ(slurm::job_outcome_in_task(running, started), S::Running);
  EXPECT_EQ(slurm::job_outcome_in_task(running, ok), S::Completed);
  EXPECT_EQ(slurm::job_outcome_in_task(running, failed), S::Failed);
  // A task starting (none of its jobs has yet): its jobs are the task's, running.
  EXPECT_EQ(slurm::job_outcome_in_task({S::Running, 0, false}, waiting), S::Running);
  // A task cut short: the jobs that ended keep their own outcome, the others the task's.
  EXPECT_EQ(slurm::job_outcome_in_task({S::Interrupted, 0, true}, ok), S::Completed);
  EXPECT_EQ(slurm::job_outcome_in_task({S::Interrupted, 0, true}, started), S::Interrupted);
  EXPECT_EQ(slurm::job_outcome_in_task({S::Failed, 0, false}, waiting), S::Failed);
  // A queued task's jobs are queued, whatever an earlier submission left; a requeued one (restarts
  // > 0) skips the jobs that ended before, so those keep their outcome.
  EXPECT_EQ(slurm::job_outcome_in_task({S::Submitted, 0, false}, failed), S::Submitted);
  EXPECT_EQ(slurm::job_outcome_in_task({S::Submitted, 1, false}, failed), S::Failed);
  EXPECT_EQ(slurm::job_outcome_in_task({S::Submitted, 1, false}, started), S::Submitted);
}

TEST(SlurmParsers, TaskJobTraceFromTheRunDirectory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gridrun-test-trace-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const run::RunDir rd(dir.string());
  fs::create_directories(rd.slurm_ended_dir());
  fs::create_directories(fs::path(rd.others_file("a")).parent_path());
  // Nothing recorded: not ended, not started.
  auto t = slurm::read_task_job_trace(rd, "a", "40_0");
  EXPECT_FALSE(t.ended_code.has_value());
  EXPECT_FALSE(t.started);
  // Started in task 40_0 (a listing after the header); not in another task (an earlier submission's).
  std::ofstream(rd.others_file("a")) << "start 1795000000 task 40_0\njob 39 alice sleeper\n";
  EXPECT_TRUE(slurm::read_task_job_trace(rd, "a", "40_0").started);
  EXPECT_FALSE(slurm::read_task_job_trace(rd, "a", "52_3").started);
  EXPECT_FALSE(slurm::read_task_job_trace(rd, "a", "").started);  // not asked
  // Ended with code 3 and its "end" listing.
  std::ofstream(rd.others_file("a"), std::ios::app) << "end 1795000042 task 40_0\n";
  std::ofstream(rd.slurm_ended_dir() + "/a") << "3\n";
  t = slurm::read_task_job_trace(rd, "a", "40_0");
  EXPECT_EQ(t.ended_code, 3);
  EXPECT_FALSE(t.started);
  // A restart starts it again; a damaged ended file says nothing.
  std::ofstream(rd.others_file("a"), std::ios::app) << "start 1795000100 task 40_0\n";
  std::ofstream(rd.slurm_ended_dir() + "/a") << "3x\n";
  t = slurm::read_task_job_trace(rd, "a", "40_0");
  EXPECT_FALSE(t.ended_code.has_value());
  EXPECT_TRUE(t.started);
  fs::remove_all(dir);
}

// Issue 34: the header's resubmit command carries the submission's --set and --only. Without
// --set it would submit other jobs (overrides are part of every id) and without --only the rest
// of the grid.
TEST(SlurmScripts, ResubmitHintKeepsSetAndOnly) {
  auto o = base_options();
  o.set_args = {"epochs=2", "data_dir=/d/my data"};
  o.only_args = {"model=mlp,lenet", "id=c00000000001"};
  auto set = slurm::generate_scripts({make_job("c00000000001", 0, "cpu", 1, 1, "10")}, {}, o);
  const auto& s = set.arrays.at(0).script;
  EXPECT_NE(s.find("\n#   gridrun submit /work/grids/golden.yaml --slurm --out /work/runs --set epochs=2 "
                   "--set 'data_dir=/d/my data' --only model=mlp,lenet --only id=c00000000001\n"),
            std::string::npos)
      << s;
}

// The same through `gridrun submit`'s library call (dry run: no Slurm needed): the flags as the
// command parsed them reach the scripts.
TEST(SlurmSubmit, DryRunResubmitHintKeepsSetAndOnly) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gridrun-test-resubmit-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string grid = (dir / "hint.yaml").string();
  std::ofstream(grid) << "name: hint\ndefaults: {dataset: synthetic, device: cpu, epochs: 1}\n"
                         "grid:\n  model: [mlp, lenet]\n  lr: [0.1, 0.2]\n";
  slurm::SubmitOptions so;
  so.grid_file = grid;
  so.out_dir = (dir / "runs").string();
  so.dry_run = true;
  so.max_array = 1000;  // not asked of scontrol
  so.overrides = jobs::parse_overrides({"epochs=2"});
  so.only = jobs::parse_selectors({"model=mlp", "lr=0.10"}, "--only", {"id"});
  std::ostringstream log;
  const auto res = slurm::submit(so, slurm::SlurmCli{}, log);
  EXPECT_EQ(res.total_jobs, 4u);
  ASSERT_EQ(res.scripts.arrays.size(), 1u) << log.str();
  EXPECT_EQ(res.scripts.arrays[0].tasks.size(), 1u);  // mlp at lr 0.1 only
  const auto& s = res.scripts.arrays[0].script;
  EXPECT_NE(s.find(" --slurm --out " + fs::absolute(so.out_dir).lexically_normal().string() +
                   " --set epochs=2 --only model=mlp --only lr=0.10\n"),
            std::string::npos)
      << s;
  // A value the hint cannot hold is refused before the run directory is made.
  fs::remove_all(so.out_dir);
  so.only = jobs::parse_selectors({"data_dir=x\ntouch /tmp/x"}, "--only", {"id"});
  try {
    slurm::submit(so, slurm::SlurmCli{}, log);
    ADD_FAILURE() << "--only with a newline: accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--only"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(so.out_dir));
  fs::remove_all(dir);
}

TEST(SlurmScripts, TenThousandJobsStayInFewArrays) {
  std::vector<jobs::Job> js;
  for (int i = 0; i < 10000; ++i) js.push_back(make_job("j" + std::to_string(i), i, "cpu", 1 + i % 2, 1));
  auto o = base_options();
  o.max_array = 1001;
  auto set = slurm::generate_scripts(js, {}, o);
  std::size_t tasks = 0;
  for (const auto& a : set.arrays) tasks += a.tasks.size();
  EXPECT_EQ(tasks, 10000u);
  EXPECT_EQ(set.arrays.size(), 10u);  // 2 shapes x ceil(5000 / 1001)
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--update-golden") g_update = true;
  return RUN_ALL_TESTS();
}

// compare.repeats through Slurm: one array per phase and repeat, in the interleaved order (A B |
// B A | A B) that submit chains with afterany dependencies, as `gridrun run` runs the phases.
TEST(SlurmSubmit, RepeatsAreArraysInInterleavedOrder) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("gridrun-test-repeats-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string grid = (dir / "rep.yaml").string();
  std::ofstream(grid) << "name: rep\ndefaults: {dataset: synthetic, device: cpu, epochs: 1}\n"
                         "compare: {by: ranks, repeats: 3}\ngrid:\n  ranks: [2, 1]\n  seed: [0, 1]\n";
  slurm::SubmitOptions so;
  so.grid_file = grid;
  so.out_dir = (dir / "runs").string();
  so.dry_run = true;
  so.max_array = 1000;
  std::ostringstream log;
  auto res = slurm::submit(so, slurm::SlurmCli{}, log);
  EXPECT_EQ(res.total_jobs, 12u);
  std::vector<std::string> phases;
  for (const auto& a : res.scripts.arrays) {
    phases.push_back(a.shape.phase);
    EXPECT_EQ(a.tasks.size(), 2u) << a.name;  // the two seeds of one phase and repeat
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"2", "1", "1#2", "2#2", "2#3", "1#3"}));
  so.repeats = 2;  // --repeats replaces the grid's
  fs::remove_all(so.out_dir);
  res = slurm::submit(so, slurm::SlurmCli{}, log);
  EXPECT_EQ(res.total_jobs, 8u);
  fs::remove_all(dir);
}

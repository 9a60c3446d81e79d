// Unit tests of job files: JSON form, atomic write, read-back and its error messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gridrun/base/json.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"

namespace gj = gridrun::jobs;
namespace fs = std::filesystem;

namespace {

class JobsJobFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gridrun-jobfile-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write_text(const std::string& name, const std::string& text) {
    fs::create_directories(dir_);
    std::string p = (dir_ / name).string();
    std::ofstream(p) << text;
    return p;
  }

  // what() of the runtime_error read_job_file throws, or "no error".
  std::string read_error(const std::string& text) {
    const std::string p = write_text("bad.json", text);
    try {
      gj::read_job_file(p);
    } catch (const std::runtime_error& e) {
      std::string m = e.what();
      return m.substr(0, p.size()) == p ? "FILE" + m.substr(p.size()) : m;
    }
    return "no error";
  }

  gj::Job sample() {
    gj::Expansion ex = gj::load_grid_string(
        "name: demo\ndefaults: {model: lenet, lr: 0.05, time_limit: \"1:00:00\"}\n"
        "grid: {ranks: [1, 2]}\n",
        "demo.yaml");
    gj::Job j = ex.jobs[1];
    j.meta["cores"] = "0-1";
    j.meta["note"] = "quote \" backslash \\ newline \n tab \t";
    return j;
  }

  fs::path dir_;
};

}  // namespace

TEST_F(JobsJobFile, JsonShape) {
  gj::Job j = sample();
  const std::string json = gj::job_to_json(j);
  EXPECT_EQ(json.rfind("{\"id\":\"" + j.id + "\",\"run\":\"demo\",\"index\":1,\"params\":{", 0), 0u) << json;
  EXPECT_NE(json.find("\"params\":" + gj::canonical_json(j.params) + ",\"meta\":{"), std::string::npos);
  EXPECT_NE(json.find("\"note\":\"quote \\\" backslash \\\\ newline \\n tab \\t\""), std::string::npos)
      << json;
}

TEST_F(JobsJobFile, WriteReadRoundTripLeavesNoTempFile) {
  gj::Job j = sample();
  const std::string path = (dir_ / "jobs" / (j.id + ".json")).string();
  gj::write_job_file(path, j);  // creates missing parent directories
  gj::Job back = gj::read_job_file(path);
  EXPECT_EQ(back.id, j.id);
  EXPECT_EQ(back.run, "demo");
  EXPECT_EQ(back.index, 1u);
  EXPECT_EQ(back.params, j.params);
  EXPECT_EQ(back.meta, j.meta);
  EXPECT_EQ(gj::job_id(back.params), j.id);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "jobs")) {
    ++files;
    EXPECT_EQ(e.path().filename().string(), j.id + ".json");
  }
  EXPECT_EQ(files, 1u);
  // Overwriting replaces the content whole.
  j.meta["phase"] = "2";
  gj::write_job_file(path, j);
  EXPECT_EQ(gj::read_job_file(path).meta.at("phase"), "2");
}

TEST_F(JobsJobFile, WriteIntoUnwritablePlaceThrows) {
  const std::string file = write_text("plain", "x");
  EXPECT_ANY_THROW(gj::write_job_file(file + "/sub/job.json", sample()));
}

TEST_F(JobsJobFile, ReadAcceptsReorderedKeysAndMissingNewParams) {
  // A hand-written file: keys in another order, spaces, a parameter left out (takes its default).
  gj::Job j = gj::job_from_json(
      "{ \"meta\": {}, \"params\": {\"model\": \"mlp\", \"lr\": 1e-1}, \"index\": 0,"
      "  \"run\": \"r\", \"id\": \"0123456789ab\" }",
      "inline");
  EXPECT_EQ(j.id, "0123456789ab");
  EXPECT_EQ(j.params, gj::JobParams{});
}

// Issue 57: the id names the job's files, so one that is not a job id is refused, naming the file.
TEST_F(JobsJobFile, IdThatIsNotAJobIdIsRefused) {
  EXPECT_EQ(read_error("{\"id\":\"../../../../tmp/x\",\"run\":\"r\",\"index\":0,\"params\":{}}"),
            "FILE: id: '../../../../tmp/x' is not a job id (12 lowercase hex digits)");
  EXPECT_TRUE(gj::is_job_id("0123456789ab"));
  EXPECT_FALSE(gj::is_job_id("0123456789AB"));
  EXPECT_FALSE(gj::is_job_id("0123456789a"));
  EXPECT_FALSE(gj::is_job_id("0123456789abc"));
  EXPECT_FALSE(gj::is_job_id("../123456789"));
}

TEST_F(JobsJobFile, ReadErrorsNameFileAndKey) {
  EXPECT_EQ(read_error("{\"id\":\"a\",\"run\":\"r\",\"index\":0,\"params\":{\"lrr\":0.1}}"),
            "FILE: params.lrr: unknown parameter; did you mean 'lr'?");
  EXPECT_EQ(read_error("{\"id\":\"a\",\"run\":\"r\",\"index\":0,\"params\":{\"ranks\":\"two\"}}"),
            "FILE: params.ranks: expected an integer, got 'two'");
  EXPECT_EQ(read_error("{\"run\":\"r\",\"index\":0,\"params\":{}}"), "FILE: id: missing");
  EXPECT_EQ(read_error("{\"id\":\"a\",\"run\":\"r\",\"index\":-1,\"params\":{}}"),
            "FILE: index: expected a non-negative integer");
  EXPECT_EQ(read_error("{\"id\":\"a\",\"run\":\"r\",\"index\":0,\"params\":[]}"),
            "FILE: params: expected a JSON object");
  EXPECT_EQ(read_error("{\"id\":\"a\",\"run\":\"r\",\"index\":0,\"params\":{},\"meta\":[1]}"),
            "FILE: meta: expected a JSON object");
  EXPECT_EQ(read_error("[1, 2]"), "FILE: expected a JSON object");
  EXPECT_NE(read_error("{\"id\": "), "no error");
  try {
    gj::read_job_file((dir_ / "missing.json").string());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), (dir_ / "missing.json").string() + ": cannot open job file");
  }
}

TEST_F(JobsJobFile, Footprint) {
  gj::JobParams p;
  p.device = gj::Device::gpu;
  p.ranks = 4;
  p.threads_per_rank = 2;
  auto r = gj::footprint(p);
  EXPECT_EQ(r.gpus, 4);
  EXPECT_EQ(r.cores, 8);
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.per_node.gpus, 4);
  EXPECT_EQ(r.gpu_slots_per_node(1), 4);
  p.nodes = 2;
  r = gj::footprint(p);
  EXPECT_EQ(r.per_node.ranks, 2);
  EXPECT_EQ(r.per_node.cores, 4);
  EXPECT_EQ(r.per_node.gpus, 2);
  p.nodes = 1;
  p.ranks = 1;
  p.jobs_per_gpu = 4;  // four such jobs share a GPU: of a GPU in 4 slots, one slot each
  r = gj::footprint(p);
  EXPECT_EQ(r.gpu_share, 4);
  EXPECT_EQ(r.gpu_slots_per_node(4), 1);
  EXPECT_EQ(r.gpu_slots_per_node(8), 2);
  EXPECT_EQ(r.gpu_slots_per_node(1), 1);  // GPUs not shared: a whole one
  p.device = gj::Device::cpu;
  p.ranks = 4;
  r = gj::footprint(p);
  EXPECT_EQ(r.gpus, 0);
  EXPECT_EQ(r.cores, 8);
  EXPECT_EQ(r.gpu_share, 1);
  EXPECT_EQ(r.gpu_slots_per_node(4), 0);
}

// The device is typed in JobParams and its name everywhere else: a job file, get_param, --set.
TEST_F(JobsJobFile, DeviceIsItsName) {
  gj::JobParams p;
  EXPECT_EQ(p.device, gj::Device::cpu);
  EXPECT_EQ(gj::get_param(p, "device"), gj::Value{std::string("cpu")});
  EXPECT_TRUE(gj::set_param(p, "device", gj::Value{std::string("gpu")}));
  EXPECT_EQ(p.device, gj::Device::gpu);
  EXPECT_FALSE(gj::set_param(p, "device", gj::Value{std::string("tpu")}));
  EXPECT_EQ(p.device, gj::Device::gpu);
  EXPECT_NE(gj::canonical_json(p).find("\"device\":\"gpu\""), std::string::npos);
  EXPECT_EQ(gj::find_param("device")->choices, (std::vector<std::string>{"cpu", "gpu"}));
  EXPECT_EQ(gj::to_struct(gj::from_struct(p)), p);
}

// The one JSON escaper behind every hand-built JSON file (job files, state, Slurm status, traces).
TEST(JobsJson, EscapeQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(gridrun::base::json_escape("plain text"), "plain text");
  EXPECT_EQ(gridrun::base::json_escape("a\"b\\c\nd\te\x01"
                                       "f"),
            "a\\\"b\\\\c\\nd\\te\\u0001f");
  EXPECT_EQ(gridrun::base::json_escape("µs"), "µs");  // UTF-8 passes through
}

TEST_F(JobsJobFile, ExpandedJobCarriesTypedParamsAndCanonicalText) {
  gj::Job j = sample();
  EXPECT_EQ(j.canonical, gj::canonical_json(j.params));  // rendered once, by the expander
  EXPECT_EQ(j.params.model, "lenet");
  EXPECT_EQ(j.params.global_batch, 64);
  // The job file holds that text byte for byte, and reading it back fills every field again.
  EXPECT_NE(gj::job_to_json(j).find(",\"params\":" + j.canonical + ",\"meta\":"), std::string::npos);
  gj::Job back = gj::job_from_json(gj::job_to_json(j), "inline");
  EXPECT_EQ(back.canonical, j.canonical);
  EXPECT_EQ(gj::from_struct(back.params), gj::from_struct(j.params));
  // A job built by hand without the canonical text is written from its params.
  gj::Job bare;
  bare.id = "x";
  bare.params = j.params;
  EXPECT_NE(gj::job_to_json(bare).find(j.canonical), std::string::npos);
  EXPECT_EQ(gj::make_job("r", 3, j.params).canonical, j.canonical);
  EXPECT_EQ(gj::make_job("r", 3, j.params).id, j.id);
}

TEST_F(JobsJobFile, ReadErrorOfMalformedJsonNamesLineAndColumn) {
  EXPECT_EQ(read_error("{\"id\": \"a\",\n \"run\": }").rfind("FILE:2:", 0), 0u)
      << read_error("{\"id\": \"a\",\n \"run\": }");
}

// Command jobs (jobs/command.hpp): placeholders, the stored forms, the program's files and the argv
// gridrun-exec starts, against real files in a temporary folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gridrun/jobs/command.hpp"
#include "gridrun/jobs/params.hpp"

namespace gj = gridrun::jobs;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "gridrun-cmd-XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp");
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name, const std::string& text = "print(1)\n") const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }
  std::string str() const { return path_.string(); }

 private:
  fs::path path_;
};

TEST(Command, SubstituteParametersFactsAndBraces) {
  gj::JobParams p;
  p.lr = 0.05;
  p.batch_per_rank = 64;
  p.nesterov = true;
  const gj::Params v = gj::from_struct(p);
  EXPECT_EQ(gj::substitute("--lr={lr}", &v, "abc", "r"), "--lr=0.05");
  EXPECT_EQ(gj::substitute("{batch_per_rank}x{nesterov}", &v, "abc", "r"), "64xtrue");
  EXPECT_EQ(gj::substitute("ckpt-{id}-{run}", &v, "abc", "r"), "ckpt-abc-r");
  EXPECT_EQ(gj::substitute("{{literal}}", &v, "abc", "r"), "{literal}");
  EXPECT_THROW(gj::substitute("{nope}", &v, "abc", "r"), std::invalid_argument);
  EXPECT_THROW(gj::substitute("{lr", &v, "abc", "r"), std::invalid_argument);
}

TEST(Command, StoredFormsRoundTrip) {
  const std::vector<std::string> argv{"python3", "t.py", "--name", "a \"quoted\" {lr}"};
  EXPECT_EQ(gj::command_from_json(gj::command_to_json(argv)), argv);
  const std::vector<std::pair<std::string, std::string>> env{{"A", "1"}, {"B", "x y"}};
  EXPECT_EQ(gj::env_from_json(gj::env_to_json(env)), env);
  EXPECT_TRUE(gj::env_from_json("").empty());
  EXPECT_THROW(gj::command_from_json("[]"), std::invalid_argument);
  EXPECT_THROW(gj::command_from_json("[1]"), std::invalid_argument);
}

TEST(Command, FilesAreTheArgumentsThatNameFiles) {
  TempDir d;
  const std::string script = d.file("train.py"), data = d.file("cfg.json", "{}");
  const auto files =
      gj::command_files({"python3", "train.py", "--cfg", "cfg.json", "--out", "x-{seed}", "--lr"}, d.str());
  EXPECT_EQ(files, (std::vector<std::string>{script, data}));
}

TEST(Command, ProblemsWithTheProgram) {
  TempDir d;
  d.file("train.py");
  int i = -1;
  EXPECT_EQ(gj::command_problem({"python3", "-u", "train.py"}, d.str(), &i), "");
  EXPECT_NE(gj::command_problem({"python3", "nope.py"}, d.str(), &i).find("no script 'nope.py'"),
            std::string::npos);
  EXPECT_EQ(i, 1);
  EXPECT_EQ(gj::command_problem({"python3", "-m", "mypkg.train"}, d.str(), &i), "");
  EXPECT_NE(gj::command_problem({"./run.sh"}, d.str(), &i).find("no program './run.sh'"), std::string::npos);
  EXPECT_NE(gj::command_problem({"no-such-program-gridrun"}, d.str(), &i).find("on PATH"), std::string::npos);
  EXPECT_EQ(i, 0);
}

TEST(Command, ResolvedArgvHasAbsoluteFilesAndValues) {
  TempDir d;
  const std::string script = d.file("train.py");
  gj::JobParams p;
  p.model = "command";
  p.seed = 3;
  p.command = gj::command_to_json({"python3", "train.py", "--seed", "{seed}", "--out", "out-{id}"});
  p.command_dir = d.str();
  EXPECT_EQ(gj::resolve_command(p, "0123456789ab", "r"),
            (std::vector<std::string>{"python3", script, "--seed", "3", "--out", "out-0123456789ab"}));
}

}  // namespace

// Corpus replay: every input under tests/fuzz/corpus/<target>/ (each one crashed or hung a target
// once, or is a seed worth keeping) goes through its target in the normal build, so CI re-checks
// them without clang or libFuzzer. Label unit. A crash here is a crash of this test; an exception
// outside the target's contract fails the input by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "targets.hpp"

namespace fs = std::filesystem;
using gridrun::fuzz::Target;

namespace {

std::vector<std::uint8_t> bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class Replay : public ::testing::TestWithParam<Target> {};

// corpus/<target>/EXPECTED: one line per input, "NAME accepted|rejected|damaged [TEXT]": the verdict
// it must get, and for an error a text its message must contain.
std::map<std::string, std::pair<std::string, std::string>> expected_verdicts(const fs::path& dir) {
  std::map<std::string, std::pair<std::string, std::string>> out;
  std::ifstream f(dir / "EXPECTED");
  for (std::string line; std::getline(f, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream is(line);
    std::string name, outcome, text;
    is >> name >> outcome;
    std::getline(is >> std::ws, text);
    out[name] = {outcome, text};
  }
  return out;
}

TEST_P(Replay, CorpusKeepsTheContract) {
  const Target t = GetParam();
  const fs::path dir = fs::path(FUZZ_CORPUS_DIR) / t.name;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  const auto expected = expected_verdicts(dir);
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name[0] == '.' || name == "EXPECTED") continue;
    ++n;
    const auto want = expected.find(name);
    const auto b = bytes_of(e.path());
    try {
      const gridrun::fuzz::Verdict v = t.run(b.data(), b.size(), gridrun::fuzz::TargetOptions{});
      std::printf("%s/%s: %s %s\n", t.name, name.c_str(), gridrun::fuzz::to_string(v.outcome),
                  v.message.c_str());
      if (want == expected.end()) {
        ADD_FAILURE() << e.path() << ": no line in " << (dir / "EXPECTED") << " says what it must give";
        continue;
      }
      EXPECT_EQ(gridrun::fuzz::to_string(v.outcome), want->second.first) << e.path() << ": " << v.message;
      if (!want->second.second.empty()) {
        EXPECT_NE(v.message.find(want->second.second), std::string::npos)
            << e.path() << ": expected an error with '" << want->second.second << "', got: " << v.message;
      }
    } catch (const std::exception& ex) {
      ADD_FAILURE() << e.path() << ": " << ex.what();
    }
  }
  std::printf("%s: %zu input(s) replayed\n", t.name, n);
  EXPECT_GT(n, 0u) << "no inputs under " << dir;
  EXPECT_EQ(expected.size(), n) << dir / "EXPECTED"
                                << " names inputs that are not there";
}

// Empty and tiny inputs, the first things any fuzzer tries.
TEST_P(Replay, EmptyAndTinyInputs) {
  const Target t = GetParam();
  for (const std::vector<std::uint8_t>& b :
       {std::vector<std::uint8_t>{}, std::vector<std::uint8_t>{0}, std::vector<std::uint8_t>{'{'},
        std::vector<std::uint8_t>{'\n', ':', '-'}, std::vector<std::uint8_t>{0x89, 'H', 'D', 'F'}})
    EXPECT_NO_THROW(t.run(b.data(), b.size(), gridrun::fuzz::TargetOptions{})) << t.name;
}

INSTANTIATE_TEST_SUITE_P(Targets, Replay, ::testing::ValuesIn(gridrun::fuzz::targets()),
                         [](const ::testing::TestParamInfo<Target>& i) { return std::string(i.param.name); });

}  // namespace

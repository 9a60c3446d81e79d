// Corpus replay: every input under tests/fuzz/corpus/<target>/ (each one crashed or hung a target
// once, or is a seed worth keeping) goes through its target in the normal build, so CI re-checks
// them without clang or libFuzzer. Label unit. A crash here is a crash of this test; an exception
// outside the target's contract fails the input by name.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
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

TEST_P(Replay, CorpusKeepsTheContract) {
  const Target t = GetParam();
  const fs::path dir = fs::path(FUZZ_CORPUS_DIR) / t.name;
  ASSERT_TRUE(fs::is_directory(dir)) << dir;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file() || e.path().filename().string()[0] == '.') continue;
    const auto b = bytes_of(e.path());
    try {
      t.run(b.data(), b.size(), gridrun::fuzz::TargetOptions{});
    } catch (const std::exception& ex) {
      ADD_FAILURE() << e.path() << ": " << ex.what();
    }
    ++n;
  }
  std::printf("%s: %zu input(s) replayed\n", t.name, n);
  EXPECT_GT(n, 0u) << "no inputs under " << dir;
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

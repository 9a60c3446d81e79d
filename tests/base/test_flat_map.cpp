// base::FlatMap: the sorted-vector map behind each job's summary and attributes (issue 60). It
// must behave as the std::map it replaced where the code uses it: key order, lookups, inserts that
// keep the first value, operator[] and assignment, erase; checked against std::map on the same
// operations.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gridrun/base/flat_map.hpp"
#include "gridrun/base/splitmix.hpp"

using gridrun::base::FlatMap;

namespace {

template <class M>
std::vector<std::pair<std::string, double>> items(const M& m) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [k, v] : m) out.emplace_back(k, v);
  return out;
}

TEST(FlatMap, KeepsKeyOrderWhateverTheInsertOrder) {
  FlatMap<std::string, double> m;
  m["samples_per_s"] = 3;
  m.emplace("final_test_acc", 1);
  m.insert_or_assign("wall_s", 2);
  m["a_first"] = 4;
  std::vector<std::string> keys;
  for (const auto& kv : m) keys.push_back(kv.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"a_first", "final_test_acc", "samples_per_s", "wall_s"}));
}

TEST(FlatMap, InsertsKeepTheFirstValueAssignmentsReplaceIt) {
  FlatMap<std::string, double> m;
  EXPECT_TRUE(m.emplace("k", 1.0).second);
  const auto [it, inserted] = m.emplace("k", 2.0);
  EXPECT_FALSE(inserted);
  EXPECT_EQ(it->second, 1.0);
  EXPECT_FALSE(m.insert_or_assign("k", 3.0).second);
  EXPECT_EQ(m.at("k"), 3.0);
  m["k"] = 4.0;
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.at("k"), 4.0);
}

TEST(FlatMap, LooksUpByAnyComparableKeyAndSaysWhatIsMissing) {
  const FlatMap<std::string, double> m{{"b", 2}, {"a", 1}};
  EXPECT_EQ(m.count(std::string_view("a")), 1u);
  EXPECT_EQ(m.count("c"), 0u);
  EXPECT_TRUE(m.contains(std::string("b")));
  EXPECT_EQ(m.find("zz"), m.end());
  EXPECT_EQ(m.find("0"), m.end());  // before every key
  EXPECT_THROW((void)m.at("c"), std::out_of_range);
}

TEST(FlatMap, ErasesByKeyAndByPosition) {
  FlatMap<std::string, double> m{{"a", 1}, {"b", 2}, {"c", 3}};
  EXPECT_EQ(m.erase("b"), 1u);
  EXPECT_EQ(m.erase("b"), 0u);
  auto it = m.erase(m.find("a"));
  ASSERT_NE(it, m.end());
  EXPECT_EQ(it->first, "c");
  EXPECT_EQ(items(m), (std::vector<std::pair<std::string, double>>{{"c", 3}}));
  FlatMap<std::string, double> n{{"param.a", 1}, {"param.b", 2}, {"params", 3}, {"wall_s", 4}};
  EXPECT_EQ(n.erase_if([](const auto& kv) { return kv.first.rfind("param", 0) == 0; }), 3u);
  EXPECT_EQ(items(n), (std::vector<std::pair<std::string, double>>{{"wall_s", 4}}));
}

// Random operations on both maps: the same contents in the same order after each.
TEST(FlatMap, AgreesWithStdMapOverRandomOperations) {
  std::uint64_t rng = 7;
  std::map<std::string, double> ref;
  FlatMap<std::string, double> m;
  for (int step = 0; step < 5000; ++step) {
    const std::string key = "key" + std::to_string(gridrun::base::splitmix64_next(rng) % 60);
    const double value = static_cast<double>(step);
    switch (gridrun::base::splitmix64_next(rng) % 4) {
      case 0: EXPECT_EQ(m.emplace(key, value).second, ref.emplace(key, value).second); break;
      case 1: m[key] = value, ref[key] = value; break;
      case 2: EXPECT_EQ(m.erase(key), ref.erase(key)); break;
      default: EXPECT_EQ(m.count(key), ref.count(key)); break;
    }
    ASSERT_EQ(items(m), items(ref)) << "after step " << step;
  }
  const FlatMap<std::string, double> copy = m;
  EXPECT_EQ(copy, m);
}

}  // namespace

// Property tests of the placement engine on the simulator: random clusters and random job mixes,
// many seeds. What must hold for every policy: no core or GPU is held by two running jobs, every
// job gets exactly what it asked for, every feasible job is placed, phases never overlap, and
// --max-parallel is respected. Policy-specific guarantees are tested below each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>

#include "gridrun/base/text.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/scheduler/simulate.hpp"

using namespace gridrun::scheduler;

namespace {

Node make_node(const std::string& name, int cores, int gpus) {
  Node n;
  n.name = name;
  for (int i = 0; i < cores; ++i) n.cores.push_back(i);
  for (int i = 0; i < gpus; ++i) n.gpus.push_back(std::to_string(i));
  return n;
}

Cluster random_cluster(std::mt19937& rng) {
  Cluster c;
  const int nodes = std::uniform_int_distribution<int>(1, 6)(rng);
  const bool gpus = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
  for (int i = 0; i < nodes; ++i)
    c.nodes.push_back(make_node("n" + std::to_string(i), std::uniform_int_distribution<int>(1, 12)(rng),
                                gpus ? std::uniform_int_distribution<int>(0, 4)(rng) : 0));
  c.source = "random";
  return c;
}

bool feasible(const Cluster& c, const Request& r) {
  for (const auto& n : c.nodes)
    if (static_cast<int>(n.gpus.size()) >= r.gpus && static_cast<int>(n.cores.size()) >= r.cores) return true;
  return false;
}

std::vector<SimJob> random_jobs(std::mt19937& rng, const Cluster& c, bool only_feasible, int max_jobs = 40) {
  std::vector<SimJob> jobs;
  const int n = std::uniform_int_distribution<int>(1, max_jobs)(rng);
  const bool has_gpus = c.total_gpus() > 0;
  for (int i = 0; i < n; ++i) {
    SimJob j;
    j.id = "job" + std::to_string(i);
    j.req.ranks = std::uniform_int_distribution<int>(1, 4)(rng);
    j.req.threads_per_rank = std::uniform_int_distribution<int>(1, 3)(rng);
    j.req.cores = j.req.ranks * j.req.threads_per_rank;
    j.req.gpus = has_gpus && std::uniform_int_distribution<int>(0, 1)(rng) ? j.req.ranks : 0;
    j.duration_s = std::uniform_int_distribution<int>(1, 20)(rng);  // integers: many ties
    if (only_feasible && !feasible(c, j.req)) continue;
    jobs.push_back(j);
  }
  if (jobs.empty()) {
    SimJob j;
    j.id = "tiny";
    j.duration_s = 1;
    jobs.push_back(j);
  }
  return jobs;
}

// No resource is held twice at any instant; allocations match the requests.
void check_disjoint(const Cluster& c, const std::vector<SimJob>& jobs, const SimResult& r) {
  for (std::size_t a = 0; a < jobs.size(); ++a) {
    const auto& pa = r.placements[a];
    ASSERT_GE(pa.start_s, 0) << "job " << a << " never placed";
    ASSERT_GE(pa.alloc.node, 0);
    ASSERT_EQ(static_cast<int>(pa.alloc.cores.size()), jobs[a].req.cores);
    ASSERT_EQ(static_cast<int>(pa.alloc.gpus.size()), jobs[a].req.gpus);
    ASSERT_EQ(std::set<int>(pa.alloc.cores.begin(), pa.alloc.cores.end()).size(), pa.alloc.cores.size());
    for (int core : pa.alloc.cores) ASSERT_LT(core, static_cast<int>(c.nodes[pa.alloc.node].cores.size()));
    for (int g : pa.alloc.gpus) ASSERT_LT(g, static_cast<int>(c.nodes[pa.alloc.node].gpus.size()));
    for (std::size_t b = a + 1; b < jobs.size(); ++b) {
      const auto& pb = r.placements[b];
      if (pa.alloc.node != pb.alloc.node) continue;
      const bool overlap = pa.start_s < pb.end_s && pb.start_s < pa.end_s;
      if (!overlap) continue;
      for (int core : pa.alloc.cores)
        ASSERT_EQ(std::count(pb.alloc.cores.begin(), pb.alloc.cores.end(), core), 0)
            << "core " << core << " of node " << pa.alloc.node << " given to jobs " << a << " and " << b;
      for (int g : pa.alloc.gpus)
        ASSERT_EQ(std::count(pb.alloc.gpus.begin(), pb.alloc.gpus.end(), g), 0)
            << "GPU " << g << " given to jobs " << a << " and " << b;
    }
  }
}

int max_concurrent(const SimResult& r) {
  std::vector<std::pair<double, int>> ev;
  for (const auto& p : r.placements) {
    ev.emplace_back(p.start_s, +1);
    ev.emplace_back(p.end_s, -1);
  }
  std::sort(ev.begin(), ev.end());  // ends (-1) sort before starts (+1) at equal times
  int cur = 0, best = 0;
  for (const auto& e : ev) best = std::max(best, cur += e.second);
  return best;
}

// Simulates `n` random mixes (seeds 1..n, generator seeded with seed + offset) under `policy` and
// hands each to `check(jobs, result, seed)`.
template <class Check>
void for_random_mixes(unsigned n, unsigned offset, const std::string& policy, Check check) {
  for (unsigned seed = 1; seed <= n; ++seed) {
    std::mt19937 rng(seed + offset);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, true);
    SimOptions o;
    o.policy = policy;
    check(jobs, simulate(c, jobs, o), seed);
  }
}

}  // namespace

class AllPolicies : public ::testing::TestWithParam<std::string> {};

TEST_P(AllPolicies, RandomMixesNeverShareResourcesAndPlaceEveryFeasibleJob) {
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, true);
    if (!feasible(c, jobs[0].req)) continue;
    SimOptions o;
    o.policy = GetParam();
    const SimResult r = simulate(c, jobs, o);
    SCOPED_TRACE("seed " + std::to_string(seed));
    check_disjoint(c, jobs, r);
    double work_end = 0;
    for (const auto& p : r.placements) work_end = std::max(work_end, p.end_s);
    EXPECT_DOUBLE_EQ(r.makespan_s, work_end);
    if (HasFatalFailure()) return;
  }
}

TEST_P(AllPolicies, WrongEstimatesStillPlaceEverythingDisjointly) {
  // The real executor only has estimates; a job may run 10x longer or shorter than believed.
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed * 7919);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, true);
    for (auto& j : jobs) j.est_s = j.duration_s * std::uniform_real_distribution<double>(0.1, 10.0)(rng);
    SimOptions o;
    o.policy = GetParam();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const SimResult r = simulate(c, jobs, o);
    check_disjoint(c, jobs, r);
    if (HasFatalFailure()) return;
  }
}

TEST_P(AllPolicies, MaxParallelIsRespected) {
  for (unsigned seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed + 1000);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, true);
    SimOptions o;
    o.policy = GetParam();
    o.max_parallel = std::uniform_int_distribution<std::size_t>(1, 3)(rng);
    const SimResult r = simulate(c, jobs, o);
    EXPECT_LE(max_concurrent(r), static_cast<int>(o.max_parallel)) << "seed " << seed;
  }
}

TEST_P(AllPolicies, PhasesRunOneAfterAnother) {
  for (unsigned seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed + 5000);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, true);
    for (auto& j : jobs) j.phase = std::to_string(j.req.ranks);
    SimOptions o;
    o.policy = GetParam();
    const SimResult r = simulate(c, jobs, o);
    for (std::size_t k = 1; k < r.phases.size(); ++k) {
      for (std::size_t i : r.phases[k].jobs) {
        EXPECT_GE(r.placements[i].start_s, r.phases[k - 1].end_s) << "seed " << seed;
        EXPECT_EQ(jobs[i].phase, r.phases[k].value);
      }
    }
    double sum = 0;
    for (const auto& ph : r.phases) sum += ph.makespan_s;
    EXPECT_DOUBLE_EQ(sum, r.makespan_s) << "seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Scheduler, AllPolicies, ::testing::Values("packed", "fifo", "exclusive"));

TEST(Placement, InfeasibleJobsAreRejected) {
  int rejected = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed + 99);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, false);
    bool any_bad = false;
    for (const auto& j : jobs) any_bad |= !feasible(c, j.req);
    if (!any_bad) continue;
    ++rejected;
    EXPECT_THROW(simulate(c, jobs, SimOptions{}), std::invalid_argument) << "seed " << seed;
  }
  EXPECT_GT(rejected, 50);  // the generator does produce infeasible mixes
}

TEST(Placement, ExclusiveRunsOneJobPerNode) {
  for_random_mixes(200, 3, "exclusive",
                   [](const std::vector<SimJob>& jobs, const SimResult& r, unsigned seed) {
                     for (std::size_t a = 0; a < jobs.size(); ++a)
                       for (std::size_t b = a + 1; b < jobs.size(); ++b) {
                         const auto& pa = r.placements[a];
                         const auto& pb = r.placements[b];
                         if (pa.alloc.node == pb.alloc.node) {
                           EXPECT_FALSE(pa.start_s < pb.end_s && pb.start_s < pa.end_s) << "seed " << seed;
                         }
                       }
                   });
}

TEST(Placement, FifoStartsJobsInGridOrder) {
  for_random_mixes(200, 11, "fifo", [](const std::vector<SimJob>& jobs, const SimResult& r, unsigned seed) {
    for (std::size_t i = 1; i < jobs.size(); ++i)
      EXPECT_LE(r.placements[i - 1].start_s, r.placements[i].start_s) << "seed " << seed;
  });
}

TEST(Placement, PackedReservesForTheOldestBlockedJob) {
  // One node with 4 cores and 1 GPU: a long 1-GPU job starts first (largest shape), a 4-core job
  // waits, and a stream of short 1-core jobs would keep the node busy forever under greedy
  // backfill. The reservation lets the short jobs use the 3 idle cores only while they end before
  // the long job does, so the 4-core job starts the moment the long one ends.
  Cluster c;
  c.nodes.push_back(make_node("n0", 4, 1));
  std::vector<SimJob> jobs;
  SimJob first;
  first.id = "long";
  first.req.gpus = 1;
  first.duration_s = 10;
  jobs.push_back(first);
  SimJob big;
  big.id = "big";
  big.req.ranks = 4;
  big.req.cores = 4;
  big.duration_s = 5;
  jobs.push_back(big);
  for (int i = 0; i < 100; ++i) {
    SimJob s;
    s.id = "small" + std::to_string(i);
    s.duration_s = 3;
    jobs.push_back(s);
  }
  SimOptions o;
  o.policy = "packed";
  const SimResult r = simulate(c, jobs, o);
  EXPECT_DOUBLE_EQ(r.placements[1].start_s, 10.0);
  // and backfill did use the idle cores before that
  int early = 0;
  for (std::size_t i = 2; i < jobs.size(); ++i) early += r.placements[i].end_s <= 10.0;
  EXPECT_EQ(early, 9);  // 3 cores x 3 rounds of 3 s before t = 10
}

TEST(Placement, PackedStartsLargestFittingJobFirst) {
  Cluster c;
  c.nodes.push_back(make_node("n0", 8, 4));
  std::vector<SimJob> jobs;
  for (int g : {1, 1, 4, 2}) {
    SimJob j;
    j.id = "g" + std::to_string(g) + "_" + std::to_string(jobs.size());
    j.req.ranks = g;
    j.req.gpus = g;
    j.req.cores = g;
    j.duration_s = 10;
    jobs.push_back(j);
  }
  SimOptions o;
  const SimResult r = simulate(c, jobs, o);
  EXPECT_DOUBLE_EQ(r.placements[2].start_s, 0.0);  // the 4-GPU job goes first
  EXPECT_DOUBLE_EQ(r.placements[0].start_s, 10.0);
  EXPECT_EQ(r.placements[2].alloc.gpus, (std::vector<int>{0, 1, 2, 3}));
}

// What holds between packed and fifo. Strict per-instance dominance (packed makespan <= fifo
// makespan for every input) does not hold for backfill, nor for any online list heuristic:
// starting the largest job first can fragment a node so that a later job waits (seed 33 of the
// generator below: packed 30 s vs fifo 20 s; see docs/scheduler.md). What we guarantee and test:
//  1. jobs of one shape: packed and fifo produce the same schedule (no reordering is possible);
//  2. over random mixes, packed is never worse in total, and better far more often than worse.
TEST(Placement, PackedEqualsFifoForOneShape) {
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng(seed + 777);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, true);
    for (auto& j : jobs) j.req = jobs[0].req;
    const SimResult p = simulate(c, jobs, SimOptions{"packed", 0});
    const SimResult f = simulate(c, jobs, SimOptions{"fifo", 0});
    EXPECT_DOUBLE_EQ(p.makespan_s, f.makespan_s) << "seed " << seed;
    for (std::size_t i = 0; i < jobs.size(); ++i)
      EXPECT_DOUBLE_EQ(p.placements[i].start_s, f.placements[i].start_s) << "seed " << seed;
  }
}

TEST(Placement, PackedMakespanNotWorseThanFifoOverRandomMixes) {
  double sum_packed = 0, sum_fifo = 0;
  int better = 0, worse = 0;
  for (unsigned seed = 1; seed <= 500; ++seed) {
    std::mt19937 rng(seed);
    const Cluster c = random_cluster(rng);
    auto jobs = random_jobs(rng, c, true);
    const double p = simulate(c, jobs, SimOptions{"packed", 0}).makespan_s;
    const double f = simulate(c, jobs, SimOptions{"fifo", 0}).makespan_s;
    sum_packed += p;
    sum_fifo += f;
    better += p < f;
    worse += p > f;
  }
  EXPECT_LE(sum_packed, sum_fifo);
  EXPECT_GT(better, 10 * worse) << "better " << better << ", worse " << worse;
}

// jobs_per_gpu: resolve_cluster makes each GPU `jobs_per_gpu` slots, the first n slots being the n
// distinct GPUs; four one-slot jobs then share GPU 0 of a 1-GPU machine, and a whole-GPU job (all
// four slots) never runs beside them. (The real side-by-side run is scheduler_e2e_gpu_share.)
TEST(GpuSharing, SlotsMapBackToTheirGpu) {
  ResourceOptions o;
  o.gpus = 2;
  o.cores = 8;
  o.jobs_per_gpu = 4;
  const Cluster c = resolve_cluster(o);
  ASSERT_EQ(c.nodes.size(), 1u);
  const std::vector<std::string> want{"0", "1", "0", "1", "0", "1", "0", "1"};
  EXPECT_EQ(c.nodes[0].gpus, want);
  // Headers count physical GPUs (the lent H200 printed "4 GPUs" for one GPU of 4 slots).
  EXPECT_EQ(c.gpus_text(), "2 GPUs (4 slots each)");
  ResourceOptions one_gpu = o;
  one_gpu.gpus = 1;
  EXPECT_EQ(resolve_cluster(one_gpu).gpus_text(), "1 GPU (4 slots each)");
  ClusterState st(c);
  Request one;
  one.gpus = 1;
  one.cores = 1;
  std::set<std::string> seen;
  for (int k = 0; k < 8; ++k) {
    const int node = st.find(one);
    ASSERT_EQ(node, 0) << "slot " << k;
    const Allocation a = st.allocate(node, one, static_cast<std::size_t>(k), 1.0);
    const std::string g = gpus_string(c, a);
    EXPECT_TRUE(g == "0" || g == "1") << g;
    seen.insert(g);
  }
  EXPECT_EQ(seen.size(), 2u);  // both GPUs used, four jobs each
  EXPECT_EQ(st.find(one), -1);
  Request whole;
  whole.gpus = 4;  // a jobs_per_gpu=1 job in a grid of 4 slots per GPU
  whole.cores = 1;
  EXPECT_EQ(st.find(whole), -1);
}

TEST(GpuSharing, OutOfRangeIsBadInput) {
  ResourceOptions o;
  o.gpus = 1;
  o.cores = 2;
  o.jobs_per_gpu = 65;
  EXPECT_THROW(resolve_cluster(o), std::invalid_argument);
}

// On a machine with GPUs the detected devices become one slot each by default (label gpu too).
TEST(GpuSharing, DetectedGpusArePlaceable) {
  const Cluster c = resolve_cluster(ResourceOptions{});
  if (c.nodes.empty() || c.nodes[0].gpus.empty())
    GTEST_SKIP() << "no GPU: none detected (" << c.source << ")";
  ClusterState st(c);
  Request one;
  one.gpus = 1;
  one.cores = 1;
  const Allocation a = st.allocate(st.find(one), one, 0, 1.0);
  EXPECT_EQ(gpus_string(c, a), c.nodes[0].gpus[0]);
}

// Planning limits of a cluster file (fuzzing found a 535,636-node file planned for seconds, issue
// 24): an error naming the file, line and key, not minutes of work.
TEST(ClusterFile, TooManyNodesOrCoresIsAnErrorNamingTheKey) {
  auto message = [](const std::string& yaml) {
    try {
      load_cluster_string(yaml, "big.yaml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message("nodes:\n  - {name: a, count: 16384, cores: 2}\n"), "accepted");  // the limit itself
  const std::string nodes = message(
      "nodes:\n  - {name: a, count: 10000, cores: 2}\n"
      "  - {name: b, count: 10000, cores: 2}\n");
  EXPECT_NE(nodes.find("big.yaml:3:"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("nodes[1].count"), std::string::npos) << nodes;
  EXPECT_NE(nodes.find("16384 nodes"), std::string::npos) << nodes;
  const std::string cores = message("nodes:\n  - {name: a, count: 1000, cores: 4096}\n");
  EXPECT_NE(cores.find("nodes[0].cores"), std::string::npos) << cores;
  EXPECT_NE(cores.find("2097152 cores"), std::string::npos) << cores;
}

// Multi-node jobs (issue 23): a job with Request::nodes = k holds the same share on k distinct
// nodes at once. Random mixes of one-node and multi-node jobs, every policy: every job placed,
// on distinct nodes with exactly its share each, and no core or GPU held by two jobs at once.
namespace {

std::vector<const Allocation*> pieces(const Allocation& a) {
  std::vector<const Allocation*> out{&a};
  for (const auto& p : a.peers) out.push_back(&p);
  return out;
}

}  // namespace

TEST_P(AllPolicies, MultiNodeJobsHoldTheirShareOnDistinctNodesDisjointly) {
  int multi_placed = 0;
  for (unsigned seed = 1; seed <= 150; ++seed) {
    std::mt19937 rng(seed + 500);
    Cluster c;
    const int n_nodes = std::uniform_int_distribution<int>(2, 5)(rng);
    for (int i = 0; i < n_nodes; ++i) c.nodes.push_back(make_node("n" + std::to_string(i), 4, 2));
    c.source = "random";
    std::vector<SimJob> jobs;
    const int n = std::uniform_int_distribution<int>(2, 25)(rng);
    for (int i = 0; i < n; ++i) {
      SimJob j;
      j.id = "job" + std::to_string(i);
      j.req.nodes = std::uniform_int_distribution<int>(1, n_nodes)(rng);
      j.req.ranks = std::uniform_int_distribution<int>(1, 2)(rng);  // per node
      j.req.cores = j.req.ranks;
      j.req.gpus = std::uniform_int_distribution<int>(0, 1)(rng) ? j.req.ranks : 0;
      j.duration_s = std::uniform_int_distribution<int>(1, 20)(rng);
      jobs.push_back(j);
    }
    SimOptions o;
    o.policy = GetParam();
    const SimResult r = simulate(c, jobs, o);
    for (std::size_t a = 0; a < jobs.size(); ++a) {
      const auto& pa = r.placements[a];
      ASSERT_GE(pa.start_s, 0) << "seed " << seed << ": job " << a << " never placed";
      const auto mine = pieces(pa.alloc);
      ASSERT_EQ(static_cast<int>(mine.size()), jobs[a].req.nodes) << "seed " << seed;
      std::set<int> nodes;
      for (const Allocation* p : mine) {
        nodes.insert(p->node);
        ASSERT_EQ(static_cast<int>(p->cores.size()), jobs[a].req.cores);
        ASSERT_EQ(static_cast<int>(p->gpus.size()), jobs[a].req.gpus);
      }
      ASSERT_EQ(nodes.size(), mine.size()) << "seed " << seed << ": job " << a << " uses a node twice";
      if (jobs[a].req.nodes > 1) ++multi_placed;
      for (std::size_t b = a + 1; b < jobs.size(); ++b) {
        const auto& pb = r.placements[b];
        if (!(pa.start_s < pb.end_s && pb.start_s < pa.end_s)) continue;
        for (const Allocation* x : mine)
          for (const Allocation* y : pieces(pb.alloc)) {
            if (x->node != y->node) continue;
            for (int core : x->cores)
              ASSERT_EQ(std::count(y->cores.begin(), y->cores.end(), core), 0)
                  << "seed " << seed << ": core " << core << " of node " << x->node << " in jobs " << a
                  << ", " << b;
            for (int g : x->gpus)
              ASSERT_EQ(std::count(y->gpus.begin(), y->gpus.end(), g), 0)
                  << "seed " << seed << ": GPU " << g << " of node " << x->node << " in jobs " << a << ", "
                  << b;
          }
      }
    }
  }
  EXPECT_GT(multi_placed, 100);  // the property was exercised
}

TEST(Placement, MultiNodeJobNeedsThatManyNodes) {
  Cluster c;
  c.nodes = {make_node("a", 2, 0), make_node("b", 2, 0), make_node("c", 1, 0)};
  c.source = "test";
  gridrun::jobs::Job job;
  job.id = "span";
  job.params.ranks = 4;
  job.params.nodes = 2;
  job.params.threads_per_rank = 1;
  const Request r = request_for(job);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.cores, 2);
  EXPECT_TRUE(find_infeasible({job}, c).empty());
  job.params.nodes = 1;  // 4 cores on one node: none has them
  EXPECT_EQ(find_infeasible({job}, c).size(), 1u);
  job.params.ranks = 6;  // 2 per node on 3 nodes: node c has 1 core
  job.params.nodes = 3;
  const auto bad = find_infeasible({job}, c);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_NE(bad[0].reason.find("only 2 of the 3 nodes"), std::string::npos) << bad[0].reason;
  ClusterState st(c);
  EXPECT_EQ(st.find_nodes(request_for(job)), std::vector<int>{});
  job.params.ranks = 2;
  job.params.nodes = 2;
  EXPECT_EQ(st.find_nodes(request_for(job)), (std::vector<int>{0, 1}));
  const Allocation a = st.allocate(st.find_nodes(request_for(job)), request_for(job), 7, 1.0);
  EXPECT_EQ(nodes_string(c, a), "a+b");
  EXPECT_EQ(st.free_cores(0), 1);
  EXPECT_EQ(st.free_cores(1), 1);
  st.release(a, 7);
  EXPECT_EQ(st.free_cores(0), 2);
  EXPECT_EQ(st.free_cores(1), 2);
}

// Issue 45: a NaN duration (a damaged calibration.json) made a NaN end time, which never compared
// as reached, and `simulate` and `run` spun forever. The engine's input is now clamped or refused:
// every policy, fed NaN, infinities and negative figures, ends (under a ctest timeout) with a
// finite schedule or a clear error, never a hang.
TEST_P(AllPolicies, NaNAndInfiniteDurationsEndInAClearErrorOrAFiniteSchedule) {
  Cluster c;
  c.nodes.push_back(make_node("a", 2, 0));
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto job = [](const std::string& id, double duration, double est = -1) {
    SimJob j;
    j.id = id;
    j.duration_s = duration;
    j.est_s = est;
    return j;
  };
  SimOptions o;
  o.policy = GetParam();
  // A NaN duration is an estimate that was never made: refused, naming the job.
  try {
    simulate(c, {job("j0", 1), job("j1", nan), job("j2", 2)}, o);
    ADD_FAILURE() << "a NaN duration was simulated";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("job j1 has no duration"), std::string::npos) << e.what();
  }
  // Infinities and negatives are clamped into [0, kMaxEngineSeconds]: a finite makespan.
  const SimResult r =
      simulate(c, {job("j0", inf), job("j1", -inf), job("j2", -5), job("j3", 1e300), job("j4", 3)}, o);
  EXPECT_TRUE(std::isfinite(r.makespan_s));
  EXPECT_GE(r.makespan_s, kMaxEngineSeconds);
  EXPECT_LE(r.makespan_s, 3 * kMaxEngineSeconds + 3);
  for (const auto& p : r.placements) {
    EXPECT_TRUE(std::isfinite(p.start_s) && std::isfinite(p.end_s));
    EXPECT_GE(p.end_s, p.start_s);
  }
  EXPECT_EQ(r.placements[1].end_s, r.placements[1].start_s);  // -inf: takes no time
  // NaN and infinite estimates (what the scheduler believes) leave the real durations in charge.
  const SimResult e =
      simulate(c, {job("j0", 1, nan), job("j1", 2, inf), job("j2", 3, -inf), job("j3", 4, nan)}, o);
  EXPECT_TRUE(std::isfinite(e.makespan_s));
  EXPECT_GE(e.makespan_s, 5);
  EXPECT_LE(e.makespan_s, 10);
}

TEST(Engine, ClampsEstimatesAndRefusesAClockThatIsNotANumber) {
  EXPECT_EQ(engine_seconds(std::numeric_limits<double>::quiet_NaN()), kMaxEngineSeconds);
  EXPECT_EQ(engine_seconds(std::numeric_limits<double>::infinity()), kMaxEngineSeconds);
  EXPECT_EQ(engine_seconds(-std::numeric_limits<double>::infinity()), 0);
  EXPECT_EQ(engine_seconds(-1), 0);
  EXPECT_EQ(engine_seconds(2.5), 2.5);
  Cluster c;
  c.nodes.push_back(make_node("a", 1, 0));
  Engine engine(c, EngineOptions{"packed", 0});
  Request r;
  engine.submit(QueuedJob{0, 0, r, std::numeric_limits<double>::quiet_NaN()});
  engine.submit(QueuedJob{1, 1, r, std::numeric_limits<double>::infinity()});
  EXPECT_THROW(engine.schedule(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  EXPECT_THROW(engine.schedule(std::numeric_limits<double>::infinity()), std::invalid_argument);
  ASSERT_EQ(engine.schedule(0).size(), 1u);
  // The running job's end (0 + its clamped estimate) is finite, so the reservation the second job
  // gets is ordered and finite.
  for (const auto& [end, key, node] : engine.state().by_end()) EXPECT_TRUE(std::isfinite(end)) << key << node;
  engine.finish(0);
  EXPECT_EQ(engine.schedule(1).size(), 1u);
  EXPECT_EQ(engine.pending(), 0u);
}

// The cost model's estimate is finite and > 0 whatever it is given.
TEST(Engine, CostModelEstimateIsFiniteForHostileInputs) {
  gridrun::jobs::JobParams p;
  p.epochs = std::numeric_limits<std::int64_t>::max();
  p.train_samples = std::numeric_limits<std::int64_t>::max();
  CostModel m;
  EXPECT_TRUE(std::isfinite(estimate_seconds(p, m)));
  m.startup_s = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(std::isfinite(estimate_seconds(p, m)));
  EXPECT_GT(estimate_seconds(p, m), 0);
  m = CostModel{};
  p.model = "torchscript";
  m.script_flops[script_cost_key(p)] = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isfinite(estimate_seconds(p, m)));
}

// A makespan at the engine's limit prints as a duration (issue 45: 1e300 s printed
// "makespan -2147483648d-8h" and -1e9 s "makespan ?").
TEST(Engine, HugeMakespansPrintAsDurations) {
  Cluster c;
  c.nodes.push_back(make_node("a", 1, 0));
  SimJob j;
  j.id = "j0";
  j.duration_s = 1e300;
  const SimResult r = simulate(c, {j}, SimOptions{});
  const std::string text = render_schedule(c, {j}, r, 100, 10);
  EXPECT_NE(text.find("makespan 11574d01h,"), std::string::npos) << text;
  EXPECT_EQ(gridrun::base::format_duration(1e16), "1.16e+11d");
  EXPECT_EQ(gridrun::base::format_duration(std::numeric_limits<double>::infinity()), "?");
  EXPECT_EQ(gridrun::base::format_duration(86400.0 * 3 + 3600 * 4 + 5), "3d04h");
}

namespace {
// Four 1-core jobs of 10 s on a 2-core node: two at a time. `key` per job; each saves 4 s warm.
std::vector<SimJob> warm_jobs(const std::vector<std::string>& keys) {
  std::vector<SimJob> jobs;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    SimJob j;
    j.id = "job" + std::to_string(i);
    j.req.ranks = j.req.threads_per_rank = j.req.cores = 1;
    j.duration_s = 10;
    j.launch_key = keys[i];
    j.warm_saving_s = 4;
    jobs.push_back(j);
  }
  return jobs;
}
}  // namespace

// --launch warm in the simulation (docs/scheduler.md, "Warm launches"): a job started on the cores
// where a job of its launch key ended takes its worker and saves its launch; cold, nothing changes.
TEST(WarmLaunches, AJobOnTheCoresOfAnEndedJobOfItsKeyStartsWarm) {
  Cluster c;
  c.nodes.push_back(make_node("n0", 2, 0));
  const auto jobs = warm_jobs({"k", "k", "k", "k"});
  SimOptions cold;
  EXPECT_DOUBLE_EQ(simulate(c, jobs, cold).makespan_s, 20.0);
  SimOptions warm;
  warm.warm = true;
  const SimResult r = simulate(c, jobs, warm);
  EXPECT_DOUBLE_EQ(r.makespan_s, 16.0);
  int started_warm = 0;
  for (const auto& p : r.placements) started_warm += p.warm ? 1 : 0;
  EXPECT_EQ(started_warm, 2);
}

TEST(WarmLaunches, AnotherKeyOnTheCoresOrAnIdleTimeRetiresTheWorker) {
  Cluster c;
  c.nodes.push_back(make_node("n0", 1, 0));
  SimOptions warm;
  warm.warm = true;
  // One core: k, then j (retires k's worker), then k again: all cold.
  EXPECT_DOUBLE_EQ(simulate(c, warm_jobs({"k", "j", "k"}), warm).makespan_s, 30.0);
  // k, k: the second is warm (10 + 6); the worker waited 0 s, within --worker-idle.
  EXPECT_DOUBLE_EQ(simulate(c, warm_jobs({"k", "k"}), warm).makespan_s, 16.0);
  // A worker that has left before the next job starts (idle time below 0: gone at once) saves nothing.
  warm.worker_idle_s = -1;
  EXPECT_DOUBLE_EQ(simulate(c, warm_jobs({"k", "k"}), warm).makespan_s, 20.0);
}

// Worker reuse is a placement preference (issue 59): two jobs of different processes end together
// on a 2-core node; the next job of each goes back to its own process's worker, not to the lowest
// free core (which would put each on the other's worker, retiring both).
TEST(WarmLaunches, AJobIsPlacedWhereAWorkerOfItsProcessWaits) {
  Cluster c;
  c.nodes.push_back(make_node("n0", 2, 0));
  const auto jobs = warm_jobs({"a", "b", "b", "a"});
  SimOptions warm;
  warm.warm = true;
  const SimResult r = simulate(c, jobs, warm);
  EXPECT_DOUBLE_EQ(r.makespan_s, 16.0);
  EXPECT_TRUE(r.placements[2].warm);
  EXPECT_TRUE(r.placements[3].warm);
  EXPECT_EQ(r.placements[2].alloc.cores, r.placements[1].alloc.cores);
  EXPECT_EQ(r.placements[3].alloc.cores, r.placements[0].alloc.cores);
  // Cold, the lowest free cores: job 2 on job 0's.
  const SimResult cold = simulate(c, jobs, SimOptions{});
  EXPECT_EQ(cold.placements[2].alloc.cores, cold.placements[0].alloc.cores);
}

namespace {
// Prefers `at` for the job keyed `job`.
class PreferOne : public PlacementPreference {
 public:
  PreferOne(std::size_t job, Allocation at) : job_(job), at_(std::move(at)) {}
  const Allocation* preferred(std::size_t key, int node) const override {
    return key == job_ && node == at_.node ? &at_ : nullptr;
  }

 private:
  std::size_t job_;
  Allocation at_;
};
}  // namespace

// A preference picks among the chosen node's free resources only: taken when free and of the
// request's size, else the lowest free ids; what starts when is the policy's.
TEST(Engine, APreferenceIsTakenOnlyWhenFreeAndOfTheRequestsSize) {
  Cluster c;
  c.nodes.push_back(make_node("n0", 4, 2));
  Request one;
  one.cores = 1;
  one.gpus = 1;
  Allocation want;
  want.node = 0;
  want.cores = {3};
  want.gpus = {1};
  Engine e(c, EngineOptions{});
  const PreferOne pref(7, want);
  e.set_preference(&pref);
  e.submit(QueuedJob{7, 0, one, 5});
  auto s = e.schedule(0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].alloc.cores, std::vector<int>{3});
  EXPECT_EQ(s[0].alloc.gpus, std::vector<int>{1});
  // Another job is not preferred: lowest free ids.
  e.submit(QueuedJob{8, 1, one, 5});
  s = e.schedule(0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].alloc.cores, std::vector<int>{0});
  EXPECT_EQ(s[0].alloc.gpus, std::vector<int>{0});
  // Job 9 preferring job 7's resources while 7 holds them: the lowest free ids.
  e.finish(8);
  const PreferOne busy(9, want);
  e.set_preference(&busy);
  e.submit(QueuedJob{9, 2, one, 5});
  s = e.schedule(0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].alloc.cores, std::vector<int>{0});
  EXPECT_EQ(s[0].alloc.gpus, std::vector<int>{0});
  // Of another size than the request (2 cores, no GPU): not taken.
  e.finish(7);
  e.finish(9);
  Request two = one;
  two.cores = 2;
  two.gpus = 0;
  e.set_preference(&pref);
  e.submit(QueuedJob{7, 3, two, 5});
  s = e.schedule(0);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].alloc.cores, (std::vector<int>{0, 1}));
}

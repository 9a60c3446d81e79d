// The MPI communicator and gradient bucketing under a real `mpirun -np 2` (ctest runs this binary
// through mpirun; every rank runs every test and the collectives pair up across ranks).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "grad_sync.hpp"
#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/errors.hpp"

using namespace gridrun::runner;

namespace {
Communicator* g_comm = nullptr;  // test fixture state owned by main() below
}

TEST(MpiComm, AllreduceBroadcastGather) {
  Communicator& c = *g_comm;
  ASSERT_EQ(c.size(), 2);
  auto t = torch::full({1000}, static_cast<float>(c.rank() + 1));
  auto w = c.allreduce_sum(t);
  w->wait();
  EXPECT_TRUE(t.eq(3.0f).all().item<bool>());
  EXPECT_GE(w->seconds(), 0.0);
  auto d = torch::arange(5, torch::kFloat64) * (c.rank() == 0 ? 1 : -7);
  c.broadcast(d, 0);
  EXPECT_TRUE(d.equal(torch::arange(5, torch::kFloat64)));
  auto s = c.allreduce_sum(std::vector<double>{1.5, static_cast<double>(c.rank())});
  EXPECT_EQ(s, (std::vector<double>{3.0, 1.0}));
  auto m = c.allreduce_max(std::vector<double>{static_cast<double>(c.rank()) * 10});
  EXPECT_EQ(m[0], 10.0);
  auto g = c.gather({static_cast<double>(c.rank()), 42}, 0);
  if (c.rank() == 0)
    EXPECT_EQ(g, (std::vector<double>{0, 42, 1, 42}));
  else
    EXPECT_TRUE(g.empty());
  auto names = c.allgather_strings(c.rank() == 0 ? "alpha" : "b");
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "b"}));
  c.barrier();
  EXPECT_NE(c.library_version().find("MPI"), std::string::npos) << c.library_version();
  EXPECT_THROW(c.allreduce_sum(torch::ones({3}, torch::kBFloat16)), CommError);
}

TEST(MpiComm, ManyOutstandingWorksCompleteInOrder) {
  Communicator& c = *g_comm;
  std::vector<torch::Tensor> ts;
  std::vector<std::shared_ptr<Work>> ws;
  for (int i = 0; i < 20; ++i) {
    ts.push_back(torch::full({257 * (i + 1)}, static_cast<double>(i + c.rank()), torch::kFloat64));
    ws.push_back(c.allreduce_sum(ts.back()));
  }
  for (int i = 19; i >= 0; --i) ws[i]->wait();
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(ts[i].eq(2.0 * i + 1).all().item<bool>()) << i;
}

// GradSync averages gradients across ranks, bucket by bucket, with and without overlap; the layout
// is the same on both ranks and splits the model into several buckets.
TEST(GradSync, AveragesAcrossRanksInSeveralBuckets) {
  Communicator& c = *g_comm;
  for (bool overlap : {true, false}) {
    torch::manual_seed(1);
    torch::nn::Sequential net(torch::nn::Linear(64, 128), torch::nn::ReLU(), torch::nn::Linear(128, 64),
                              torch::nn::ReLU(), torch::nn::Linear(64, 10));
    GradSync sync(net->parameters(), c, GradSyncOptions{0.002, overlap});  // 2 KB cap: 3 buckets
    EXPECT_GE(sync.num_buckets(), 3u);
    auto layout = sync.layout();
    std::vector<double> flat;
    for (auto& b : layout) {
      for (auto p : b) flat.push_back(static_cast<double>(p));
      flat.push_back(-1);
    }
    auto all = c.gather(flat, 0);
    if (c.rank() == 0) {
      EXPECT_TRUE(std::equal(flat.begin(), flat.end(), all.begin() + flat.size()));
    }
    EXPECT_EQ(layout.front().front(), net->parameters().size() - 1);  // reverse order

    // Each rank sees different data; the reference is the gradient of the mean over both halves.
    torch::manual_seed(100);
    auto x = torch::randn({8, 64}), y = torch::randint(0, 10, {8});
    auto ref = [&] {
      net->zero_grad();
      torch::nn::functional::cross_entropy(net->forward(x), y).backward();
      std::vector<torch::Tensor> g;
      for (auto& p : net->parameters()) g.push_back(p.grad().clone());
      return g;
    }();
    net->zero_grad();
    auto xs = x.narrow(0, 4 * c.rank(), 4), ys = y.narrow(0, 4 * c.rank(), 4);
    sync.begin_step();
    torch::nn::functional::cross_entropy(net->forward(xs), ys).backward();
    auto st = sync.finish();
    EXPECT_GE(st.comm_s, 0.0);
    auto ps = net->parameters();
    for (std::size_t i = 0; i < ps.size(); ++i)
      EXPECT_LT((ps[i].grad() - ref[i]).abs().max().item<float>(), 1e-6) << i << " " << overlap;
  }
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto comm = make_communicator("mpi", CommOptions{60});
  g_comm = comm.get();
  const int rc = RUN_ALL_TESTS();
  // Both ranks must pass: combine the results so each rank exits with the job's verdict.
  const double failed = comm->allreduce_sum(std::vector<double>{rc != 0 ? 1.0 : 0.0})[0];
  g_comm = nullptr;
  comm.reset();
  return failed > 0 ? 1 : 0;
}

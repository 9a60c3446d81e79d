// The placement engine and its three policies. See placement.hpp for why one engine serves the
// real executor, the simulator and the Slurm packer, and docs/scheduler.md for the policies.
#include "gridrun/scheduler/placement.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace gridrun::scheduler {

namespace {
constexpr int kNoLimit = std::numeric_limits<int>::max();

std::string join_ids(const std::vector<int>& idx, const std::vector<int>& ids) {
  std::string s;
  for (std::size_t i = 0; i < idx.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(ids[idx[i]]);
  }
  return s;
}
}  // namespace

std::string cores_string(const Cluster& c, const Allocation& a) {
  return join_ids(a.cores, c.nodes.at(a.node).cores);
}
std::string nodes_string(const Cluster& c, const Allocation& a) {
  if (a.node < 0) return "-";
  std::string s = c.nodes.at(a.node).name;
  for (const Allocation& p : a.peers) s += "+" + c.nodes.at(p.node).name;
  return s;
}

std::string gpus_string(const Cluster& c, const Allocation& a) {
  std::string s;
  std::set<std::string> seen;  // with --jobs-per-gpu two slots may name the same GPU
  const auto& ids = c.nodes.at(a.node).gpus;
  for (std::size_t i = 0; i < a.gpus.size(); ++i) {
    if (!seen.insert(ids[a.gpus[i]]).second) continue;
    if (!s.empty()) s += ',';
    s += ids[a.gpus[i]];
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// ClusterState

ClusterState::ClusterState(const Cluster& cluster) : cluster_(cluster) {
  const std::size_t n = cluster.nodes.size();
  free_gpus_.resize(n);
  free_cores_.resize(n);
  limit_gpus_.assign(n, kNoLimit);
  limit_cores_.assign(n, kNoLimit);
  core_used_.resize(n);
  gpu_used_.resize(n);
  running_.resize(n);
  version_.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    free_gpus_[i] = static_cast<int>(cluster.nodes[i].gpus.size());
    free_cores_[i] = static_cast<int>(cluster.nodes[i].cores.size());
    core_used_[i].assign(cluster.nodes[i].cores.size(), 0);
    gpu_used_[i].assign(cluster.nodes[i].gpus.size(), 0);
  }
  while (leaves_ < std::max<std::size_t>(n, 1)) leaves_ *= 2;
  tree_gpus_.assign(2 * leaves_, -1);
  tree_cores_.assign(2 * leaves_, -1);
  for (std::size_t i = 0; i < n; ++i) {
    tree_gpus_[leaves_ + i] = free_gpus_[i];
    tree_cores_[leaves_ + i] = free_cores_[i];
  }
  for (std::size_t i = leaves_ - 1; i >= 1; --i) {
    tree_gpus_[i] = std::max(tree_gpus_[2 * i], tree_gpus_[2 * i + 1]);
    tree_cores_[i] = std::max(tree_cores_[2 * i], tree_cores_[2 * i + 1]);
  }
}

void ClusterState::update(int node) {
  std::size_t i = leaves_ + static_cast<std::size_t>(node);
  tree_gpus_[i] = std::min(free_gpus_[node], limit_gpus_[node]);
  tree_cores_[i] = std::min(free_cores_[node], limit_cores_[node]);
  for (i /= 2; i >= 1; i /= 2) {
    tree_gpus_[i] = std::max(tree_gpus_[2 * i], tree_gpus_[2 * i + 1]);
    tree_cores_[i] = std::max(tree_cores_[2 * i], tree_cores_[2 * i + 1]);
  }
}

int ClusterState::find(const Request& r) const {
  // Depth-first, left first, pruning subtrees whose per-dimension maxima cannot hold r. The maxima
  // of gpus and cores may come from different nodes, so a subtree can pass and still hold no fit;
  // such dead ends are rare because nodes of one cluster tend to look alike.
  if (tree_gpus_[1] < r.gpus || tree_cores_[1] < r.cores) return -1;
  std::size_t stack[128];
  int top = 0;
  stack[top++] = 1;
  while (top > 0) {
    const std::size_t i = stack[--top];
    if (tree_gpus_[i] < r.gpus || tree_cores_[i] < r.cores) continue;
    if (i >= leaves_) return static_cast<int>(i - leaves_);
    stack[top++] = 2 * i + 1;  // right pushed first so that left is explored first
    stack[top++] = 2 * i;
  }
  return -1;
}

std::vector<int> ClusterState::find_nodes(const Request& r) const {
  std::vector<int> out;
  if (r.nodes <= 1) {
    const int n = find(r);
    if (n >= 0) out.push_back(n);
    return out;
  }
  if (tree_gpus_[1] < r.gpus || tree_cores_[1] < r.cores) return out;
  for (int n = 0; n < static_cast<int>(size()) && static_cast<int>(out.size()) < r.nodes; ++n)
    if (fits_within_limit(n, r)) out.push_back(n);
  if (static_cast<int>(out.size()) < r.nodes) out.clear();
  return out;
}

void ClusterState::set_limit(int node, int gpus, int cores) {
  limit_gpus_[node] = std::max(0, gpus);
  limit_cores_[node] = std::max(0, cores);
  update(node);
}

void ClusterState::clear_limit(int node) {
  limit_gpus_[node] = kNoLimit;
  limit_cores_[node] = kNoLimit;
  update(node);
}

namespace {
// Whether `ids` are distinct indices of `used` that are all free.
bool all_free(const std::vector<int>& ids, const std::vector<char>& used) {
  std::vector<char> seen(used.size(), 0);
  for (int i : ids) {
    if (i < 0 || static_cast<std::size_t>(i) >= used.size() || used[i] || seen[i]) return false;
    seen[i] = 1;
  }
  return true;
}
}  // namespace

Allocation ClusterState::allocate(int node, const Request& r, std::size_t key, double end) {
  if (!fits(node, r)) throw std::logic_error("ClusterState::allocate: request does not fit");
  Allocation a;
  a.node = node;
  auto& cu = core_used_[node];
  auto& gu = gpu_used_[node];
  if (const Allocation* p = preference_ && r.nodes == 1 ? preference_->preferred(key, node) : nullptr;
      p && p->node == node && p->peers.empty() && static_cast<int>(p->cores.size()) == r.cores &&
      static_cast<int>(p->gpus.size()) == r.gpus && all_free(p->cores, cu) && all_free(p->gpus, gu)) {
    a.cores = p->cores;
    a.gpus = p->gpus;
    for (int c : a.cores) cu[c] = 1;
    for (int g : a.gpus) gu[g] = 1;
  }
  for (std::size_t i = 0; i < cu.size() && static_cast<int>(a.cores.size()) < r.cores; ++i)
    if (!cu[i]) {
      cu[i] = 1;
      a.cores.push_back(static_cast<int>(i));
    }
  for (std::size_t i = 0; i < gu.size() && static_cast<int>(a.gpus.size()) < r.gpus; ++i)
    if (!gu[i]) {
      gu[i] = 1;
      a.gpus.push_back(static_cast<int>(i));
    }
  free_cores_[node] -= r.cores;
  free_gpus_[node] -= r.gpus;
  running_[node].push_back({end, r.gpus, r.cores, key});
  by_end_.emplace(end, key, node);
  ++version_[node];
  update(node);
  return a;
}

Allocation ClusterState::allocate(const std::vector<int>& nodes, const Request& r, std::size_t key,
                                  double end) {
  if (nodes.empty()) throw std::logic_error("ClusterState::allocate: no node");
  Allocation a = allocate(nodes[0], r, key, end);
  for (std::size_t i = 1; i < nodes.size(); ++i) a.peers.push_back(allocate(nodes[i], r, key, end));
  return a;
}

void ClusterState::release(const Allocation& a, std::size_t key) {
  for (const Allocation& p : a.peers) release(p, key);
  const int node = a.node;
  for (int c : a.cores) core_used_[node][c] = 0;
  for (int g : a.gpus) gpu_used_[node][g] = 0;
  free_cores_[node] += static_cast<int>(a.cores.size());
  free_gpus_[node] += static_cast<int>(a.gpus.size());
  auto& run = running_[node];
  for (std::size_t i = 0; i < run.size(); ++i)
    if (run[i].key == key) {
      by_end_.erase(std::make_tuple(run[i].end, key, node));
      run[i] = run.back();
      run.pop_back();
      break;
    }
  ++version_[node];
  update(node);
}

// ---------------------------------------------------------------------------------------------
// Policies

namespace {

using OrderKey = std::pair<std::size_t, std::size_t>;  // (grid order, key)

// fifo: start the head of the queue (grid order) while it fits anywhere; never skip it.
class FifoPlacement : public Placement {
 public:
  const char* name() const override { return "fifo"; }
  void enqueue(const QueuedJob& j) override { queue_.emplace(OrderKey{j.order, j.key}, j); }
  std::size_t pending() const override { return queue_.size(); }
  void place(ClusterState& st, double now, std::size_t max_starts, std::vector<Start>& out) override {
    std::size_t started = 0;
    while (started < max_starts && !queue_.empty()) {
      const QueuedJob& j = queue_.begin()->second;
      const std::vector<int> nodes = st.find_nodes(j.req);
      if (nodes.empty()) break;
      out.push_back({j.key, st.allocate(nodes, j.req, j.key, now + j.est_s)});
      for (int n : nodes) after_start(st, n);
      queue_.erase(queue_.begin());
      ++started;
    }
  }

 protected:
  virtual void after_start(ClusterState&, int) {}
  std::map<OrderKey, QueuedJob> queue_;
};

// exclusive: fifo order, but a node runs one job at a time (it is hidden while busy).
class ExclusivePlacement : public FifoPlacement {
 public:
  const char* name() const override { return "exclusive"; }
  void on_release(ClusterState& st, int node) override {
    if (st.running_on(node).empty()) st.clear_limit(node);
  }

 protected:
  void after_start(ClusterState& st, int node) override { st.set_limit(node, 0, 0); }
};

// packed: backfill. Pending jobs are grouped by shape; each round starts the largest job that
// fits. The oldest pending job, when it fits nowhere, gets a reservation on the node where it can
// start earliest (from running jobs' estimated ends): that node then only takes jobs that end
// before the reservation time, or that fit in what the reserved job leaves over. So the oldest job
// is never delayed by younger ones beyond estimate errors, and the queue cannot starve it.
// A multi-node job gets no reservation: while it is the oldest and does not fit, nothing younger
// starts (fifo for that moment), so nodes drain for it and it cannot starve either.
class PackedPlacement : public Placement {
 public:
  const char* name() const override { return "packed"; }
  void enqueue(const QueuedJob& j) override {
    shapes_[ShapeKey{j.req.gpus, j.req.cores, j.req.nodes}].emplace(OrderKey{j.order, j.key}, j);
    ++pending_;
  }
  std::size_t pending() const override { return pending_; }

  void place(ClusterState& st, double now, std::size_t max_starts, std::vector<Start>& out) override {
    std::size_t started = 0;
    while (started < max_starts && pending_ > 0) {
      const QueuedJob* head = oldest();
      if (head->req.nodes > 1) {
        clear_reservation(st);
        const std::vector<int> nodes = st.find_nodes(head->req);
        if (nodes.empty()) break;
        out.push_back({head->key, st.allocate(nodes, head->req, head->key, now + head->est_s)});
        erase_job(*head);
        ++started;
        continue;
      }
      update_reservation(st, *head, now);
      bool any = false;
      for (auto it = shapes_.begin(); it != shapes_.end(); ++it) {
        const QueuedJob& j = it->second.begin()->second;
        std::vector<int> nodes;  // a multi-node job's; stays empty (no allocation) for the rest
        int n = -1;
        bool short_job = false;
        if (j.req.nodes > 1) {  // younger multi-node jobs: only when they fit, and never reserved
          nodes = st.find_nodes(j.req);
          if (!nodes.empty()) n = nodes.front();
        } else {
          n = st.find(j.req);
          if (n < 0 && res_.active && now + j.est_s <= res_.time && st.fits(res_.node, j.req)) {
            n = res_.node;
            short_job = true;
          }
        }
        if (n < 0) continue;
        const std::size_t key = j.key;
        out.push_back({key, nodes.empty() ? st.allocate(n, j.req, key, now + j.est_s)
                                          : st.allocate(nodes, j.req, key, now + j.est_s)});
        const bool on_reserved = res_.active && (n == res_.node || std::find(nodes.begin(), nodes.end(),
                                                                             res_.node) != nodes.end());
        if (on_reserved && !short_job) {
          res_.extra_gpus -= j.req.gpus;
          res_.extra_cores -= j.req.cores;
        }
        if (on_reserved) {
          res_.version = st.version(res_.node);
          apply_limit(st);
        }
        if (res_.active && key == res_.key) clear_reservation(st);
        it->second.erase(it->second.begin());
        if (it->second.empty()) shapes_.erase(it);
        --pending_;
        ++started;
        any = true;
        break;
      }
      if (!any) break;
    }
    if (pending_ == 0) clear_reservation(st);
  }

 private:
  struct ShapeKey {
    int gpus, cores, nodes;
    bool operator<(const ShapeKey& o) const {  // largest first: nodes, GPUs, then cores
      if (nodes != o.nodes) return nodes > o.nodes;
      return gpus != o.gpus ? gpus > o.gpus : cores > o.cores;
    }
  };

  void erase_job(const QueuedJob& j) {
    auto it = shapes_.find(ShapeKey{j.req.gpus, j.req.cores, j.req.nodes});
    it->second.erase(OrderKey{j.order, j.key});
    if (it->second.empty()) shapes_.erase(it);
    --pending_;
  }
  struct Reservation {
    bool active = false;
    std::size_t key = 0;
    int node = -1;
    double time = 0;
    int extra_gpus = 0, extra_cores = 0;
    std::uint64_t version = 0;
  };

  const QueuedJob* oldest() const {
    const QueuedJob* best = nullptr;
    for (const auto& s : shapes_) {
      const QueuedJob& j = s.second.begin()->second;
      if (!best || j.order < best->order || (j.order == best->order && j.key < best->key)) best = &j;
    }
    return best;
  }

  void apply_limit(ClusterState& st) { st.set_limit(res_.node, res_.extra_gpus, res_.extra_cores); }

  void clear_reservation(ClusterState& st) {
    if (res_.active) st.clear_limit(res_.node);
    res_.active = false;
  }

  // Reservation time and leftover on `node` for `r`, from the node's running jobs in end order.
  void compute_on_node(const ClusterState& st, int node, const Request& r, double now) {
    auto run = st.running_on(node);
    std::sort(run.begin(), run.end(),
              [](const ClusterState::Running& a, const ClusterState::Running& b) { return a.end < b.end; });
    int g = st.free_gpus(node), c = st.free_cores(node);
    double t = now;
    std::size_t i = 0;
    while (i < run.size() && (g < r.gpus || c < r.cores)) {
      t = std::max(now, run[i].end);
      // everything ending at the same instant is free at t
      while (i < run.size() && std::max(now, run[i].end) <= t) {
        g += run[i].gpus;
        c += run[i].cores;
        ++i;
      }
    }
    res_.time = t;
    res_.extra_gpus = g - r.gpus;
    res_.extra_cores = c - r.cores;
    res_.version = st.version(node);
  }

  void update_reservation(ClusterState& st, const QueuedJob& head, double now) {
    if (res_.active && res_.key != head.key) clear_reservation(st);
    if (res_.active) st.clear_limit(res_.node);  // look at the real free resources
    if (st.find(head.req) >= 0) {                // the oldest job fits now: no reservation needed
      clear_reservation(st);
      return;
    }
    if (!res_.active) {
      // Earliest node: walk running jobs in end order, crediting their node, until one node holds
      // the request. Exact for the estimates; costs the number of jobs ending before that time.
      touched_.clear();
      if (acc_g_.size() < st.size()) {
        acc_g_.assign(st.size(), 0);
        acc_c_.assign(st.size(), 0);
      }
      int chosen = -1;
      for (const auto& e : st.by_end()) {
        const int n = std::get<2>(e);
        const Node& node = st.cluster().nodes[n];
        if (static_cast<int>(node.gpus.size()) < head.req.gpus ||
            static_cast<int>(node.cores.size()) < head.req.cores)
          continue;
        if (acc_c_[n] == 0) touched_.push_back(n);  // every job holds >= 1 core
        for (const auto& r : st.running_on(n))
          if (r.key == std::get<1>(e)) {
            acc_g_[n] += r.gpus;
            acc_c_[n] += r.cores;
          }
        if (st.free_gpus(n) + acc_g_[n] >= head.req.gpus && st.free_cores(n) + acc_c_[n] >= head.req.cores) {
          chosen = n;
          break;
        }
      }
      for (int n : touched_) acc_g_[n] = acc_c_[n] = 0;
      if (chosen < 0) return;  // cannot happen for a feasible job; run unreserved rather than fail
      res_.active = true;
      res_.key = head.key;
      res_.node = chosen;
      compute_on_node(st, chosen, head.req, now);
    } else if (res_.version != st.version(res_.node) || res_.time < now) {
      compute_on_node(st, res_.node, head.req, now);
    } else {
      // unchanged node: the remaining leftover is still valid
    }
    apply_limit(st);
  }

  std::map<ShapeKey, std::map<OrderKey, QueuedJob>> shapes_;
  std::size_t pending_ = 0;
  Reservation res_;
  std::vector<int> acc_g_, acc_c_, touched_;
};

}  // namespace

const std::vector<std::string>& placement_names() {
  static const std::vector<std::string> names{"packed", "fifo", "exclusive"};
  return names;
}

std::unique_ptr<Placement> make_placement(const std::string& name) {
  if (name == "packed") return std::make_unique<PackedPlacement>();
  if (name == "fifo") return std::make_unique<FifoPlacement>();
  if (name == "exclusive") return std::make_unique<ExclusivePlacement>();
  throw std::invalid_argument("--policy: unknown placement '" + name +
                              "' (choose packed, fifo or exclusive)");
}

// ---------------------------------------------------------------------------------------------
// Engine

Engine::Engine(const Cluster& cluster, const EngineOptions& opts)
    : state_(cluster), policy_(make_placement(opts.policy)), max_parallel_(opts.max_parallel) {}

double engine_seconds(double s) {
  if (std::isnan(s)) return kMaxEngineSeconds;
  return std::clamp(s, 0.0, kMaxEngineSeconds);
}

void Engine::submit(const QueuedJob& job) {
  QueuedJob j = job;
  j.est_s = engine_seconds(j.est_s);
  policy_->enqueue(j);
}

std::vector<Start> Engine::schedule(double now) {
  // End times are now + estimate: a clock that is not a number would make them all NaN, and the
  // ordered sets behind reservations need a strict order.
  if (!std::isfinite(now)) throw std::invalid_argument("Engine::schedule: the time is not finite");
  std::vector<Start> out;
  std::size_t room = std::numeric_limits<std::size_t>::max();
  if (max_parallel_ > 0) room = max_parallel_ > running_.size() ? max_parallel_ - running_.size() : 0;
  if (room == 0) return out;
  policy_->place(state_, now, room, out);
  for (const auto& s : out) running_.emplace(s.key, s.alloc);
  return out;
}

void Engine::finish(std::size_t key) {
  auto it = running_.find(key);
  if (it == running_.end()) throw std::logic_error("Engine::finish: job is not running");
  std::vector<int> nodes{it->second.node};
  for (const Allocation& p : it->second.peers) nodes.push_back(p.node);
  state_.release(it->second, key);
  running_.erase(it);
  for (int node : nodes) policy_->on_release(state_, node);
}

}  // namespace gridrun::scheduler

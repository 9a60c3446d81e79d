// IdlePlaces (idle_places.hpp).
#include "idle_places.hpp"

#include <algorithm>
#include <utility>

namespace gridrun::scheduler {

bool shares_resources(const Allocation& x, const Allocation& y) {
  auto shares = [](const std::vector<int>& a, const std::vector<int>& b) {
    return std::any_of(a.begin(), a.end(),
                       [&](int v) { return std::find(b.begin(), b.end(), v) != b.end(); });
  };
  if (x.node == y.node && (shares(x.cores, y.cores) || shares(x.gpus, y.gpus))) return true;
  for (const auto& p : x.peers)
    if (shares_resources(p, y)) return true;
  for (const auto& p : y.peers)
    if (shares_resources(x, p)) return true;
  return false;
}

bool same_place(const Allocation& x, const Allocation& y) {
  return x.node == y.node && x.cores == y.cores && x.gpus == y.gpus && x.peers.size() == y.peers.size() &&
         std::equal(x.peers.begin(), x.peers.end(), y.peers.begin(), same_place);
}

void IdlePlaces::add(std::string key, Allocation at, double since) {
  idle_.push_back({std::move(key), std::move(at), since});
}

void IdlePlaces::expire_before(double t) {
  idle_.erase(std::remove_if(idle_.begin(), idle_.end(), [&](const Idle& w) { return w.since < t; }),
              idle_.end());
}

const Allocation* IdlePlaces::preferred(std::size_t key, int node) const {
  if (idle_.empty()) return nullptr;
  const std::string k = key_of_(key);
  for (const Idle& w : idle_)
    if (w.at.node == node && w.key == k) return &w.at;
  return nullptr;
}

bool IdlePlaces::take(const std::string& key, const Allocation& at) {
  bool got = false;
  std::vector<Idle> keep;
  for (auto& w : idle_) {
    if (!got && w.key == key && same_place(w.at, at)) {
      got = true;
      continue;
    }
    if (!shares_resources(w.at, at)) keep.push_back(std::move(w));
  }
  idle_.swap(keep);
  return got;
}

}  // namespace gridrun::scheduler

// FlatMap: a sorted-vector map for the small maps every job carries by the hundred thousand (its
// /summary figures, its root attributes).
//
// Why: a run of 100,000 jobs held each job's ~30 summary figures and ~40 attributes as std::map
// nodes, one allocation each, twice over (the job's data and its index record): millions of small
// chunks whose allocation, copying, page faults and, at the end, freeing and consolidation grew
// faster than the jobs (issue 60). Here a map is one allocation, copied in one go, read in key
// order like std::map (so everything printed from it keeps its order) and searched by bisection.
// Inserting in the middle is O(n): meant for maps of tens of keys, filled mostly in key order (a
// decoder reading a sorted record appends at the end in O(1)).
//
// The interface is std::map's where these maps use it; differences: value_type is
// std::pair<K, V> (the key is not const: do not assign it through an iterator), and inserting or
// erasing invalidates iterators and references (no node stability).
#pragma once

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

namespace gridrun::base {

template <class K, class V>
class FlatMap {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<K, V>;
  using container_type = std::vector<value_type>;
  using iterator = typename container_type::iterator;
  using const_iterator = typename container_type::const_iterator;
  using size_type = std::size_t;

  FlatMap() = default;
  // A repeated key keeps its first value, as std::map's.
  FlatMap(std::initializer_list<value_type> init) {
    for (const auto& kv : init) try_emplace(kv.first, kv.second);
  }

  iterator begin() noexcept { return items_.begin(); }
  iterator end() noexcept { return items_.end(); }
  const_iterator begin() const noexcept { return items_.begin(); }
  const_iterator end() const noexcept { return items_.end(); }
  const_iterator cbegin() const noexcept { return items_.cbegin(); }
  const_iterator cend() const noexcept { return items_.cend(); }
  bool empty() const noexcept { return items_.empty(); }
  size_type size() const noexcept { return items_.size(); }
  void clear() noexcept { items_.clear(); }
  void reserve(size_type n) { items_.reserve(n); }

  // Lookups take anything comparable with K (a std::string_view or a literal for string keys).
  template <class Q>
  iterator lower_bound(const Q& key) {
    return std::lower_bound(items_.begin(), items_.end(), key, KeyLess{});
  }
  template <class Q>
  const_iterator lower_bound(const Q& key) const {
    return std::lower_bound(items_.begin(), items_.end(), key, KeyLess{});
  }
  template <class Q>
  iterator find(const Q& key) {
    const auto it = lower_bound(key);
    return it != items_.end() && !(key < it->first) ? it : items_.end();
  }
  template <class Q>
  const_iterator find(const Q& key) const {
    const auto it = lower_bound(key);
    return it != items_.end() && !(key < it->first) ? it : items_.end();
  }
  template <class Q>
  size_type count(const Q& key) const {
    return find(key) != end() ? 1 : 0;
  }
  template <class Q>
  bool contains(const Q& key) const {
    return find(key) != end();
  }
  template <class Q>
  V& at(const Q& key) {
    const auto it = find(key);
    if (it == end()) throw std::out_of_range("FlatMap::at: no such key");
    return it->second;
  }
  template <class Q>
  const V& at(const Q& key) const {
    const auto it = find(key);
    if (it == end()) throw std::out_of_range("FlatMap::at: no such key");
    return it->second;
  }

  // As std::map: inserts V{} when the key is absent.
  V& operator[](const K& key) { return try_emplace(key).first->second; }
  V& operator[](K&& key) { return try_emplace(std::move(key)).first->second; }

  // Inserts (key, V(args...)) unless the key is there; {where, inserted}.
  template <class KK, class... Args>
  std::pair<iterator, bool> try_emplace(KK&& key, Args&&... args) {
    auto it = slot(key);
    if (it != items_.end() && !(key < it->first)) return {it, false};
    it = items_.emplace(it, std::piecewise_construct, std::forward_as_tuple(std::forward<KK>(key)),
                        std::forward_as_tuple(std::forward<Args>(args)...));
    return {it, true};
  }
  template <class KK, class VV>
  std::pair<iterator, bool> emplace(KK&& key, VV&& value) {
    return try_emplace(std::forward<KK>(key), std::forward<VV>(value));
  }
  std::pair<iterator, bool> insert(value_type kv) {
    return try_emplace(std::move(kv.first), std::move(kv.second));
  }
  template <class KK, class VV>
  std::pair<iterator, bool> insert_or_assign(KK&& key, VV&& value) {
    V v(std::forward<VV>(value));  // first: `value` may be an item of this map, which the insert moves
    auto [it, inserted] = try_emplace(std::forward<KK>(key));
    it->second = std::move(v);
    return {it, inserted};
  }

  iterator erase(iterator where) { return items_.erase(where); }
  iterator erase(const_iterator where) { return items_.erase(where); }
  template <class Q>
  size_type erase(const Q& key) {
    const auto it = find(key);
    if (it == end()) return 0;
    items_.erase(it);
    return 1;
  }

  // Erases every item for which pred(item) holds, in one pass (erasing them one by one would
  // shift the rest each time); how many went.
  template <class Pred>
  size_type erase_if(Pred pred) {
    const auto first = std::remove_if(items_.begin(), items_.end(), pred);
    const auto gone = static_cast<size_type>(items_.end() - first);
    items_.erase(first, items_.end());
    return gone;
  }

  friend bool operator==(const FlatMap& a, const FlatMap& b) { return a.items_ == b.items_; }
  friend bool operator!=(const FlatMap& a, const FlatMap& b) { return !(a == b); }

 private:
  struct KeyLess {
    template <class Q>
    bool operator()(const value_type& kv, const Q& key) const {
      return kv.first < key;
    }
  };
  // Where `key` belongs: the end when it sorts after every key (the common case of a decoder
  // appending in order), else by bisection.
  template <class Q>
  iterator slot(const Q& key) {
    if (items_.empty() || items_.back().first < key) return items_.end();
    return lower_bound(key);
  }

  container_type items_;
};

}  // namespace gridrun::base

// The /attempts table of a job file (attempts.hpp): who ran the job, each time it started.
//
// Why a table and not attributes: a job requeued after a node failure is finished by a later
// attempt on another host; the root attributes (hostname, hostnames) describe that last attempt,
// and this table keeps every attempt, so "it ran on host2, resumed at step 768 on host1" stays
// readable from the file alone.
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attempts.hpp"
#include "gridrun/h5/h5.hpp"

namespace gridrun::results::detail {

namespace {

constexpr const char* kGroup = "attempts";

std::vector<std::string> strings_of(hid_t g, const char* name, std::size_t n) {
  std::vector<std::string> v;
  if (h5::exists(g, name)) {
    h5::Id ds = H5_OWN(H5Dopen2(g, name, H5P_DEFAULT), H5Dclose);
    v = h5::read_strings(ds);
  }
  v.resize(n);
  return v;
}

std::vector<std::int64_t> ints_of(hid_t g, const char* name, std::size_t n, std::int64_t fallback) {
  std::vector<std::int64_t> v;
  if (h5::exists(g, name)) {
    h5::Id ds = H5_OWN(H5Dopen2(g, name, H5P_DEFAULT), H5Dclose);
    for (double d : h5::read_doubles(ds, h5::rows_of(ds))) v.push_back(static_cast<std::int64_t>(d));
  }
  v.resize(n, fallback);
  return v;
}

}  // namespace

std::vector<Attempt> read_attempts(hid_t file) {
  std::vector<Attempt> out;
  if (!h5::exists(file, kGroup)) return out;
  h5::Id g = H5_OWN(H5Gopen2(file, kGroup, H5P_DEFAULT), H5Gclose);
  if (!h5::exists(g, "hostname")) return out;
  std::size_t n = 0;
  {
    h5::Id ds = H5_OWN(H5Dopen2(g, "hostname", H5P_DEFAULT), H5Dclose);
    n = static_cast<std::size_t>(h5::rows_of(ds));
  }
  const auto started = strings_of(g, "started_at", n), host = strings_of(g, "hostname", n),
             hosts = strings_of(g, "hostnames", n), batch = strings_of(g, "batch_id", n),
             sitting = strings_of(g, "sitting", n);
  const auto resumed = ints_of(g, "resumed_from_step", n, 0), restarts = ints_of(g, "restart_count", n, -1);
  for (std::size_t i = 0; i < n; ++i)
    out.push_back(Attempt{started[i], host[i], hosts[i], batch[i], sitting[i], resumed[i], restarts[i]});
  return out;
}

void append_attempt(hid_t file, const Attempt& a) {
  std::vector<Attempt> all = read_attempts(file);
  all.push_back(a);
  if (h5::exists(file, kGroup)) H5_CHECK(H5Ldelete(file, kGroup, H5P_DEFAULT));
  h5::Id g = H5_OWN(H5Gcreate2(file, kGroup, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  std::vector<std::string> started, host, hosts, batch, sitting;
  std::vector<std::int64_t> number, resumed, restarts;
  for (std::size_t i = 0; i < all.size(); ++i) {
    number.push_back(static_cast<std::int64_t>(i + 1));
    started.push_back(all[i].started_at);
    host.push_back(all[i].hostname);
    hosts.push_back(all[i].hostnames);
    batch.push_back(all[i].batch_id);
    sitting.push_back(all[i].sitting);
    resumed.push_back(all[i].resumed_from_step);
    restarts.push_back(all[i].restart_count);
  }
  h5::write_int64s(g, "attempt", number);
  h5::write_strings(g, "started_at", started);
  h5::write_strings(g, "hostname", host);
  h5::write_strings(g, "hostnames", hosts);
  h5::write_strings(g, "batch_id", batch);
  h5::write_strings(g, "sitting", sitting);
  h5::write_int64s(g, "resumed_from_step", resumed);
  h5::write_int64s(g, "restart_count", restarts);
}

}  // namespace gridrun::results::detail

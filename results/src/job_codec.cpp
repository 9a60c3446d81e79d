// See job_codec.hpp.
#include "job_codec.hpp"

#include <variant>

namespace gridrun::results::detail {

namespace {

void put_attr(ByteWriter& w, const AttrValue& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) {
    w.u64(0);
    w.i64(*i);
  } else if (auto* d = std::get_if<double>(&v)) {
    w.u64(1);
    w.f64(*d);
  } else {
    w.u64(2);
    w.str(std::get<std::string>(v));
  }
}

AttrValue get_attr(ByteReader& r) {
  switch (r.u64()) {
    case 0: return r.i64();
    case 1: return r.f64();
    case 2: return r.str();
    default: throw std::runtime_error("bad attribute kind");
  }
}

// Past one attribute's value as get_attr reads it, without making its string.
void skip_attr(ByteReader& r) {
  switch (r.u64()) {
    case 0:
    case 1: r.f64(); return;
    case 2: r.view(); return;
    default: throw std::runtime_error("bad attribute kind");
  }
}

void put_doubles(ByteWriter& w, const std::vector<double>& v) {
  w.u64(v.size());
  w.raw(v.data(), v.size() * sizeof(double));
}

std::vector<double> get_doubles(ByteReader& r) {
  const std::size_t n = r.count(sizeof(double));
  std::vector<double> v(n);
  for (auto& x : v) x = r.f64();
  return v;
}

// A map keyed by name: its size, then each name and its value (put_value).
template <class Map, class PutValue>
void put_map(ByteWriter& w, const Map& map, PutValue put_value) {
  w.u64(map.size());
  for (const auto& [name, value] : map) {
    w.str(name);
    put_value(value);
  }
}

void put_table(ByteWriter& w, const TableData& t) {
  w.u64(t.rows);
  put_map(w, t.columns, [&](const std::vector<double>& col) { put_doubles(w, col); });
  put_map(w, t.matrices, [&](const Matrix& m) {
    w.u64(m.rows);
    w.u64(m.cols);
    put_doubles(w, m.data);
  });
}

TableData get_table(ByteReader& r) {
  TableData t;
  t.rows = r.u64();
  for (std::size_t n = r.count(16); n > 0; --n) {
    std::string name = r.str();
    t.columns[name] = get_doubles(r);
  }
  for (std::size_t n = r.count(32); n > 0; --n) {
    std::string name = r.str();
    Matrix m;
    m.rows = r.u64();
    m.cols = r.u64();
    m.data = get_doubles(r);
    if (m.rows * m.cols != m.data.size()) throw std::runtime_error("bad matrix shape");
    t.matrices[name] = std::move(m);
  }
  return t;
}

void put_glance(ByteWriter& w, const JobData& j) {
  w.str(j.id);
  w.str(j.status);
  w.str(j.exit_reason);
  w.u64(j.attempts.size());
  for (const auto& a : j.attempts) {
    for (const auto* s : {&a.started_at, &a.hostname, &a.hostnames, &a.batch_id, &a.sitting}) w.str(*s);
    w.i64(a.resumed_from_step);
    w.i64(a.restart_count);
  }
}

void get_glance(ByteReader& r, JobData& j) {
  j.id = r.str();
  j.status = r.str();
  j.exit_reason = r.str();
  for (std::size_t n = r.count(48); n > 0; --n) {
    Attempt a;
    for (auto* s : {&a.started_at, &a.hostname, &a.hostnames, &a.batch_id, &a.sitting}) *s = r.str();
    a.resumed_from_step = r.i64();
    a.restart_count = r.i64();
    j.attempts.push_back(std::move(a));
  }
}

void put_summary(ByteWriter& w, const JobData& j) {
  w.u64(j.partial ? 1 : 0);
  w.i64(j.schema_version);
  for (const auto* s : {&j.run, &j.start_time, &j.end_time, &j.gpu_absent_reason}) w.str(*s);
  put_map(w, j.attrs, [&](const auto& v) { put_attr(w, v); });
  put_map(w, j.summary, [&](double v) { w.f64(v); });
  // The typed parameters as values in table order: decoding them is a tenth of parsing the
  // `params` JSON again for every record (most of a 10,000-job report's read of the index).
  w.u64(j.params ? 1 : 0);
  if (j.params) {
    const std::vector<jobs::Value> values = jobs::param_values(*j.params);
    w.u64(values.size());
    for (const auto& v : values) {
      w.u64(v.index());
      if (const bool* b = std::get_if<bool>(&v)) w.u64(*b ? 1 : 0);
      if (const std::int64_t* i = std::get_if<std::int64_t>(&v)) w.i64(*i);
      if (const double* d = std::get_if<double>(&v)) w.f64(*d);
      if (const std::string* s = std::get_if<std::string>(&v)) w.str(*s);
    }
  }
}

// `keys` (not null): only those /summary figures are kept, and no attributes or parameters are
// (read past without a string or map node made for each).
void get_summary(ByteReader& r, JobData& j, const std::vector<std::string>* keys) {
  j.partial = r.u64() != 0;
  j.schema_version = static_cast<int>(r.i64());
  for (auto* s : {&j.run, &j.start_time, &j.end_time, &j.gpu_absent_reason}) *s = r.str();
  std::size_t n = r.count(16);
  if (!keys) j.attrs.reserve(n);  // flat maps: one allocation each
  for (; n > 0; --n) {
    if (keys) {
      r.view();  // its name
      skip_attr(r);
      continue;
    }
    std::string k = r.str();
    j.attrs.insert_or_assign(std::move(k), get_attr(r));
  }
  n = r.count(16);
  if (!keys) j.summary.reserve(n);
  for (; n > 0; --n) {
    if (keys) {
      const std::string_view k = r.view();
      const double v = r.f64();
      for (const std::string& want : *keys)
        if (k == want) j.summary.emplace(want, v);
      continue;
    }
    std::string k = r.str();
    j.summary.insert_or_assign(std::move(k), r.f64());
  }
  if (keys) return;  // the parameters come last
  if (r.u64() != 0) {
    const auto& table = jobs::param_table();
    const std::size_t n = r.count(8);
    if (n != table.size()) throw std::runtime_error("parameters of another version");
    std::vector<jobs::Value> values(n);
    for (std::size_t k = 0; k < n; ++k) {
      switch (r.u64()) {
        case 0: values[k] = r.u64() != 0; break;
        case 1: values[k] = r.i64(); break;
        case 2: values[k] = r.f64(); break;
        case 3: values[k] = r.str(); break;
        default: throw std::runtime_error("bad parameter value");
      }
    }
    // In table order, one pass (set_param by name compared each name with every field's).
    j.params = jobs::params_of_values(values);
    if (!j.params) throw std::runtime_error("bad parameter values");
  }
}

void put_tables(ByteWriter& w, const JobData& j) {
  put_table(w, j.steps);
  put_table(w, j.epochs);
  put_table(w, j.util);
  w.u64(j.profile.size());
  for (const auto& o : j.profile) {
    w.str(o.name);
    w.i64(o.calls);
    for (double v : {o.self_cpu_us, o.total_cpu_us, o.self_device_us, o.total_device_us}) w.f64(v);
  }
}

void get_tables(ByteReader& r, JobData& j) {
  j.steps = get_table(r);
  j.epochs = get_table(r);
  j.util = get_table(r);
  for (std::size_t n = r.count(48); n > 0; --n) {
    OpProfile o;
    o.name = r.str();
    o.calls = r.i64();
    for (double* v : {&o.self_cpu_us, &o.total_cpu_us, &o.self_device_us, &o.total_device_us}) *v = r.f64();
    j.profile.push_back(std::move(o));
  }
}

// A section: its bytes behind their length.
template <class Put>
void section(ByteWriter& out, Put put) {
  ByteWriter w;
  put(w);
  out.str(w.bytes());
}

}  // namespace

std::string encode_job(const JobData& job, Depth depth) {
  ByteWriter out;
  out.u64(static_cast<std::uint64_t>(depth));
  section(out, [&](ByteWriter& w) { put_glance(w, job); });
  if (depth >= Depth::Summary) section(out, [&](ByteWriter& w) { put_summary(w, job); });
  if (depth >= Depth::Full) section(out, [&](ByteWriter& w) { put_tables(w, job); });
  return std::move(out.bytes());
}

JobData decode_job(std::string_view bytes, Depth depth, const std::vector<std::string>* summary_keys) {
  ByteReader in(bytes);
  const std::uint64_t have = in.u64();
  if (have > static_cast<std::uint64_t>(Depth::Full)) throw std::runtime_error("bad record depth");
  if (static_cast<std::uint64_t>(depth) > have) throw std::runtime_error("record holds less than asked");
  JobData j;
  j.depth = depth;
  {
    ByteReader s(in.view());
    get_glance(s, j);
  }
  if (depth >= Depth::Summary) {
    ByteReader s(in.view());
    get_summary(s, j, summary_keys);
  }
  if (depth >= Depth::Full) {
    ByteReader s(in.view());
    get_tables(s, j);
  }
  return j;
}

}  // namespace gridrun::results::detail

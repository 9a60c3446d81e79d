// TensorBoard event files of a run (see tensorboard.hpp for what and why).
//
// Layout of DIR (tags are what TensorBoard's scalar dashboard groups by their first word):
//   DIR/events.out.tfevents.*                 the hparams experiment (_hparams_/experiment)
//   DIR/<id>[_<param>=<value>...]/events...   one job: _hparams_/session_start_info (step 0), then
//     step/<column>      every /steps column but step, epoch and wall_s, at the row's step
//     step/<matrix>/<r>  every per-rank column of /steps (rank_step_s), one tag per rank
//     epoch/<column>     every /epochs column but epoch and wall_s, at step = the epoch (from 1)
//     util/<column>      per epoch: the mean of the /util samples taken during that epoch, of the
//                        mean over ranks or devices of a per-rank/per-device column
//     summary/<figure>   the /summary figures (but the *_unix instants), at the job's last step
//   and _hparams_/session_end_info (status) when the job has ended.
// wall_time of a row: the job's start_unix plus the row's wall_s (seconds since the job started).
#include "gridrun/report/tensorboard.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "gridrun/base/crc32c.hpp"
#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/own_dir.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/results/reader.hpp"
#include "tensorboard_hparams.pb.h"
#include "tensorflow_event.pb.h"

namespace gridrun::report {

namespace fs = std::filesystem;
namespace hp = tensorboard::hparams;

namespace {

constexpr const char* kSessionStartTag = "_hparams_/session_start_info";
constexpr const char* kSessionEndTag = "_hparams_/session_end_info";
constexpr const char* kExperimentTag = "_hparams_/experiment";

// The hparams metrics the experiment lists (the table's metric columns: each session's last value
// of that tag), in this order, where at least one job wrote the tag.
const std::vector<std::string> kMetricTags = {
    "epoch/test_acc",        "epoch/test_loss",          "epoch/train_loss",     "epoch/train_acc",
    "summary/samples_per_s", "summary/step_s_p50",       "summary/step_s_p95",   "summary/best_test_acc",
    "summary/comm_share",    "summary/time_to_target_s", "summary/latency_p50_s"};

// One event file, made in memory: records appended in order, written at once.
class EventFile {
 public:
  explicit EventFile(double wall_time) {
    tensorflow::Event e;
    e.set_wall_time(wall_time);
    e.set_file_version("brain.Event:2");
    add(e);
  }

  void add(const tensorflow::Event& e) {
    std::string payload;
    if (!e.SerializeToString(&payload)) throw std::runtime_error("tensorboard: cannot encode an event");
    bytes_ += tfrecord(payload);
    ++events_;
  }

  // Writes the file atomically as DIR/NAME. The earlier export's files there go afterwards
  // (ExportList::replace): TensorBoard would read both and show every point twice.
  void write(const fs::path& dir, const std::string& name) const {
    base::write_file_atomic((dir / name).string(), bytes_);
  }

  std::size_t events() const { return events_; }

 private:
  std::string bytes_;
  std::size_t events_ = 0;
};

// The files an export wrote, listed in OUT/.gridrun-tensorboard (one path relative to OUT a line), so
// that the next export into OUT replaces exactly those and nothing else: an event file gridrun did
// not write (another experiment's logs in the same folder, same naming) is left alone and named
// once (issue 57: every events.out.tfevents.* was deleted, through a link too).
class ExportList {
 public:
  explicit ExportList(fs::path out) : out_(std::move(out)) {
    const auto text = base::try_read_file(list_path(), base::kinds::kTensorboardList);
    if (!text) return;
    for (const std::string& line : base::split(*text, '\n'))
      if (!line.empty()) before_.insert(line);
  }

  // After DIR/NAME was written (DIR: OUT or one of its run folders): the earlier export's files in
  // DIR go, never through a link (base::remove_own_entries); other event files are named on `log`.
  void replace(const std::string& folder, const std::string& name, std::ostream& log) {
    const std::string prefix = folder.empty() ? std::string() : folder + "/";
    now_.insert(prefix + name);
    const fs::path dir = folder.empty() ? out_ : out_ / folder;
    base::remove_own_entries(
        dir.string(), [&](const std::string& n) { return n != name && before_.count(prefix + n) > 0; });
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      const std::string other = entry.path().filename().string();
      if (other != name && other.rfind("events.out.tfevents.", 0) == 0 && !before_.count(prefix + other))
        log << "export: warning: " << entry.path().string()
            << ": an event file gridrun did not write; left alone (TensorBoard reads it too)\n";
    }
  }

  // The list of this export, for the next one.
  void save() const {
    std::string text;
    for (const std::string& f : now_) text += f + "\n";
    base::write_file_atomic(list_path(), text);
  }

 private:
  std::string list_path() const { return (out_ / ".gridrun-tensorboard").string(); }

  fs::path out_;
  std::set<std::string> before_, now_;
};

tensorflow::Event scalar_event(double wall_time, std::int64_t step) {
  tensorflow::Event e;
  e.set_wall_time(wall_time);
  e.set_step(step);
  return e;
}

void add_scalar(tensorflow::Event& e, const std::string& tag, double v) {
  auto* value = e.mutable_summary()->add_value();
  value->set_tag(tag);
  value->set_simple_value(static_cast<float>(v));
}

// An hparams plugin summary: its data in the metadata, and the empty float tensor the plugin's own
// writer puts beside it (tensorboard/plugins/hparams/metadata.py, NULL_TENSOR).
tensorflow::Event hparams_event(double wall_time, const std::string& tag, const hp::HParamsPluginData& data) {
  tensorflow::Event e = scalar_event(wall_time, 0);
  auto* value = e.mutable_summary()->add_value();
  value->set_tag(tag);
  auto* meta = value->mutable_metadata();
  meta->set_data_class(tensorflow::DATA_CLASS_TENSOR);
  meta->mutable_plugin_data()->set_plugin_name("hparams");
  if (!data.SerializeToString(meta->mutable_plugin_data()->mutable_content()))
    throw std::runtime_error("tensorboard: cannot encode the hparams data");
  auto* tensor = value->mutable_tensor();
  tensor->set_dtype(tensorflow::DT_FLOAT);
  tensor->mutable_tensor_shape()->add_dim()->set_size(0);
  return e;
}

google::protobuf::Value hparam_value(const results::ParamValue& v) {
  google::protobuf::Value out;
  if (const auto* b = std::get_if<bool>(&v))
    out.set_bool_value(*b);
  else if (const auto* i = std::get_if<std::int64_t>(&v))
    out.set_number_value(static_cast<double>(*i));
  else if (const auto* d = std::get_if<double>(&v))
    out.set_number_value(*d);
  else
    out.set_string_value(std::get<std::string>(v));
  return out;
}

// Characters a folder name keeps; others become '_' (a path separator or a space in a value).
std::string folder_safe(const std::string& s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) {
    const bool keep =
        std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+' || c == '=';
    out += keep ? c : '_';
  }
  return out;
}

// "<id>_<param>=<value>..." for the parameters that vary (what tells the runs apart in a legend).
std::string run_name(const results::JobRecord& job, const std::vector<std::string>& varying) {
  std::string name = job.id;
  for (const auto& p : varying) {
    const std::string v = results::param_text(job.params, p);
    if (!v.empty()) name += "_" + folder_safe(p, 32) + "=" + folder_safe(v, 32);
  }
  return name.substr(0, 160);
}

double mean_finite(const double* v, std::size_t n, std::size_t stride = 1) {
  double sum = 0;
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (std::isfinite(v[i * stride])) sum += v[i * stride], ++k;
  return k ? sum / static_cast<double>(k) : std::nan("");
}

// Per-sample values of each /util column: the column itself, or the mean over ranks/devices.
std::map<std::string, std::vector<double>> util_series(const results::TableData& util) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, col] : util.columns)
    if (name != "time_s")
      out[name].assign(col.begin(),
                       col.begin() + static_cast<std::ptrdiff_t>(std::min(col.size(), util.rows)));
  for (const auto& [name, m] : util.matrices) {
    auto& s = out[name];
    for (std::size_t r = 0; r < m.rows; ++r)
      s.push_back(m.cols ? mean_finite(&m.data[r * m.cols], m.cols) : NAN);
  }
  return out;
}

struct JobWriter {
  const results::JobRecord& job;
  const results::JobData& data;
  double start;  // seconds since the epoch at the job's start
  std::set<std::string>* tags;

  double at(double wall_s) const { return start + (std::isfinite(wall_s) ? wall_s : 0); }

  void steps(EventFile& f) const {
    const results::TableData& t = data.steps;
    const auto* step = t.column("step");
    const auto* wall = t.column("wall_s");
    for (std::size_t r = 0; r < t.rows; ++r) {
      const auto s =
          static_cast<std::int64_t>(step && r < step->size() ? (*step)[r] : static_cast<double>(r + 1));
      tensorflow::Event e = scalar_event(at(wall && r < wall->size() ? (*wall)[r] : NAN), s);
      for (const auto& [name, col] : t.columns)
        if (name != "step" && name != "epoch" && name != "wall_s" && r < col.size())
          put(e, "step/" + name, col[r]);
      for (const auto& [name, m] : t.matrices)
        for (std::size_t c = 0; r < m.rows && c < m.cols; ++c)
          put(e, "step/" + name + "/" + std::to_string(c), m.at(r, c));
      if (e.summary().value_size()) f.add(e);
    }
  }

  void epochs(EventFile& f) const {
    const results::TableData& t = data.epochs;
    const auto* epoch = t.column("epoch");
    const auto* wall = t.column("wall_s");
    const auto* util_time = data.util.column("time_s");
    const auto util = util_series(data.util);
    double from = 0;  // the epoch's util window: (end of the previous epoch, end of this one]
    for (std::size_t r = 0; r < t.rows; ++r) {
      const double w = wall && r < wall->size() ? (*wall)[r] : NAN;
      const auto s =
          static_cast<std::int64_t>(epoch && r < epoch->size() ? (*epoch)[r] : static_cast<double>(r + 1));
      tensorflow::Event e = scalar_event(at(w), s);
      for (const auto& [name, col] : t.columns)
        if (name != "epoch" && name != "wall_s" && r < col.size()) put(e, "epoch/" + name, col[r]);
      for (const auto& [name, series] : util) {
        if (!util_time || !std::isfinite(w)) break;
        double sum = 0;
        std::size_t k = 0;
        for (std::size_t i = 0; i < series.size() && i < util_time->size(); ++i) {
          const double ti = (*util_time)[i];
          if (ti > from && ti <= w && std::isfinite(series[i])) sum += series[i], ++k;
        }
        if (k) put(e, "util/" + name, sum / static_cast<double>(k));
      }
      if (std::isfinite(w)) from = w;
      if (e.summary().value_size()) f.add(e);
    }
  }

  void summary(EventFile& f) const {
    const auto* step = data.steps.column("step");
    const std::int64_t last = step && !step->empty() ? static_cast<std::int64_t>(step->back()) : 0;
    const double end = data.attr_number("end_unix", NAN);
    tensorflow::Event e = scalar_event(std::isfinite(end) ? end : start, last);
    for (const auto& [name, v] : job.summary) {
      const bool instant = name.size() > 5 && name.compare(name.size() - 5, 5, "_unix") == 0;
      if (!instant && std::isfinite(v)) put(e, "summary/" + name, v);
    }
    if (e.summary().value_size()) f.add(e);
  }

  void put(tensorflow::Event& e, const std::string& tag, double v) const {
    add_scalar(e, tag, v);
    tags->insert(tag);
  }
};

hp::HParamsPluginData session_start(const results::JobRecord& job, double start) {
  hp::HParamsPluginData d;
  d.set_version(0);
  auto* info = d.mutable_session_start_info();
  info->set_start_time_secs(start);
  for (const auto& spec : jobs::param_table()) {
    const auto v = results::param_value(job.params, spec.name);
    if (v) (*info->mutable_hparams())[spec.name] = hparam_value(*v);
  }
  return d;
}

// The session's end for the hparams table's status column; none while the job runs.
std::optional<hp::HParamsPluginData> session_end(const results::JobRecord& job,
                                                 const results::JobData& data) {
  if (job.status == "running" || job.status.empty()) return std::nullopt;
  hp::HParamsPluginData d;
  d.set_version(0);
  auto* info = d.mutable_session_end_info();
  const bool ok = job.status == "completed" || job.status == "target_reached";
  info->set_status(ok ? hp::STATUS_SUCCESS : hp::STATUS_FAILURE);
  const double end = data.attr_number("end_unix", NAN);
  if (std::isfinite(end)) info->set_end_time_secs(end);
  return d;
}

hp::DataType hparam_type(jobs::Type t) {
  switch (t) {
    case jobs::Type::Bool: return hp::DATA_TYPE_BOOL;
    case jobs::Type::String: return hp::DATA_TYPE_STRING;
    default: return hp::DATA_TYPE_FLOAT64;
  }
}

// The experiment: the parameters that vary between the exported jobs (all of them when none does,
// a run of one job) with the values they take, and the metrics any job has.
hp::HParamsPluginData experiment(const LoadedRun& run, const std::vector<const results::JobRecord*>& jobs,
                                 const std::vector<std::string>& varying, const std::set<std::string>& tags,
                                 double now) {
  hp::HParamsPluginData d;
  d.set_version(0);
  auto* x = d.mutable_experiment();
  x->set_time_created_secs(now);
  x->set_description("gridrun run " + run.run_dir + ": " + std::to_string(jobs.size()) + " jobs");
  for (const auto& spec : jobs::param_table()) {
    if (!varying.empty() && std::find(varying.begin(), varying.end(), spec.name) == varying.end()) continue;
    // Each value once, numbers in numeric order (0.5 before 10), then texts.
    std::map<std::pair<double, std::string>, google::protobuf::Value> values;
    for (const auto* j : jobs)
      if (const auto v = results::param_value(j->params, spec.name)) {
        const google::protobuf::Value pv = hparam_value(*v);
        const double key = pv.has_number_value() ? pv.number_value() : HUGE_VAL;
        values[{key, results::to_string(*v)}] = pv;
      }
    if (values.empty()) continue;
    auto* info = x->add_hparam_infos();
    info->set_name(spec.name);
    info->set_description(spec.help);
    info->set_type(hparam_type(spec.type));
    for (const auto& [key, v] : values) *info->mutable_domain_discrete()->add_values() = v;
  }
  for (const auto& tag : kMetricTags) {
    if (!tags.count(tag)) continue;
    auto* m = x->add_metric_infos();
    m->mutable_name()->set_tag(tag);
    const std::string word = tag.substr(tag.find('/') + 1);
    if (word.rfind("test_", 0) == 0) m->set_dataset_type(hp::DATASET_VALIDATION);
    if (word.rfind("train_", 0) == 0) m->set_dataset_type(hp::DATASET_TRAINING);
  }
  return d;
}

}  // namespace

std::string tfrecord(const std::string& payload) {
  std::string out;
  unsigned char len[8];
  const std::uint64_t n = payload.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
  auto put32 = [&out](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFFu);
  };
  out.append(reinterpret_cast<const char*>(len), 8);
  put32(base::crc32c_masked(len, 8));
  out += payload;
  put32(base::crc32c_masked(payload.data(), payload.size()));
  return out;
}

std::string tensorboard_file_name(double now, const std::string& host, long pid, int n) {
  return "events.out.tfevents." + std::to_string(static_cast<long long>(now)) + "." + folder_safe(host, 64) +
         "." + std::to_string(pid) + "." + std::to_string(n);
}

TensorboardExport write_tensorboard(const LoadedRun& run, const TensorboardOptions& opts, std::ostream& log) {
  const double now = opts.now > 0 ? opts.now : base::unix_now();
  const std::string host = opts.host.empty() ? base::hostname() : opts.host;
  const fs::path out = opts.out_dir;
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) throw std::runtime_error(opts.out_dir + ": cannot create: " + ec.message());

  const auto by_id = run.data_by_id();
  std::vector<const results::JobRecord*> jobs;
  std::vector<const results::RecordedParams*> params;
  for (const auto& j : run.jobs)
    if (by_id.count(j.id)) jobs.push_back(&j), params.push_back(&j.params);
  const std::vector<std::string> varying = results::varying_params(params);

  TensorboardExport done;
  std::set<std::string> tags;
  ExportList list(out);
  int n = 0;
  for (const auto* job : jobs) {
    const results::JobData& data = *by_id.at(job->id);
    double start = data.attr_number("start_unix", NAN);
    if (!std::isfinite(start)) {
      const auto iso = base::parse_iso_time(data.start_time);
      start = iso ? static_cast<double>(*iso) : now;
    }
    const std::string name = run_name(*job, varying);
    EventFile f(start);
    f.add(hparams_event(start, kSessionStartTag, session_start(*job, start)));
    const JobWriter w{*job, data, start, &tags};
    w.steps(f);
    w.epochs(f);
    w.summary(f);
    if (const auto end = session_end(*job, data)) {
      const double t = data.attr_number("end_unix", NAN);
      f.add(hparams_event(std::isfinite(t) ? t : start, kSessionEndTag, *end));
    }
    // A folder of the export's own, never a link (through one, files were written and removed
    // elsewhere): base::make_own_dir refuses it, naming it.
    base::make_own_dir((out / name).string());
    const std::string file = tensorboard_file_name(now, host, static_cast<long>(::getpid()), n++);
    f.write(out / name, file);
    list.replace(name, file, log);
    done.runs.push_back(name);
    done.events += f.events();
  }
  EventFile root(now);
  root.add(hparams_event(now, kExperimentTag, experiment(run, jobs, varying, tags, now)));
  const std::string root_file = tensorboard_file_name(now, host, static_cast<long>(::getpid()), n++);
  root.write(out, root_file);
  list.replace("", root_file, log);
  list.save();
  done.events += root.events();
  if (!opts.quiet)
    log << "export: " << done.runs.size() << " TensorBoard runs (" << done.events << " events) in "
        << opts.out_dir << ": tensorboard --logdir " << opts.out_dir << "\n";
  return done;
}

}  // namespace gridrun::report

// See cli.hpp.
#include "cli.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "gridrun/base/text.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/suggest.hpp"
#include "gridrun/run/run_dir.hpp"

namespace po = boost::program_options;

namespace gridrun::app {

namespace {

// "unrecognised option '--widht'" + "; did you mean '--width'?" when one of the command's flags is
// close (jobs::flag_hint, as gridrun-train's flag errors).
std::string unknown_flag_message(const po::unknown_option& e, const po::options_description& opts) {
  std::vector<std::string> names;
  for (const auto& o : opts.options()) names.push_back(o->long_name());
  return e.what() + jobs::flag_hint(e.get_option_name(), names);
}

namespace fs = std::filesystem;

// The runs directly under `dir` (what `gridrun ls DIR` lists first), sorted.
std::vector<std::string> runs_under(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code tec;
    if (it->is_directory(tec) && run::RunDir(it->path().string()).holds_run())
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// "'runs' is a folder of 3 runs (runs/a, runs/b, runs/c)", "" when `dir` holds no run directly
// under it; `first` is then the first of them.
std::string folder_of_runs(const std::string& dir, std::string& first) {
  const std::vector<std::string> runs = runs_under(dir);
  if (runs.empty()) return "";
  first = runs.front();
  std::string names;
  for (std::size_t k = 0; k < runs.size() && k < 3; ++k) names += (k ? ", " : "") + runs[k];
  if (runs.size() > 3) names += ", ...";
  return "'" + dir + "' is a folder of " + base::counted("run", static_cast<long long>(runs.size())) + " (" +
         names + ")";
}

// The run directory `dir` as the commands that read it and the one that continues it name it.
std::string run_folder_hint(const std::string& dir) {
  const run::RunDir rd(dir);
  std::string again;
  try {
    const run::RunState st = rd.load_state();
    if (!st.grid_file.empty()) {
      const fs::path parent = fs::path(dir).lexically_normal().parent_path();
      again = "gridrun run " + base::shell_quote(st.grid_file) + " --out " +
              base::shell_quote(parent.empty() ? "." : parent.string());
      for (const auto& o : st.overrides) again += " --set " + base::shell_quote(o);
      if (st.repeats > 0) again += " --repeats " + std::to_string(st.repeats);
    }
  } catch (const std::exception&) {
    // A damaged state.json: status names it; the hint goes without the run command.
  }
  const std::string q = base::shell_quote(dir);
  return "'" + dir + "' is a run folder, not a grid file: `gridrun status " + q +
         "` shows its jobs, `gridrun report " + q + "` its results" +
         (again.empty() ? "" : "; `" + again + "` continues it (completed jobs are skipped)");
}

bool looks_like_grid(const std::string& path) {
  return base::ends_with(path, ".yaml") || base::ends_with(path, ".yml");
}

// HDF5's signature, at 0 or at a user block's end (512, 1024, 2048, ... bytes).
bool is_hdf5(const std::string& path) {
  static const std::array<char, 8> kSignature = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::ifstream in(path, std::ios::binary);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!in || ec) return false;
  for (std::uintmax_t at = 0; at + kSignature.size() <= size; at = at == 0 ? 512 : at * 2) {
    std::array<char, 8> got{};
    in.seekg(static_cast<std::streamoff>(at));
    if (!in.read(got.data(), got.size())) return false;
    if (got == kSignature) return true;
  }
  return false;
}

}  // namespace

void check_grid_path(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return;
  if (run::RunDir(path).holds_run()) throw std::invalid_argument(run_folder_hint(path));
  std::string first;
  if (const std::string runs = folder_of_runs(path, first); !runs.empty())
    throw std::invalid_argument(runs + ", not a grid file: `gridrun ls " + base::shell_quote(path) +
                                "` lists them, `gridrun status " + base::shell_quote(first) + "` shows one");
}

void check_run_path(const std::string& path, const std::string& command, bool results_file_ok) {
  std::error_code ec;
  const std::string not_one = " not a run folder" + std::string(results_file_ok ? " or its results.h5" : "");
  if (fs::is_directory(path, ec)) {
    if (run::RunDir(path).holds_run()) return;
    std::string first;
    if (const std::string runs = folder_of_runs(path, first); !runs.empty())
      throw std::invalid_argument(runs + ", not a run: `gridrun ls " + base::shell_quote(path) +
                                  "` lists them, `gridrun " + command + " " + base::shell_quote(first) +
                                  "` takes one");
    return;
  }
  if (!fs::is_regular_file(path, ec)) return;
  if (results_file_ok && is_hdf5(path)) return;
  if (looks_like_grid(path)) {
    // The run folder this grid makes (or made), where `gridrun run` puts it without --out.
    std::string made = "runs/<name>";
    try {
      jobs::LoadOptions lo;
      lo.allow_empty = true;
      made = run::RunDir::for_grid("runs", jobs::load_grid(path, lo).name).root();
    } catch (const std::exception&) {
      // A grid with errors: `gridrun run` names them; the hint keeps the placeholder.
    }
    const std::string then = "`gridrun " + command + " " + base::shell_quote(made) + "`";
    throw std::invalid_argument(
        path + " is a grid file," + not_one + ": " +
        (fs::is_directory(made, ec)
             ? "its run is " + then
             : "run it first (`gridrun run " + base::shell_quote(path) + "`), then " + then));
  }
  throw std::invalid_argument(path + " is" + not_one +
                              (results_file_ok ? " (no HDF5 signature)" : " (a file)"));
}

bool flag_given(const po::variables_map& vm, const char* flag) {
  return vm.count(flag) > 0 && !vm[flag].defaulted();
}

po::variables_map parse_flags(const Args& args, const po::options_description& opts,
                              const po::positional_options_description& pos, const std::string& cmd) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).style(kNoGuessing).run(), vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    throw std::invalid_argument(unknown_flag_message(e, opts) + " (see gridrun " + cmd + " --help)");
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see gridrun " + cmd + " --help)");
  }
  return vm;
}

std::optional<po::variables_map> parse_command(const Args& args, const po::options_description& opts,
                                               const std::vector<Positional>& positionals,
                                               const std::string& cmd, const bool& help, const HelpText& text,
                                               std::ostream& os, const po::options_description* unlisted) {
  // Added first, before anything can throw: the description owns the values from here on.
  po::options_description hidden;
  po::positional_options_description pos;
  for (const auto& p : positionals) {
    hidden.add_options()(p.option, p.value, p.help);
    pos.add(p.option, p.max_count);
  }
  po::options_description all;
  all.add(opts).add(hidden);
  if (unlisted) all.add(*unlisted);
  po::variables_map vm = parse_flags(args, all, pos, cmd);
  if (!help) return vm;
  os << "usage: " << text.usage << "\n\n";
  if (text.about) os << text.about << "\n\n";
  if (!positionals.empty()) {
    os << "arguments:\n";
    for (const auto& p : positionals) {
      std::string line = std::string("  ") + p.shown;
      line.resize(std::max<std::size_t>(line.size() + 2, 24), ' ');
      for (const char* c = p.help; *c; ++c)
        line += *c == '\n' ? "\n" + std::string(24, ' ') : std::string(1, *c);
      os << line << "\n";
    }
    os << "\n";
  }
  os << opts << text.footer;
  return std::nullopt;
}

Args optional_number(Args args, const std::string& flag, const std::string& implicit) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") break;  // what follows is positional
    if (args[i] != flag) continue;
    const bool number = i + 1 < args.size() && !args[i + 1].empty() &&
                        args[i + 1].find_first_not_of("0123456789") == std::string::npos;
    if (!number) args[i] = flag + "=" + implicit;
  }
  return args;
}

po::options_description command_options(bool& help) {
  po::options_description opts("options", 100);
  opts.add_options()("help,h", po::bool_switch(&help), "show this help");
  return opts;
}

void add_select_flags(po::options_description& opts, std::vector<std::string>& only,
                      std::vector<std::string>& set) {
  opts.add_options()("only", po::value(&only)->composing(), kOnlyHelp)("set", po::value(&set)->composing(),
                                                                       kSetHelp);
}

void add_only_flag(po::options_description& opts, std::vector<std::string>& only) {
  opts.add_options()("only", po::value(&only)->composing(), kOnlyReadHelp);
}

std::vector<jobs::Selector> parse_only(const std::vector<std::string>& only, const std::string& flag) {
  return jobs::parse_selectors(only, flag, {"id", "status"});
}

std::vector<std::pair<std::string, std::string>> only_filters(const std::vector<jobs::Selector>& only) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : only) {
    std::string values;
    for (const auto& v : s.values) values += (values.empty() ? "" : ",") + v;
    out.emplace_back(s.key, values);
  }
  return out;
}

void add_table_flags(po::options_description& opts, std::string& format, int& width,
                     const std::string& formats) {
  opts.add_options()("format,f", po::value(&format)->default_value(format), formats.c_str())(
      "width,w", po::value(&width)->default_value(0),
      "wrap tables at N columns, 40-400 (0: the terminal's width, at most 100)");
}

void add_site_flags(po::options_description& opts, slurm::ScriptOptions& so, const std::string& help_prefix) {
  for (const auto& row : slurm::site_options()) {
    std::string& field = so.*row.field;
    auto* value = po::value<std::string>(&field);
    if (!field.empty()) value->default_value(field);
    const std::string name = std::string(row.flag) + (*row.alias ? std::string(",") + row.alias : "");
    opts.add_options()(name.c_str(), value, (help_prefix + row.help).c_str());
  }
}

void add_repeats_flag(po::options_description& opts, int& repeats) {
  opts.add_options()("repeats", po::value(&repeats),
                     "measure every compare-by phase N times, interleaved (A B B A ...), each a sitting "
                     "of its own: the verdict then gives the ratio with a 95 % interval (1-20; "
                     "replaces the grid's compare.repeats)");
}

int check_repeats(int repeats, bool given) {
  if (!given) return 0;
  if (repeats < 1 || repeats > jobs::kMaxRepeats)
    throw std::invalid_argument("--repeats " + std::to_string(repeats) + ": expected 1 to " +
                                std::to_string(jobs::kMaxRepeats));
  return repeats;
}

int table_width(int flag) {
  if (flag == 0) return terminal_width();
  if (flag < 40 || flag > 400)
    throw std::invalid_argument("--width " + std::to_string(flag) +
                                ": expected 40-400 (or 0: the terminal's)");
  return flag;
}

int terminal_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
    return std::min<int>(ws.ws_col, 100);
  return 100;
}

}  // namespace gridrun::app

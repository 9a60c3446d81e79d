// See cli.hpp.
#include "cli.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/suggest.hpp"

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

}  // namespace

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

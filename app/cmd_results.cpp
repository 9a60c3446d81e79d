// `gridrun collect` and `gridrun report`: thin CLI edges over gridrun::results. Each command's
// flags live in one options struct filled here from Boost.Program_options and validated right
// after parsing; bad flags throw std::invalid_argument (exit 2 in main.cpp).
#include <boost/program_options.hpp>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gridrun/results/collect.hpp"
#include "gridrun/results/report.hpp"

namespace gridrun::app {

namespace po = boost::program_options;

namespace {

struct CollectCli {
  std::string run_dir;
  bool quiet = false;
  bool help = false;
};

struct ReportCli {
  std::string input;
  std::string format = "table";
  std::string group_by;
  std::vector<std::string> filters;
  int width = 100;
  bool help = false;
};

po::variables_map parse(const Args& args, const po::options_description& opts,
                        const po::positional_options_description& pos, const char* cmd) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see gridrun " + cmd + " --help)");
  }
  return vm;
}

}  // namespace

int cmd_collect(const Args& args) {
  CollectCli o;
  po::options_description opts(
      "usage: gridrun collect RUN_DIR [options]\n\n"
      "Builds RUN_DIR/results.h5 from RUN_DIR/results/<id>.h5 (or .h5.partial): a /jobs table\n"
      "(id, status, parameters, summary figures) and an external link /links/<id> per job.\n"
      "Idempotent; unreadable or missing job files are named on stderr and skipped.\n\noptions");
  opts.add_options()
      ("help,h", po::bool_switch(&o.help), "show this help")
      ("quiet,q", po::bool_switch(&o.quiet), "no summary line on stderr (skipped files still named)")
      ("run-dir", po::value(&o.run_dir), "the run directory (positional)");
  po::positional_options_description pos;
  pos.add("run-dir", 1);
  parse(args, opts, pos, "collect");
  if (o.help) {
    std::cout << opts << "\nExit codes: 0 ok (also when files were skipped), 1 runtime failure, 2 bad input.\n";
    return 0;
  }
  if (o.run_dir.empty()) throw std::invalid_argument("missing RUN_DIR (see gridrun collect --help)");
  results::CollectOptions co;
  co.run_dir = o.run_dir;
  co.quiet = o.quiet;
  results::collect(co, std::cerr);
  return 0;
}

int cmd_report(const Args& args) {
  ReportCli o;
  po::options_description opts(
      "usage: gridrun report RUN_DIR|results.h5 [options]\n\n"
      "Prints the per-job table and, where the jobs allow, scaling over ranks (weak/strong),\n"
      "GPU vs CPU, convergence and one-large vs several-small phase tables. Repeated seeds are\n"
      "averaged (± = 95% interval). A RUN_DIR is read from its job files (current state); a\n"
      "results.h5 from its /jobs table.\n\noptions");
  opts.add_options()
      ("help,h", po::bool_switch(&o.help), "show this help")
      ("format,f", po::value(&o.format)->default_value("table"), "table | markdown | csv | json")
      ("group-by,g", po::value(&o.group_by), "print the tables once per value of this parameter")
      ("filter", po::value(&o.filters)->composing(),
       "KEY=VALUE: keep jobs whose parameter (or id, status) equals VALUE; repeatable, all must match")
      ("width,w", po::value(&o.width)->default_value(100), "wrap table/markdown output at this width (40-400)")
      ("input", po::value(&o.input), "RUN_DIR or results.h5 (positional)");
  po::positional_options_description pos;
  pos.add("input", 1);
  parse(args, opts, pos, "report");
  if (o.help) {
    std::cout << opts << "\nExit codes: 0 ok, 1 runtime failure, 2 bad input.\n";
    return 0;
  }
  if (o.input.empty()) throw std::invalid_argument("missing RUN_DIR or results.h5 (see gridrun report --help)");
  if (o.format != "table" && o.format != "markdown" && o.format != "csv" && o.format != "json")
    throw std::invalid_argument("--format " + o.format + ": expected table, markdown, csv or json");
  if (o.width < 40 || o.width > 400) throw std::invalid_argument("--width " + std::to_string(o.width) + ": expected 40-400");
  results::ReportOptions ro;
  ro.input = o.input;
  ro.format = o.format;
  ro.group_by = o.group_by;
  ro.width = o.width;
  for (const auto& f : o.filters) {
    auto eq = f.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("--filter " + f + ": expected KEY=VALUE");
    ro.filters.emplace_back(f.substr(0, eq), f.substr(eq + 1));
  }
  results::write_report(ro, std::cout, std::cerr);
  return 0;
}

}  // namespace gridrun::app

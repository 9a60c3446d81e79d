// `gridrun probe`: a thin CLI edge over gridrun::hw's CPU peak probe (the roofs `gridrun report`
// draws CPU jobs against). Its flags live in one options struct filled here from
// Boost.Program_options and validated right after parsing; bad flags throw std::invalid_argument
// (exit 2 in main.cpp).
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/hw/peak_probe.hpp"

namespace gridrun::app {

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

struct ProbeCli {
  std::string out;
  double seconds = 4.0;
  int threads = 0;
  bool help = false;
};

}  // namespace

int cmd_probe(const Args& args) {
  ProbeCli o;
  po::options_description opts = command_options(o.help);
  opts.add_options()("out,o", po::value(&o.out),
                     "JSON file to write (default ~/.cache/gridrun/probe.json; "
                     "RUN_DIR/probe.json is used by that run's report)")(
      "seconds,s", po::value(&o.seconds)->default_value(4.0),
      "time budget for the four measurements (0-600]")(
      "threads", po::value(&o.threads)->default_value(0),
      "threads for the all-threads runs (0 = every allowed CPU)");
  const HelpText help{
      "gridrun probe [options]",
      "Measures this machine's CPU roofs for the report's roofline: an fp32 GEMM (gridrun's own\n"
      "blocked kernel: a LOWER BOUND of what MKL/OpenBLAS reach) and a STREAM-like triad, each on\n"
      "one thread and on all threads. Prints them and stores them as JSON.",
      "\nExit codes: 0 ok, 1 runtime failure, 2 bad input.\n"};
  if (!parse_command(args, opts, {}, "probe", o.help, help, std::cout)) return 0;
  if (!(o.seconds > 0) || o.seconds > 600) throw std::invalid_argument("--seconds: expected 0 < S <= 600");
  if (o.threads < 0) throw std::invalid_argument("--threads: expected >= 0");
  if (o.out.empty()) o.out = hw::default_probe_path();
  namespace fs = std::filesystem;
  fs::path out = o.out;
  std::error_code ec;
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  if (ec) throw std::invalid_argument("--out " + o.out + ": cannot create its folder (" + ec.message() + ")");
  hw::MachineProbeOptions po_;
  po_.seconds = o.seconds;
  po_.threads = o.threads;
  std::cout << "probe: about " << o.seconds << " s" << std::endl;
  hw::ProbeResult r =
      hw::run_probe(po_, [](const std::string& line) { std::cout << "  " << line << std::endl; });
  base::write_file_atomic(o.out, hw::probe_to_json(r));
  std::cout << "probe: wrote " << o.out << " (GEMM figures are a lower bound of the peak)\n";
  return 0;
}

}  // namespace gridrun::app

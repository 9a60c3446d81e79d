// See cli.hpp.
#include "cli.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace po = boost::program_options;

namespace gridrun::app {

po::variables_map parse_flags(const Args& args, const po::options_description& opts,
                              const po::positional_options_description& pos, const std::string& cmd) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).style(kNoGuessing).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string(e.what()) + " (see gridrun " + cmd + " --help)");
  }
  return vm;
}

bool parse_command(const Args& args, const po::options_description& opts, const char* positional,
                   const std::string& cmd, const bool& help, const HelpText& text, std::ostream& os) {
  po::positional_options_description pos;
  if (positional) pos.add(positional, 1);
  parse_flags(args, opts, pos, cmd);
  if (!help) return true;
  if (text.usage) os << "usage: " << text.usage << "\n\n" << text.about << "\n\n";
  os << opts << text.footer;
  return false;
}

int terminal_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
    return std::min<int>(ws.ws_col, 100);
  return 100;
}

}  // namespace gridrun::app

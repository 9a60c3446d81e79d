// Flag parsing shared by the cmd_*.cpp files: one place that turns a Boost.Program_options error
// into the exit-2 message, and one for the "parse, then answer --help" step every command has.
#pragma once

#include <boost/program_options.hpp>
#include <ostream>
#include <string>

#include "commands.hpp"

namespace gridrun::app {

// Parses `args` (positional arguments named by `pos`, in order) with kNoGuessing; a Boost error
// becomes std::invalid_argument "<message> (see gridrun CMD --help)".
boost::program_options::variables_map parse_flags(
    const Args& args, const boost::program_options::options_description& opts,
    const boost::program_options::positional_options_description& pos, const std::string& cmd);

// What --help prints: "usage: USAGE\n\nABOUT\n\n" when usage is set (else the options' caption
// says it), the options, then `footer`.
struct HelpText {
  const char* usage = nullptr;
  const char* about = nullptr;
  const char* footer = "\n";
};

// parse_flags for a command with at most one positional argument (`positional`, may be null), then
// --help: `help` is the flag's variable (bound in `opts`). Returns false when help was printed
// (the command then exits 0).
bool parse_command(const Args& args, const boost::program_options::options_description& opts,
                   const char* positional, const std::string& cmd, const bool& help, const HelpText& text,
                   std::ostream& os);

// The help of --only and --set, the same for run, simulate, plan and submit (jobs/select.hpp).
inline constexpr const char* kOnlyHelp =
    "KEY=VALUE[,VALUE...]: only the jobs whose parameter (or id) KEY is one of the values, compared as "
    "the grid's typed values (lr=0.1 matches 0.10); repeatable, a job must match every --only; the "
    "jobs keep their ids (the selector of `report --filter`)";
inline constexpr const char* kSetHelp =
    "KEY=VALUE: every job takes this parameter value over the grid file's, checked as in the grid "
    "file; part of each job's id (so new jobs); repeatable";

// The width tables and progress lines are fitted to: the terminal's when stdout is one (40 at
// least), never more than 100 (what the tables are written for; also without a terminal).
int terminal_width();

}  // namespace gridrun::app

// Flag parsing shared by the cmd_*.cpp files: one place that turns a Boost.Program_options error
// into the exit-2 message, one for the "parse, then answer --help" step every command has, and the
// flags several commands share, so that each is spelled (and shortened) the same everywhere.
// The convention itself (short flags, positional arguments, exit codes) is docs/cli.md.
#pragma once

#include <boost/program_options.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/slurm/script.hpp"

namespace gridrun::app {

// Parses `args` (positional arguments named by `pos`, in order) with kNoGuessing; a Boost error
// becomes std::invalid_argument "<message> (see gridrun CMD --help)", an unknown flag with the
// closest flag of `opts` ("did you mean '--width'?").
boost::program_options::variables_map parse_flags(
    const Args& args, const boost::program_options::options_description& opts,
    const boost::program_options::positional_options_description& pos, const std::string& cmd);

// A positional argument. It is parsed through a hidden option `option` that --help never lists
// among the flags (a user cannot type `--grid`-style names for it by accident of the help text);
// --help names it by `shown` in the usage line and under "arguments:".
struct Positional {
  const char* option = nullptr;  // hidden option name, e.g. "grid"
  const char* shown = nullptr;   // placeholder, e.g. "GRID.yaml"
  const char* help = nullptr;    // its line under "arguments:" ('\n' starts an indented line)
  int max_count = 1;             // 1, or -1: any number (RUN_DIR [RUN_DIR ...])
  // The value, e.g. po::value(&o.grid): the parser owns it once parse_command added it.
  boost::program_options::value_semantic* value = nullptr;
};

// What --help prints: "usage: USAGE\n\nABOUT\n\n", "arguments:" (the positionals), the options,
// then `footer` (the command's exit codes).
struct HelpText {
  const char* usage = nullptr;  // the whole line after "usage: ", e.g. "gridrun collect RUN_DIR [options]"
  const char* about = nullptr;
  const char* footer = "\n";
};

// Parses `args` against `opts` plus the positionals (and `unlisted`: flags still read but no longer
// listed, such as an older name), then answers --help (`help` is the flag's variable, bound in
// `opts`) on `os`. Returns the parsed flags, or nothing when help was printed (the command then
// exits 0).
std::optional<boost::program_options::variables_map> parse_command(
    const Args& args, const boost::program_options::options_description& opts,
    const std::vector<Positional>& positionals, const std::string& cmd, const bool& help,
    const HelpText& text, std::ostream& os,
    const boost::program_options::options_description* unlisted = nullptr);

// A flag with an optional number (Boost's implicit_value, `report --profile [N]`) takes the next
// argument as its value even when that is a positional one (`report --profile RUN_DIR` failed on
// RUN_DIR as N). A lone `--FLAG` whose next argument is not a whole number becomes
// `--FLAG=IMPLICIT`, so that argument stays what it is; `--FLAG 20` keeps meaning N = 20.
Args optional_number(Args args, const std::string& flag, const std::string& implicit);

// The options list every command prints: caption "options", wrapped at 100 columns, starting with
// -h/--help (bound to `help`).
boost::program_options::options_description command_options(bool& help);

// The help of --only and --set, the same for run, simulate, plan, calibrate and submit
// (jobs/select.hpp).
inline constexpr const char* kOnlyHelp =
    "KEY=VALUE[,VALUE...]: only the jobs whose parameter (or id) KEY is one of the values, compared as "
    "the grid's typed values (lr=0.1 matches 0.10); repeatable, a job must match every --only; the "
    "jobs keep their ids (the selector of status, report and export --only)";
inline constexpr const char* kSetHelp =
    "KEY=VALUE: every job takes this parameter value over the grid file's (KEY: a parameter, or "
    "one a command grid declares under params:), checked as in the grid file; part of each job's "
    "id (so new jobs); repeatable. KEY=A,B,C (or KEY repeated): an axis "
    "of these values in place of the grid's own for KEY, every job once per value (a free-text "
    "value such as a path or mlp_hidden keeps its commas: repeat the flag for a list)";
// Adds --only and --set (composing, as given; jobs::parse_selectors/parse_overrides read them).
void add_select_flags(boost::program_options::options_description& opts, std::vector<std::string>& only,
                      std::vector<std::string>& set);

// --only of the commands that read a run (status, report, export): the same selector as `run
// --only` (jobs::parse_selectors), over the run's jobs, with two more keys: id and status (the
// job's outcome: completed, failed, running, ...). One flag, one parser and one message for all
// three, so that a selector typed for `run` works unchanged when reading its results.
inline constexpr const char* kOnlyReadHelp =
    "KEY=VALUE[,VALUE...]: only the jobs whose parameter, id or status is one of the values, compared "
    "as the grid's typed values (lr=0.1 matches 0.10); repeatable, a job must match every --only (the "
    "selector of `run --only`)";
void add_only_flag(boost::program_options::options_description& opts, std::vector<std::string>& only);
// The --only values parsed and checked: std::invalid_argument "FLAG TEXT: ..." (exit 2) for a
// malformed selector, an unknown key (with did-you-mean) or a value of the wrong type.
std::vector<jobs::Selector> parse_only(const std::vector<std::string>& only,
                                       const std::string& flag = "--only");
// The same selectors as report::ReportOptions::filters (KEY, VALUE[,VALUE...]) for the reader.
std::vector<std::pair<std::string, std::string>> only_filters(const std::vector<jobs::Selector>& only);

// --format,-f and --width,-w of a command that prints tables. `formats`: "table | csv | json" as
// the command has them (its help text; the command checks the value).
void add_table_flags(boost::program_options::options_description& opts, std::string& format, int& width,
                     const std::string& formats);
// --width: 0 (the default) is the terminal's width (terminal_width); else it must be 40-400.
// `--repeats N` of run, simulate, calibrate and submit: every compare-by phase measured N times,
// interleaved (docs/grid.md "compare"). check_repeats validates a given value (1 to
// jobs::kMaxRepeats) and returns it, 0 when the flag was not given (the grid's compare.repeats).
// The Slurm site flags, one per row of slurm::site_options() (partition, account, qos, constraint,
// time, network), bound to their fields of `so`; a field already set is the flag's default.
// `help_prefix` goes before each description ("--slurm: " for calibrate).
void add_site_flags(boost::program_options::options_description& opts, slurm::ScriptOptions& so,
                    const std::string& help_prefix);
void add_repeats_flag(boost::program_options::options_description& opts, int& repeats);
int check_repeats(int repeats, bool given);

// Whether `flag` was on the command line (not only its default): what decides whether a default
// may give way (--launch) and which flags a suggested command repeats.
bool flag_given(const boost::program_options::variables_map& vm, const char* flag);
int table_width(int flag);

// Paths of the wrong kind (issue 58), each refused with std::invalid_argument (exit 2) naming the
// path, what it is and the command meant:
// - where a grid file is expected (run, simulate, calibrate, plan, submit): a run folder (status,
//   report, and the run command that continues it) or a folder of runs (ls);
// - where a run folder is expected (`command`: status, report, export, ...): a grid file (run it
//   first; the run folder it makes), a folder of runs (ls, and one of them), and, unless
//   `results_file_ok`, any file; with it, a file that is not HDF5 (report takes a results.h5).
// Paths of the right kind, and paths that do not exist, are left to the command's own checks.
void check_grid_path(const std::string& path);
void check_run_path(const std::string& path, const std::string& command, bool results_file_ok);

// The width tables and progress lines are fitted to: the terminal's when stdout is one (40 at
// least), never more than 100 (what the tables are written for; also without a terminal).
int terminal_width();

}  // namespace gridrun::app

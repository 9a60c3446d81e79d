// The subcommands of `gridrun`. Each lives in its own cmd_*.cpp, parses its own flags with
// Boost.Program_options into one options struct, and returns the process exit code
// (0 ok, 1 runtime failure, 2 bad input). main.cpp only dispatches.
#pragma once

#include <boost/program_options/cmdline.hpp>
#include <string>
#include <vector>

namespace gridrun::app {

using Args = std::vector<std::string>;  // arguments after the subcommand name

// Every subcommand parses with this style: Boost's default accepts any unambiguous prefix of a
// flag ("--gpu" for "--gpus"), which silently changes meaning when a flag is added later.
inline constexpr int kNoGuessing = boost::program_options::command_line_style::unix_style ^
                                   boost::program_options::command_line_style::allow_guessing;

// One file per command (cmd_<name>.cpp), but for run, simulate and calibrate (cmd_run.cpp: they
// share the planning flags), status and cancel (cmd_status.cpp), collect and report
// (cmd_report.cpp).
int cmd_plan(const Args& args);
int cmd_run(const Args& args);  // also `simulate` (= run --simulate)
int cmd_simulate(const Args& args);
int cmd_calibrate(const Args& args);
int cmd_submit(const Args& args);
int cmd_status(const Args& args);
int cmd_cancel(const Args& args);
int cmd_collect(const Args& args);
int cmd_report(const Args& args);
// `gridrun run`'s ending after it ran or adopted jobs: collect, then `gridrun report` with
// `report_args`, from one read of RUN_DIR's job files (each read decodes every job's record).
int collect_and_report(const std::string& run_dir, const Args& report_args);
int cmd_export(const Args& args);
int cmd_probe(const Args& args);
int cmd_ls(const Args& args);
int cmd_worker_msg(const Args& args);
int cmd_job_shape(const Args& args);

}  // namespace gridrun::app

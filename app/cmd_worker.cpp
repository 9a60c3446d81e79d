// `gridrun worker-msg`: the warm worker's messages (run/worker_channel.hpp) for the Slurm task
// script, which otherwise would write them as hand-made JSON and read them by substring (issue 59:
// one codec). `task` writes the task line a worker reads; `done` reads the line a worker wrote and
// says whether it is the done message of the job the script runs, with that job's ticket.
#include <boost/program_options.hpp>
#include <iostream>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/run/worker_channel.hpp"

namespace gridrun::app {

namespace po = boost::program_options;

namespace {

struct WorkerMsgCli {
  bool help = false, resume = false;
  std::string kind, job;  // kind: task | done; job: the job file (task) or id (done)
  run::WorkerTask task;
  std::string ticket;
};

}  // namespace

int cmd_worker_msg(const Args& args) {
  WorkerMsgCli o;
  po::options_description opts = command_options(o.help);
  opts.add_options()("ticket", po::value(&o.ticket), "the job's ticket (32 hex digits; both kinds)")(
      "resume", po::bool_switch(&o.resume), "task: the job continues from its checkpoint")(
      "launched-at", po::value(&o.task.launched_at)->default_value(0.0),
      "task: when the launcher sent it, seconds since the epoch")(
      "heartbeat", po::value(&o.task.heartbeat_file), "task: the job's heartbeat file")(
      "log-out", po::value(&o.task.log_out), "task: the job's stdout log")(
      "log-err", po::value(&o.task.log_err), "task: the job's stderr log");
  const HelpText help{
      "gridrun worker-msg task|done JOB [options]",
      "The warm worker's messages for the Slurm task script (docs/scheduler.md, \"Warm launches\"):\n"
      "`task JOB_FILE` prints the one-line task message of that job for a worker's task pipe;\n"
      "`done JOB_ID` reads one line on stdin, a worker's done message, and prints `next` or\n"
      "`retiring` (the worker leaves after this job) when it is that job's, with --ticket.",
      "\nExit codes: 0 printed (task) or the job's done message (done), 1 a done message that is not\n"
      "that job's or its ticket's (the reason on stderr), 2 bad input.\n"};
  const auto vm = parse_command(
      args, opts,
      {{"kind", "task|done", "which message", 1, po::value(&o.kind)},
       {"job", "JOB", "task: the job file (absolute path); done: the job id", 1, po::value(&o.job)}},
      "worker-msg", o.help, help, std::cout);
  if (!vm) return 0;
  if (o.kind != "task" && o.kind != "done")
    throw std::invalid_argument("worker-msg: expected task or done, got '" + o.kind + "'");
  if (o.job.empty()) throw std::invalid_argument("worker-msg " + o.kind + ": missing JOB");
  if (o.ticket.empty()) throw std::invalid_argument("worker-msg " + o.kind + ": missing --ticket");
  if (o.kind == "task") {
    o.task.job_file = o.job;
    o.task.resume = o.resume;
    o.task.ticket = o.ticket;
    std::cout << run::encode(o.task) << std::flush;
    return 0;
  }
  std::string line;
  if (!std::getline(std::cin, line) || line.size() > run::kMaxDoneLineBytes) {
    std::cerr << "worker-msg done: no done message (an empty or over-long line)\n";
    return 1;
  }
  run::WorkerDone d;
  try {
    d = run::decode_done(line);
  } catch (const std::exception& e) {
    std::cerr << "worker-msg done: " << e.what() << "\n";
    return 1;
  }
  // The task script does not know the ranks' pids (srun or mpirun started them): the ticket, a
  // secret only the job's own worker holds, and the job id decide.
  if (const std::string why = run::check_done(d, o.job, o.ticket, {d.pid}); !why.empty()) {
    std::cerr << "worker-msg done: " << why << "\n";
    return 1;
  }
  std::cout << (d.retiring ? "retiring" : "next") << "\n";
  return 0;
}

}  // namespace gridrun::app

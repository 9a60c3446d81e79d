// `gridrun worker-msg`: the warm worker's messages (run/worker_channel.hpp) for a launcher written
// in bash, the Slurm task body (slurm/src/task_body.sh). Why a command: the task body wrote the
// task line as JSON by hand and recognised a done line by substrings; now both go through the
// same field tables as the C++ launcher (scheduler/) and the ranks (runner/), so a field added or
// renamed there cannot drift from what bash writes. One process per message: a Slurm step's job
// lasts seconds at least, the command a few milliseconds.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/run/worker_channel.hpp"

namespace gridrun::app {

namespace po = boost::program_options;

namespace {

// Both messages' flags in one struct: `task` reads the task's fields, `done` the job id; both the ticket.
struct WorkerMsgCli {
  std::string what;  // task | done
  run::WorkerTask task;
  std::string job_id, ticket;
  bool help = false;
};

// Every flag in one group, as every command's (docs/cli.md lists it); each says which message
// reads it.
void add_worker_msg_flags(po::options_description& opts, WorkerMsgCli& o) {
  auto flag = opts.add_options();
  flag("ticket", po::value(&o.ticket),
       "the job's ticket (the launcher's secret, 32 hex digits): `task` writes it into the line, a "
       "`done` line must carry it");
  flag("job-file", po::value(&o.task.job_file), "task: absolute path of RUN_DIR/jobs/<id>.json");
  flag("resume", po::bool_switch(&o.task.resume), "task: the job continues from its checkpoint");
  flag("launched-at", po::value(&o.task.launched_at),
       "task: when the launcher sends it (seconds since the epoch)");
  flag("heartbeat", po::value(&o.task.heartbeat_file), "task: the job's heartbeat file (default: none)");
  flag("log-out", po::value(&o.task.log_out), "task: the job's stdout log (every rank appends to it)");
  flag("log-err", po::value(&o.task.log_err), "task: the job's stderr log (every rank appends to it)");
  flag("job", po::value(&o.job_id), "done: the id of the job the worker runs");
}

constexpr const char* kWorkerMsgAbout =
    "The warm worker's messages for the Slurm task body (docs/scheduler.md, \"Warm launches\").\n"
    "task: prints the task line that hands the next job to a worker's ranks.\n"
    "done: reads rank 0's done line from stdin and prints `continue` (the worker takes another\n"
    "job) or `retiring` (it leaves after this one); a line that is not the done message of\n"
    "--job with --ticket (forged, stale, cut, too long) exits 1 with the reason on stderr,\n"
    "and the worker is to be retired.";

}  // namespace

int cmd_worker_msg(const Args& args) {
  WorkerMsgCli o;
  po::options_description opts = command_options(o.help);
  add_worker_msg_flags(opts, o);
  const HelpText help{"gridrun worker-msg task|done [options]", kWorkerMsgAbout,
                      "\nExit codes: 0 ok, 1 not that job's done message, 2 bad input.\n"};
  if (!parse_command(args, opts,
                     {{"what", "task|done", "which message: task (write one) or done (check one)", 1,
                       po::value(&o.what)}},
                     "worker-msg", o.help, help, std::cout))
    return 0;
  if (o.what == "task") {
    if (o.task.job_file.empty()) throw std::invalid_argument("--job-file: required for `task`");
    if (o.ticket.empty()) throw std::invalid_argument("--ticket: required for `task`");
    o.task.ticket = o.ticket;
    std::cout << run::encode(o.task) << std::flush;
    return 0;
  }
  if (o.what != "done") throw std::invalid_argument("expected task or done, not '" + o.what + "'");
  if (o.job_id.empty() || o.ticket.empty())
    throw std::invalid_argument("--job and --ticket: required for `done`");
  try {
    // Read as the C++ launcher reads its done pipe: one line of at most kMaxDoneLineBytes (a longer
    // one is not a done message: the worker that wrote it is retired).
    run::PipeEnd in(STDIN_FILENO, run::kMaxDoneLineBytes);
    const std::optional<std::string> line = in.read_line(-1, nullptr);
    if (!line) throw std::runtime_error("no done line on stdin");
    const run::WorkerDone d = run::decode_done(*line);
    // The task body cannot name its ranks' pids (srun starts them): the ticket decides.
    const std::string why = run::check_done(d, o.job_id, o.ticket, std::nullopt);
    if (!why.empty()) throw std::runtime_error(why);
    std::cout << (d.retiring ? "retiring" : "continue") << "\n";
    return 0;
  } catch (const std::runtime_error& e) {
    std::cerr << "gridrun worker-msg: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace gridrun::app

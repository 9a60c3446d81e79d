// `gridrun job-shape JOB_FILE`: the process a job needs (ranks in all, threads per rank, nodes, and
// a packed step's planned GPUs and cores), read from its job file through jobs::footprint, for the
// Slurm task body (slurm/src/task_body.sh). Why a command: the array scripts carried each job's
// ranks, threads, GPUs and cores as text (`RANKS=`, list entries `ID:R:T:G:C`) beside the job file
// that already held them (issue 59); now a list line names its jobs by id only, and the shape
// comes from the one file every other reader of the job reads, by the one rule (jobs::footprint)
// every other reader applies. One process per step of a task: a few
// milliseconds against a job's seconds.
#include <boost/program_options.hpp>
#include <iostream>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"

namespace gridrun::app {

namespace po = boost::program_options;

int cmd_job_shape(const Args& args) {
  bool help_wanted = false;
  std::string job_file;
  po::options_description opts = command_options(help_wanted);
  const HelpText help{"gridrun job-shape JOB_FILE",
                      "Prints the process a job needs, from its job file (RUN_DIR/jobs/<id>.json),\n"
                      "on one line separated by spaces: its ranks in all, threads per rank and nodes\n"
                      "(as jobs::footprint gives them to every launcher), then the GPU and core ids\n"
                      "`submit --pack-nodes` planned for it (meta.planned_gpus, meta.planned_cores;\n"
                      "\"-\" when none): \"2 1 1 0,1 0,1\". The Slurm task body runs it before each\n"
                      "step (docs/slurm.md), not you.",
                      "\nExit codes: 0 ok, 1 the file cannot be read or is not a job file (the message\n"
                      "names it), 2 bad input (flags).\n"};
  if (!parse_command(
          args, opts,
          {{"job-file", "JOB_FILE", "the job file (RUN_DIR/jobs/<id>.json)", 1, po::value(&job_file)}},
          "job-shape", help_wanted, help, std::cout))
    return 0;
  const jobs::Job job = jobs::read_job_file(job_file);
  const jobs::Footprint fp = jobs::footprint(job.params);
  // A packed step's GPUs and cores, as `gridrun submit --pack-nodes` planned them into the file.
  auto planned = [&](const char* key) {
    const auto it = job.meta.find(key);
    return it == job.meta.end() || it->second.empty() ? std::string("-") : it->second;
  };
  std::cout << fp.ranks << ' ' << fp.threads_per_rank << ' ' << fp.nodes << ' ' << planned("planned_gpus")
            << ' ' << planned("planned_cores") << '\n';
  return 0;
}

}  // namespace gridrun::app

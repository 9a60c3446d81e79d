// Command jobs (issue 56, docs/own-script.md): a grid's `command:` is an argv list whose `{name}`
// placeholders take the job's resolved parameters. This file is the one place that reads the
// stored form (JobParams::command, a JSON list; command_env, a JSON object) and resolves it, so the
// planner (which refuses unknown placeholders and missing scripts at the grid's line) and
// gridrun-exec (which starts the program) can never resolve a job differently.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "gridrun/jobs/params.hpp"

namespace gridrun::jobs {

// Placeholder names an argument may use besides the parameters: the job's id and run name.
inline constexpr const char* kCommandFacts[] = {"id", "run"};

// One argument with its `{name}` placeholders replaced by lookup(name); `{{` and `}}` are literal
// braces. Throws std::invalid_argument naming the first unknown placeholder or an unclosed brace.
// `names` (when not null) receives every placeholder name in order, resolved or not.
std::string substitute(const std::string& arg, const Params* values, const std::string& id,
                       const std::string& run, std::vector<std::string>* names = nullptr);
// The placeholder names of `arg` ("" problem) or why it is malformed ("{lr": unclosed brace).
std::vector<std::string> placeholders(const std::string& arg, std::string* problem);
// True when `name` may be a placeholder: a parameter or one of kCommandFacts.
bool known_placeholder(const std::string& name);

// The stored forms, written by the planner from the grid's YAML.
std::string command_to_json(const std::vector<std::string>& argv);
std::string env_to_json(const std::vector<std::pair<std::string, std::string>>& env);
// Read back; throw std::invalid_argument on anything but a list of strings / an object of strings.
std::vector<std::string> command_from_json(const std::string& json);
std::vector<std::pair<std::string, std::string>> env_from_json(const std::string& json);

// The files of a command: each argument without placeholders that names an existing regular file
// relative to `dir` (or absolute), as absolute paths, in argv order. The planner hashes them into
// command_sha256; gridrun-exec passes them to the program as these absolute paths.
std::vector<std::string> command_files(const std::vector<std::string>& argv, const std::string& dir);
// Why the program cannot start, or "": argv[0] with a '/' must be a file (relative to `dir`),
// without one it must be on PATH; an interpreter's script (python3 train.py) must exist.
std::string command_problem(const std::vector<std::string>& argv, const std::string& dir, int* index);

// The argv gridrun-exec starts for job `p` (id, run): placeholders resolved, files made absolute.
// Throws std::invalid_argument (an unknown placeholder in a hand-edited job file).
std::vector<std::string> resolve_command(const JobParams& p, const std::string& id, const std::string& run);

// The job's command as a grid in another folder would write it (calibrate --slurm writes one per
// configuration): placeholders kept, the arguments that name one of the program's files (relative
// to command_dir, as resolve_command finds them) made absolute.
std::vector<std::string> command_with_absolute_files(const JobParams& p);

// The job's parameters as the program reads them (GRIDRUN_PARAMS, the helper's params()): one flat
// canonical JSON object, the grid's own parameters (params:) members beside gridrun's, not inside
// user_params. Throws std::invalid_argument as user_params_of does.
std::string program_params_json(const JobParams& p);

}  // namespace gridrun::jobs

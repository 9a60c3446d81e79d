// See command.hpp. Placeholders are resolved from the job's parameters as their canonical text
// (integers as integers, numbers in shortest round-trip form: lr 0.05 gives "0.05"), so an argument
// says exactly what the job id hashed.
#include "gridrun/jobs/command.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "params.hpp"

namespace gridrun::jobs {

namespace {

namespace fs = std::filesystem;

std::string value_text(const std::string& name, const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  std::string member;
  detail::append_member(member, name, v);  // "name":0.05
  return member.substr(member.find(':') + 1);
}

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Interpreters whose first non-flag argument is the program itself (python3 train.py).
bool interpreter(const std::string& argv0) {
  const std::string b = fs::path(argv0).filename().string();
  for (const char* p : {"python", "bash", "sh", "Rscript", "julia", "node", "perl", "ruby"})
    if (b.rfind(p, 0) == 0) return true;
  return false;
}

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : base::split(path ? path : "", ':')) {
    const fs::path cand = fs::path(dir.empty() ? "." : dir) / name;
    if (is_regular(cand) && ::access(cand.c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> placeholders(const std::string& arg, std::string* problem) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < arg.size(); ++i) {
    const bool doubled = (arg[i] == '{' || arg[i] == '}') && i + 1 < arg.size() && arg[i + 1] == arg[i];
    if (doubled) {
      ++i;  // {{ or }}: a literal brace
    } else if (arg[i] == '{') {
      const auto end = arg.find('}', i);
      if (end == std::string::npos) {
        if (problem) *problem = "'" + arg + "': '{' without '}' (write {{ for a literal brace)";
        return names;
      }
      names.push_back(arg.substr(i + 1, end - i - 1));
      i = end;
    } else if (arg[i] == '}') {
      if (problem) *problem = "'" + arg + "': '}' without '{' (write }} for a literal brace)";
      return names;
    }
  }
  return names;
}

bool known_placeholder(const std::string& name) {
  for (const char* f : kCommandFacts)
    if (name == f) return true;
  return find_param(name) != nullptr;
}

std::string substitute(const std::string& arg, const Params* values, const std::string& id,
                       const std::string& run, std::vector<std::string>* names) {
  std::string problem;
  placeholders(arg, &problem);
  if (!problem.empty()) throw std::invalid_argument(problem);
  std::string out;
  for (std::size_t i = 0; i < arg.size(); ++i) {
    const char c = arg[i];
    if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    const auto end = arg.find('}', i);
    const std::string name = arg.substr(i + 1, end - i - 1);
    if (names) names->push_back(name);
    i = end;
    if (name == "id") {
      out += id;
    } else if (name == "run") {
      out += run;
    } else if (values && values->count(name)) {
      out += value_text(name, values->at(name));
    } else {
      std::string hint = suggest_param(name);
      throw std::invalid_argument("'{" + name + "}' in '" + arg + "' is no parameter" +
                                  (hint.empty() ? "" : "; did you mean {" + hint + "}?") +
                                  " (placeholders: the job's parameters, {id}, {run})");
    }
  }
  return out;
}

std::string command_to_json(const std::vector<std::string>& argv) {
  base::Json a = base::Json::array();
  for (const auto& s : argv) a.push_back(s);
  return a.dump();
}

std::string env_to_json(const std::vector<std::pair<std::string, std::string>>& env) {
  base::Json o = base::Json::object();
  for (const auto& [k, v] : env) o[k] = v;
  return o.dump();
}

std::vector<std::string> command_from_json(const std::string& json) {
  const base::Json a = base::parse_json(json, "command");
  if (!a.is_array() || a.empty())
    throw std::invalid_argument("command: expected a non-empty list of strings");
  std::vector<std::string> out;
  for (const auto& e : a) {
    if (!e.is_string()) throw std::invalid_argument("command: expected a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> env_from_json(const std::string& json) {
  std::vector<std::pair<std::string, std::string>> out;
  if (json.empty()) return out;
  const base::Json o = base::parse_json(json, "command_env");
  if (!o.is_object()) throw std::invalid_argument("command_env: expected an object of strings");
  for (const auto& [k, v] : o.items()) {
    if (!v.is_string()) throw std::invalid_argument("command_env: " + k + ": expected a string");
    out.emplace_back(k, v.get<std::string>());
  }
  return out;
}

std::vector<std::string> command_files(const std::vector<std::string>& argv, const std::string& dir) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& a : argv) {
    std::string problem;
    if (a.empty() || !placeholders(a, &problem).empty() || !problem.empty()) continue;
    fs::path p(a);
    if (p.is_relative()) p = fs::path(dir) / p;
    if (is_regular(p)) {
      const std::string abs = p.lexically_normal().string();
      if (seen.insert(abs).second) out.push_back(abs);
    }
  }
  return out;
}

std::string command_problem(const std::vector<std::string>& argv, const std::string& dir, int* index) {
  if (index) *index = 0;
  if (argv.empty()) return "an empty command";
  const std::string& prog = argv[0];
  std::string problem;
  if (!placeholders(prog, &problem).empty() || !problem.empty())
    return "the program '" + prog + "' may not hold placeholders";
  if (prog.find('/') != std::string::npos) {
    fs::path p(prog);
    if (p.is_relative()) p = fs::path(dir) / p;
    if (!is_regular(p)) return "no program '" + prog + "' (looked for " + p.lexically_normal().string() + ")";
  } else if (!on_path(prog)) {
    return "no program '" + prog + "' on PATH";
  }
  if (interpreter(prog)) {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.empty() || a[0] == '-') {
        if (a == "-m" || a == "-c") return "";  // python3 -m module / -c code: no script file
        continue;
      }
      if (!placeholders(a, &problem).empty() || !problem.empty()) return "";
      fs::path p(a);
      if (p.is_relative()) p = fs::path(dir) / p;
      if (index) *index = static_cast<int>(i);
      if (!is_regular(p)) return "no script '" + a + "' (looked for " + p.lexically_normal().string() + ")";
      return "";
    }
  }
  return "";
}

namespace {

// The job's parameters by name with the grid's own (params:) beside gridrun's.
Params values_with_own(const JobParams& p) {
  Params values = from_struct(p);
  for (auto& [name, v] : user_params_of(p)) values.emplace(name, std::move(v));
  return values;
}

// The command's arguments, each through `resolved` (placeholders), an argument without
// placeholders that names one of the program's files (relative to command_dir) made absolute.
// argv[0] without a '/' is left to be looked up on PATH, as a shell would.
template <typename Resolve>
std::vector<std::string> command_args(const JobParams& p, Resolve resolved) {
  std::vector<std::string> out;
  for (const auto& a : command_from_json(p.command)) {
    std::string problem;
    const bool plain = placeholders(a, &problem).empty() && problem.empty();
    std::string r = resolved(a);
    if (plain && !r.empty() && !p.command_dir.empty()) {
      fs::path f(r);
      const bool program_name = out.empty() && r.find('/') == std::string::npos;
      if (f.is_relative() && !program_name && is_regular(fs::path(p.command_dir) / f))
        r = (fs::path(p.command_dir) / f).lexically_normal().string();
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::vector<std::string> resolve_command(const JobParams& p, const std::string& id, const std::string& run) {
  const Params values = values_with_own(p);
  return command_args(p, [&](const std::string& a) { return substitute(a, &values, id, run); });
}

std::vector<std::string> command_with_absolute_files(const JobParams& p) {
  return command_args(p, [](const std::string& a) { return a; });
}

std::string program_params_json(const JobParams& p) {
  Params values = values_with_own(p);
  values.erase("user_params");
  return canonical_json(values);
}

}  // namespace gridrun::jobs

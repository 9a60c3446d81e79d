// Public entry points of grid loading: read the file, parse (grid_parse.cpp), expand
// (grid_expand.cpp). GridError formats its location once, here.
#include "gridrun/jobs/grid.hpp"

#include <filesystem>

#include "gridrun/base/fs.hpp"

#include "grid_spec.hpp"
#include "params.hpp"

namespace gridrun::jobs {

namespace {
std::string format_error(const std::string& file, int line, int col, const std::string& key_path,
                         const std::string& message) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(col);
  s += ": ";
  if (!key_path.empty()) s += key_path + ": ";
  return s + message;
}
}  // namespace

namespace detail {
void add_overrides(GridSpec& spec, const std::vector<std::pair<std::string, Value>>& overrides) {
  for (const auto& [key, value] : overrides) {
    Setting st;
    st.param = param_index(key);
    if (st.param < 0) throw std::invalid_argument("--set " + key + ": unknown parameter");
    st.value = value;
    spec.locs.push_back(Loc{0, 0, "--set " + key});
    st.loc = static_cast<int>(spec.locs.size()) - 1;
    append_member(st.json, key, value);
    spec.overrides.push_back(std::move(st));
  }
}
}  // namespace detail

GridError::GridError(const std::string& file, int line, int col, const std::string& key_path,
                     const std::string& message)
    : std::invalid_argument(format_error(file, line, col, key_path, message)),
      file_(file),
      key_path_(key_path),
      message_(message),
      line_(line),
      col_(col) {}

Expansion load_grid_string(const std::string& yaml, const std::string& display_name,
                           const LoadOptions& opts) {
  detail::GridSpec spec = detail::parse_grid(yaml, display_name);
  detail::add_overrides(spec, opts.overrides);
  return detail::expand_grid(spec, opts);
}

Expansion load_grid(const std::string& path, const LoadOptions& opts, const base::FileKind& kind) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw GridError(path, 0, 0, "", "is a directory");
  // Through base::open_checked (issue 57): a FIFO as a run's grid.yaml blocked status, ls and run,
  // and a link to /dev/zero was read until memory ran out.
  std::string why;
  const auto text = base::try_read_file(path, kind, &why);
  if (!text) {
    // The message names the file; GridError puts its own "PATH: " in front.
    const std::string prefix = path + ": ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    throw GridError(path, 0, 0, "", why.empty() ? "cannot open grid file" : why);
  }
  return load_grid_string(*text, path, opts);
}

}  // namespace gridrun::jobs

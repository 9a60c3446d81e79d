// See setting_at.hpp.
#include "gridrun/jobs/setting_at.hpp"

#include "grid_spec.hpp"
#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"

namespace gridrun::jobs {

GridError error_at_setting(const std::string& path, const LoadOptions& opts, const std::string& key,
                           const std::string& value, const std::string& message) {
  const ParamSpec* spec_of = find_param(key);
  const auto text = base::try_read_file(path, base::kinds::kGridFile);
  if (!spec_of || !text) return GridError(path, 0, 0, key, message);
  const int param = static_cast<int>(spec_of - param_table().data());
  detail::GridSpec spec = detail::parse_grid(*text, path);
  detail::add_overrides(spec, opts.overrides);
  const detail::Loc* found = nullptr;
  auto look = [&](const std::vector<detail::Setting>& settings) {
    for (const auto& s : settings)
      if (!found && s.param == param && s.loc >= 0 && to_string(s.value) == value)
        found = &spec.locs.at(static_cast<std::size_t>(s.loc));
  };
  look(spec.overrides);
  for (const auto& axis : spec.axes)
    for (const auto& point : axis.points) look(point);
  for (const auto& inc : spec.includes) look(inc.settings);
  look(spec.defaults);
  if (!found && spec.root_loc >= 0) found = &spec.locs.at(static_cast<std::size_t>(spec.root_loc));
  if (!found) return GridError(path, 0, 0, key, message);
  return GridError(path, found->line, found->col, found->path.empty() ? key : found->path, message);
}

}  // namespace gridrun::jobs

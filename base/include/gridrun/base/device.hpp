// Where a job's ranks compute: the one `Device` type and its names (issue 46).
//
// Why here, in base: the job parameters (jobs/, `JobParams::device`) and the hardware roofs (hw/,
// `PeakQuery::device`) both need it, and base is the only floor below both. Every other module
// decides "is this a GPU job?" on the enum (or on `jobs::Footprint`, what a job occupies), never on
// the text; the text "cpu"/"gpu" is written and read only through to_string/parse_device below (the
// grid's choices, job files, HDF5 attributes, --set). A new device is added here (and to kDevices),
// and the compiler then names every switch that must learn it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gridrun::base {

enum class Device { cpu, gpu };

// Every device, in the order the grid's choices list them.
inline constexpr Device kDevices[] = {Device::cpu, Device::gpu};

// The device's name as grids, job files and reports spell it.
constexpr const char* device_name(Device d) {
  switch (d) {
    case Device::gpu: return "gpu";
    case Device::cpu: break;
  }
  return "cpu";
}
inline std::string to_string(Device d) { return device_name(d); }

// The device of a name, or nullopt for a name that is none.
inline std::optional<Device> parse_device(std::string_view text) {
  for (Device d : kDevices)
    if (text == device_name(d)) return d;
  return std::nullopt;
}

}  // namespace gridrun::base

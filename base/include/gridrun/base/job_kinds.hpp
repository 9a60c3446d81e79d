// The closed sets of a job's parameters that code branches on, beside the device (device.hpp):
// the task and the compute precision (issue 59). Each is an enum with its names in one table here;
// the words are written and read only through the *_name / parse_* functions below (the grid's
// choices, job files, HDF5 attributes, --set), so no module compares them as text and the
// compiler names every switch that a new value must reach.
//
// Why in base: the job parameters (jobs/) and the hardware roofs (hw/, which knows no jobs) both
// need the precision; the task is kept beside it so that the three sets read the same way.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gridrun::base {

// train, or inference (forward passes only).
enum class Task { train, inference };
inline constexpr Task kTasks[] = {Task::train, Task::inference};
constexpr const char* task_name(Task t) {
  switch (t) {
    case Task::inference: return "inference";
    case Task::train: break;
  }
  return "train";
}
inline std::string to_string(Task t) { return task_name(t); }
inline std::optional<Task> parse_task(std::string_view text) {
  for (Task t : kTasks)
    if (text == task_name(t)) return t;
  return std::nullopt;
}

// The precision the job asks for (bf16/fp16: mixed precision on a GPU).
enum class Precision { fp32, bf16, fp16 };
inline constexpr Precision kPrecisions[] = {Precision::fp32, Precision::bf16, Precision::fp16};
constexpr const char* precision_name(Precision p) {
  switch (p) {
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp32: break;
  }
  return "fp32";
}
inline std::string to_string(Precision p) { return precision_name(p); }
inline std::optional<Precision> parse_precision(std::string_view text) {
  for (Precision p : kPrecisions)
    if (text == precision_name(p)) return p;
  return std::nullopt;
}
// Bytes of one activation value at this precision (bf16/fp16: 2).
constexpr double bytes_per_value(Precision p) { return p == Precision::fp32 ? 4.0 : 2.0; }

}  // namespace gridrun::base

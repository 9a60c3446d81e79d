// Column descriptor tables: for every HDF5 table the results library writes (/steps, /epochs,
// /util, /profile here; the index's /jobs in run_index.cpp, beside its record), one list of (name, member of
// the row struct, width) that the writer uses to create the datasets and append rows, and the reader uses to
// read them back.
//
// Why: a column's name and its value must be paired in exactly one place. When the writer
// appended values by column index and the names were listed elsewhere, reordering one list
// swapped two columns silently (same types, plausible numbers). With descriptors, the dataset's
// type follows the member's type, and a column is added or moved by editing one line.
// The order of each list is the creation order of the datasets (HDF5 lists them by name anyway).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "gridrun/h5/h5.hpp"
#include "gridrun/results/format.hpp"

namespace gridrun::results::detail {

// How wide a column is: one value per row, or one per rank / per GPU ([rows x width] dataset).
// Per-GPU columns exist only in files of jobs with GPUs (gpus > 0).
enum class Width { One, Ranks, Gpus };

template <class Row>
struct Column {
  // The member holding the value: int64 and double scalars, fixed-width double vectors (Ranks or
  // Gpus), strings (VL UTF-8 in the index, fixed-length in /profile).
  using Field =
      std::variant<std::int64_t Row::*, double Row::*, std::vector<double> Row::*, std::string Row::*>;
  const char* name;
  Field field;
  Width width = Width::One;
};

template <class Row>
using Columns = std::vector<Column<Row>>;

inline const Columns<StepRow>& step_columns() {
  static const Columns<StepRow> c = {
      {"step", &StepRow::step},
      {"epoch", &StepRow::epoch},
      {"wall_s", &StepRow::wall_s},
      {"loss", &StepRow::loss},
      {"samples_per_s", &StepRow::samples_per_s},
      {"step_s", &StepRow::step_s},
      {"data_s", &StepRow::data_s},
      {"forward_s", &StepRow::forward_s},
      {"backward_s", &StepRow::backward_s},
      {"optimizer_s", &StepRow::optimizer_s},
      {"comm_s", &StepRow::comm_s},
      {"exposed_comm_s", &StepRow::exposed_comm_s},
      {"rank_step_s", &StepRow::rank_step_s, Width::Ranks},
  };
  return c;
}

inline const Columns<EpochRow>& epoch_columns() {
  static const Columns<EpochRow> c = {
      {"epoch", &EpochRow::epoch},         {"train_loss", &EpochRow::train_loss},
      {"train_acc", &EpochRow::train_acc}, {"test_loss", &EpochRow::test_loss},
      {"test_acc", &EpochRow::test_acc},   {"epoch_s", &EpochRow::epoch_s},
      {"wall_s", &EpochRow::wall_s},
  };
  return c;
}

inline const Columns<UtilRow>& util_columns() {
  static const Columns<UtilRow> c = {
      {"time_s", &UtilRow::time_s},
      {"rank_cpu_pct", &UtilRow::rank_cpu_pct, Width::Ranks},
      {"rank_rss_bytes", &UtilRow::rank_rss_bytes, Width::Ranks},
      {"node_cpu_pct", &UtilRow::node_cpu_pct},
      {"gpu_util_pct", &UtilRow::gpu_util_pct, Width::Gpus},
      {"gpu_mem_bytes", &UtilRow::gpu_mem_bytes, Width::Gpus},
      {"gpu_power_w", &UtilRow::gpu_power_w, Width::Gpus},
      {"gpu_energy_j", &UtilRow::gpu_energy_j, Width::Gpus},
      {"gpu_temp_c", &UtilRow::gpu_temp_c, Width::Gpus},
      {"gpu_sm_mhz", &UtilRow::gpu_sm_mhz, Width::Gpus},
  };
  return c;
}

// `/profile` (written whole at finish; `name` as fixed-length strings, see writer.cpp).
inline const Columns<OpProfile>& profile_columns() {
  static const Columns<OpProfile> c = {
      {"name", &OpProfile::name},
      {"calls", &OpProfile::calls},
      {"self_cpu_us", &OpProfile::self_cpu_us},
      {"total_cpu_us", &OpProfile::total_cpu_us},
      {"self_device_us", &OpProfile::self_device_us},
      {"total_device_us", &OpProfile::total_device_us},
  };
  return c;
}

// ---- whole tables (written once, not extended): /profile and the index's /jobs --------------

enum class Strings { Variable, Fixed };  // VL UTF-8 strings, or fixed-length null-padded bytes

// Creates one 1-D dataset per column of `cols` in `group` holding the rows' values.
template <class Row>
void write_whole_table(hid_t group, const Columns<Row>& cols, const std::vector<Row>& rows, Strings strings) {
  for (const auto& c : cols) {
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(std::declval<Row>().*member)>;
          std::vector<T> values;
          for (const Row& r : rows) values.push_back(r.*member);
          if constexpr (std::is_same_v<T, std::string>) {
            if (strings == Strings::Fixed)
              h5::write_fixed_strings(group, c.name, values);
            else
              h5::write_strings(group, c.name, values);
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            h5::write_int64s(group, c.name, values);
          } else if constexpr (std::is_same_v<T, double>) {
            h5::write_doubles(group, c.name, values);
          } else {
            throw std::logic_error(std::string("whole table column ") + c.name + " cannot be a vector");
          }
        },
        c.field);
  }
}

// Reads a table written by write_whole_table: as many rows as the first column has; a missing
// column, or one shorter than the first, leaves its members at their defaults (files written by
// older or interrupted writers still read).
template <class Row>
std::vector<Row> read_whole_table(hid_t group, const Columns<Row>& cols) {
  std::vector<Row> rows;
  for (std::size_t k = 0; k < cols.size(); ++k) {
    const auto& c = cols[k];
    if (!h5::exists(group, c.name)) {
      if (k == 0) return rows;
      continue;
    }
    h5::Id ds = H5_OWN(H5Dopen2(group, c.name, H5P_DEFAULT), H5Dclose);
    if (k == 0) rows.resize(h5::rows_of(ds));
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(std::declval<Row>().*member)>;
          if constexpr (std::is_same_v<T, std::string>) {
            std::vector<std::string> v = h5::read_strings(ds);
            for (std::size_t r = 0; r < rows.size() && r < v.size(); ++r) rows[r].*member = v[r];
          } else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
            std::vector<double> v = h5::read_doubles(ds, rows.size());
            for (std::size_t r = 0; r < rows.size() && r < v.size(); ++r)
              rows[r].*member = static_cast<T>(v[r]);
          } else {
            throw std::logic_error(std::string("whole table column ") + c.name + " cannot be a vector");
          }
        },
        c.field);
  }
  return rows;
}

}  // namespace gridrun::results::detail

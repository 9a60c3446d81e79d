// Writes HDF5 data set files (dataset/data_file.hpp's layout, and broken variants of it) for the
// tests of DataFile and of dataset=hdf5, with the HDF5 C API: what h5py writes for a user.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gridrun::dataset::testing {

class DataFileWriter {
 public:
  explicit DataFileWriter(const std::string& path);
  ~DataFileWriter();
  DataFileWriter(const DataFileWriter&) = delete;
  DataFileWriter& operator=(const DataFileWriter&) = delete;

  // Data sets at `name` ("/train/x"; groups are created), chunked by `chunk_rows` rows when > 0.
  void u8(const std::string& name, const std::vector<std::uint64_t>& dims, const std::vector<std::uint8_t>& v,
          std::uint64_t chunk_rows = 0);
  void f32(const std::string& name, const std::vector<std::uint64_t>& dims, const std::vector<float>& v,
           std::uint64_t chunk_rows = 0);
  void f64(const std::string& name, const std::vector<std::uint64_t>& dims, const std::vector<double>& v);
  void i64(const std::string& name, const std::vector<std::uint64_t>& dims,
           const std::vector<std::int64_t>& v);
  void i32(const std::string& name, const std::vector<std::uint64_t>& dims,
           const std::vector<std::int32_t>& v);
  // What a data file must not hold (issue 45): links to elsewhere, data stored elsewhere, and
  // declared values never written. `name`'s groups are created.
  void external_link(const std::string& name, const std::string& file, const std::string& object);
  void soft_link(const std::string& name, const std::string& target);
  // A float32 virtual data set [n, 3] mapped whole from `src_file`:`src_name` (which may not exist).
  void virtual_f32(const std::string& name, std::uint64_t n, const std::string& src_file,
                   const std::string& src_name);
  // A float32 data set [n, 3] whose raw values are in `raw_file` (H5Pset_external).
  void external_f32(const std::string& name, std::uint64_t n, const std::string& raw_file);
  // A uint8 data set `dims`, chunked by `chunk_rows` rows (contiguous when 0), of which only the
  // first `written_rows` rows are written (0: nothing; its storage then stays unallocated).
  void u8_partial(const std::string& name, const std::vector<std::uint64_t>& dims, std::uint64_t chunk_rows,
                  std::uint64_t written_rows);
  // Attributes of the root: one number (ints as int64) or a float list.
  void attr(const std::string& name, std::int64_t v);
  void attr(const std::string& name, const std::vector<float>& v);
  void close();

 private:
  void write(const std::string& name, const std::vector<std::uint64_t>& dims, long file_type, long mem_type,
             const void* data, std::uint64_t chunk_rows);
  long file_ = -1;
};

}  // namespace gridrun::dataset::testing

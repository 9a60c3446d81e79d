// Writes HDF5 data set files (results/data_file.hpp's layout, and broken variants of it) for the
// tests of DataFile and of dataset=hdf5, with the HDF5 C API: what h5py writes for a user.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gridrun::results::testing {

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
  // Attributes of the root: one number (ints as int64) or a float list.
  void attr(const std::string& name, std::int64_t v);
  void attr(const std::string& name, const std::vector<float>& v);
  void close();

 private:
  void write(const std::string& name, const std::vector<std::uint64_t>& dims, long file_type, long mem_type,
             const void* data, std::uint64_t chunk_rows);
  long file_ = -1;
};

}  // namespace gridrun::results::testing

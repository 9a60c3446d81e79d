#include "data_file_writer.hpp"

#include <hdf5.h>

#include <stdexcept>

namespace gridrun::results::testing {

namespace {
void ok(herr_t r, const char* what) {
  if (r < 0) throw std::runtime_error(std::string("DataFileWriter: ") + what + " failed");
}
}  // namespace

DataFileWriter::DataFileWriter(const std::string& path) {
  file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file_ < 0) throw std::runtime_error("DataFileWriter: cannot create " + path);
}

DataFileWriter::~DataFileWriter() { close(); }

void DataFileWriter::close() {
  if (file_ >= 0) H5Fclose(file_);
  file_ = -1;
}

void DataFileWriter::write(const std::string& name, const std::vector<std::uint64_t>& dims, long file_type,
                           long mem_type, const void* data, std::uint64_t chunk_rows) {
  std::vector<hsize_t> d(dims.begin(), dims.end());
  const hid_t space = H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr);
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  ok(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group");
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunk_rows > 0) {
    std::vector<hsize_t> c = d;
    c[0] = chunk_rows;
    ok(H5Pset_chunk(dcpl, static_cast<int>(c.size()), c.data()), "H5Pset_chunk");
  }
  const hid_t ds = H5Dcreate2(file_, name.c_str(), file_type, space, lcpl, dcpl, H5P_DEFAULT);
  if (ds < 0) throw std::runtime_error("DataFileWriter: cannot create " + name);
  ok(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "H5Dwrite");
  H5Dclose(ds);
  H5Pclose(dcpl);
  H5Pclose(lcpl);
  H5Sclose(space);
}

void DataFileWriter::u8(const std::string& n, const std::vector<std::uint64_t>& d,
                        const std::vector<std::uint8_t>& v, std::uint64_t chunk) {
  write(n, d, H5T_STD_U8LE, H5T_NATIVE_UINT8, v.data(), chunk);
}
void DataFileWriter::f32(const std::string& n, const std::vector<std::uint64_t>& d,
                         const std::vector<float>& v, std::uint64_t chunk) {
  write(n, d, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, v.data(), chunk);
}
void DataFileWriter::f64(const std::string& n, const std::vector<std::uint64_t>& d,
                         const std::vector<double>& v) {
  write(n, d, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, v.data(), 0);
}
void DataFileWriter::i64(const std::string& n, const std::vector<std::uint64_t>& d,
                         const std::vector<std::int64_t>& v) {
  write(n, d, H5T_STD_I64LE, H5T_NATIVE_INT64, v.data(), 0);
}
void DataFileWriter::i32(const std::string& n, const std::vector<std::uint64_t>& d,
                         const std::vector<std::int32_t>& v) {
  write(n, d, H5T_STD_I32LE, H5T_NATIVE_INT32, v.data(), 0);
}

void DataFileWriter::attr(const std::string& name, std::int64_t v) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t a = H5Acreate2(file_, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT);
  ok(H5Awrite(a, H5T_NATIVE_INT64, &v), "H5Awrite");
  H5Aclose(a);
  H5Sclose(space);
}

void DataFileWriter::attr(const std::string& name, const std::vector<float>& v) {
  const hsize_t n = v.size();
  const hid_t space = H5Screate_simple(1, &n, nullptr);
  const hid_t a = H5Acreate2(file_, name.c_str(), H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT);
  ok(H5Awrite(a, H5T_NATIVE_FLOAT, v.data()), "H5Awrite");
  H5Aclose(a);
  H5Sclose(space);
}

}  // namespace gridrun::results::testing

#include "data_file_writer.hpp"

#include <hdf5.h>

#include <stdexcept>

namespace gridrun::dataset::testing {

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

namespace {
hid_t intermediate_groups() {
  const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  ok(H5Pset_create_intermediate_group(lcpl, 1), "H5Pset_create_intermediate_group");
  return lcpl;
}
}  // namespace

void DataFileWriter::external_link(const std::string& name, const std::string& file,
                                   const std::string& object) {
  const hid_t lcpl = intermediate_groups();
  ok(H5Lcreate_external(file.c_str(), object.c_str(), file_, name.c_str(), lcpl, H5P_DEFAULT),
     "H5Lcreate_external");
  H5Pclose(lcpl);
}

void DataFileWriter::soft_link(const std::string& name, const std::string& target) {
  const hid_t lcpl = intermediate_groups();
  ok(H5Lcreate_soft(target.c_str(), file_, name.c_str(), lcpl, H5P_DEFAULT), "H5Lcreate_soft");
  H5Pclose(lcpl);
}

void DataFileWriter::virtual_f32(const std::string& name, std::uint64_t n, const std::string& src_file,
                                 const std::string& src_name) {
  const hsize_t d[2] = {n, 3};
  const hid_t space = H5Screate_simple(2, d, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  ok(H5Pset_virtual(dcpl, space, src_file.c_str(), src_name.c_str(), space), "H5Pset_virtual");
  const hid_t lcpl = intermediate_groups();
  const hid_t ds = H5Dcreate2(file_, name.c_str(), H5T_IEEE_F32LE, space, lcpl, dcpl, H5P_DEFAULT);
  if (ds < 0) throw std::runtime_error("DataFileWriter: cannot create " + name);
  H5Dclose(ds);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
}

void DataFileWriter::external_f32(const std::string& name, std::uint64_t n, const std::string& raw_file) {
  const hsize_t d[2] = {n, 3};
  const hid_t space = H5Screate_simple(2, d, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  ok(H5Pset_external(dcpl, raw_file.c_str(), 0, n * 3 * 4), "H5Pset_external");
  const hid_t lcpl = intermediate_groups();
  const hid_t ds = H5Dcreate2(file_, name.c_str(), H5T_IEEE_F32LE, space, lcpl, dcpl, H5P_DEFAULT);
  if (ds < 0) throw std::runtime_error("DataFileWriter: cannot create " + name);
  const std::vector<float> v(n * 3, 1.0f);
  ok(H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()), "H5Dwrite");
  H5Dclose(ds);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
}

void DataFileWriter::u8_partial(const std::string& name, const std::vector<std::uint64_t>& dims,
                                std::uint64_t chunk_rows, std::uint64_t written_rows) {
  std::vector<hsize_t> d(dims.begin(), dims.end());
  const hid_t space = H5Screate_simple(static_cast<int>(d.size()), d.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (chunk_rows > 0) {
    std::vector<hsize_t> c = d;
    c[0] = chunk_rows;
    ok(H5Pset_chunk(dcpl, static_cast<int>(c.size()), c.data()), "H5Pset_chunk");
  }
  const hid_t lcpl = intermediate_groups();
  const hid_t ds = H5Dcreate2(file_, name.c_str(), H5T_STD_U8LE, space, lcpl, dcpl, H5P_DEFAULT);
  if (ds < 0) throw std::runtime_error("DataFileWriter: cannot create " + name);
  if (written_rows > 0) {
    std::vector<hsize_t> count = d;
    count[0] = written_rows;
    std::vector<hsize_t> start(d.size(), 0);
    ok(H5Sselect_hyperslab(space, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr),
       "H5Sselect_hyperslab");
    const hid_t mem = H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr);
    hsize_t n = 1;
    for (hsize_t c : count) n *= c;
    const std::vector<std::uint8_t> v(n, 7);
    ok(H5Dwrite(ds, H5T_NATIVE_UINT8, mem, space, H5P_DEFAULT, v.data()), "H5Dwrite");
    H5Sclose(mem);
  }
  H5Dclose(ds);
  H5Pclose(lcpl);
  H5Pclose(dcpl);
  H5Sclose(space);
}

}  // namespace gridrun::dataset::testing

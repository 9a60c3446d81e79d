// --init-out FILE.h5: the initial weights after rank 0's broadcast, one float32 dataset per named
// parameter and buffer ("fc1.weight", ...), so an outside reference (tests/runner/torch_equal.py,
// bench/torch_equal.sh) can start PyTorch from exactly gridrun's starting point.
#include <hdf5.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gridrun/base/fs.hpp"
#include "init_export.hpp"

namespace gridrun::runner {

void write_init_weights(const std::string& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& named) {
  // Made in memory (core driver, no backing store) and written by base::write_file_atomic: an
  // HDF5 file that fails to flush at a full disk cannot be closed by libhdf5 1.10, whose exit
  // handler then crashes (issue 45); our own write fails cleanly instead.
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  const bool core = fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0;
  const hid_t f = core ? H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
  if (fapl >= 0) H5Pclose(fapl);
  if (f < 0) throw std::runtime_error("cannot create --init-out file " + path);
  bool ok = true;
  for (const auto& [name, t] : named) {
    auto c = t.detach().to(at::kCPU, at::kFloat).contiguous();
    std::vector<hsize_t> dims(c.sizes().begin(), c.sizes().end());
    const hid_t sp = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t ds = H5Dcreate2(f, name.c_str(), H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && sp >= 0 && ds >= 0 &&
         H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, c.data_ptr()) >= 0;
    if (ds >= 0) H5Dclose(ds);
    if (sp >= 0) H5Sclose(sp);
  }
  std::string image;
  ok = ok && H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0;
  const ssize_t n = ok ? H5Fget_file_image(f, nullptr, 0) : -1;
  if (n > 0) {
    image.resize(static_cast<std::size_t>(n));
    ok = H5Fget_file_image(f, image.data(), image.size()) == n;
  }
  ok = H5Fclose(f) >= 0 && ok && n > 0;
  if (!ok) throw std::runtime_error("cannot write --init-out file " + path);
  base::write_file_atomic(path, image);
}

}  // namespace gridrun::runner

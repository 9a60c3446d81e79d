// --init-out FILE.h5: the initial weights after rank 0's broadcast, one float32 dataset per named
// parameter and buffer ("fc1.weight", ...), so an outside reference (tests/runner/torch_equal.py,
// bench/torch_equal.sh) can start PyTorch from exactly gridrun's starting point.
#include <hdf5.h>

#include <stdexcept>
#include <vector>

#include "gridrun/runner/init_export.hpp"

namespace gridrun::runner {

void write_init_weights(const std::string& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& named) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
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
  ok = H5Fclose(f) >= 0 && ok;
  if (!ok) throw std::runtime_error("cannot write --init-out file " + path);
}

}  // namespace gridrun::runner

// A stand-in for PyTorch's wheel: a shared library that exports its own, unversioned definition of
// a libstdc++ function (std::filesystem::remove_all), as the wheel's libtorch does with the pieces
// of a newer libstdc++ it links statically. The dynamic linker accepts such a definition for our
// binaries' versioned references if it searches this library before libstdc++.
#include <cstdint>
#include <filesystem>
#include <system_error>

// Something the probe really uses, so the library is loaded as LibTorch is (not dropped as unneeded).
extern "C" int gridrun_fake_exporter_loaded() { return 1; }

namespace std::filesystem {
std::uintmax_t remove_all(const path&) { return 4242; }  // marks "bound to the impostor"
std::uintmax_t remove_all(const path&, std::error_code& ec) {
  ec.clear();
  return 4242;
}
}  // namespace std::filesystem

// Calls std::filesystem::remove_all on a path that does not exist: libstdc++ returns 0, the
// impostor in fake_exporter.cpp returns 4242. Prints which one answered; exit 0 = libstdc++.
#include <cstdio>
#include <filesystem>

extern "C" int gridrun_fake_exporter_loaded();

int main() {
  if (gridrun_fake_exporter_loaded() != 1) return 2;
  const auto n = std::filesystem::remove_all("/nonexistent/gridrun-interposition-probe");
  std::printf("remove_all returned %ju (%s)\n", static_cast<std::uintmax_t>(n),
              n == 4242 ? "bound to the exporting library: interposed" : "libstdc++");
  return n == 4242 ? 1 : 0;
}

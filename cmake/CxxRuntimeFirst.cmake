# gridrun::cxx_runtime_first: link it first (PUBLIC) into anything that loads LibTorch, and every
# executable built from it searches the system libstdc++ before LibTorch's libraries.
#
# Why: PyTorch's wheel exports its own, unversioned copies of some libstdc++ symbols
# (std::filesystem among them, built against another C++ runtime). The dynamic linker accepts such
# a definition for our versioned references if it searches that library first, which the default
# link order (libtorch before the implicit -lstdc++ at the end) makes it do; on the H100 image
# std::filesystem::remove_all then crashed. Two mechanisms, because toolchains differ:
#   - the compiler's shared libstdc++ by full path as this target's interface library: CMake puts
#     it right after the first static library on a consumer's link line, ahead of LibTorch, and
#     a full path is honoured whatever the --as-needed default;
#   - the same path under `-Wl,--no-as-needed` among the link options, which makes it the very
#     first needed library where the linker honours options before objects.
# tests/runner/CMakeLists.txt proves the effect with an impostor library (interpose/) and checks
# the real binaries with LD_DEBUG=bindings (check_bindings.py).
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
  OUTPUT_VARIABLE GRIDRUN_LIBSTDCXX OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT IS_ABSOLUTE "${GRIDRUN_LIBSTDCXX}" OR NOT EXISTS "${GRIDRUN_LIBSTDCXX}")
  # A toolchain with only libstdc++.a in its own folder (the lent H200's /opt/gcc) links the C++
  # runtime statically, and the archive's members are pulled only after LibTorch's libraries have
  # already satisfied std::filesystem: the crash came back there (epoch 2, checkpoint rotation).
  # The system's shared runtime by its soname is then the one to search first.
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
    OUTPUT_VARIABLE GRIDRUN_LIBSTDCXX OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
if(NOT IS_ABSOLUTE "${GRIDRUN_LIBSTDCXX}" OR NOT EXISTS "${GRIDRUN_LIBSTDCXX}")
  set(GRIDRUN_LIBSTDCXX "")
endif()
message(STATUS "gridrun: libstdc++ searched before LibTorch: ${GRIDRUN_LIBSTDCXX}")
add_library(gridrun_cxx_runtime_first INTERFACE)
add_library(gridrun::cxx_runtime_first ALIAS gridrun_cxx_runtime_first)
target_link_libraries(gridrun_cxx_runtime_first INTERFACE ${GRIDRUN_LIBSTDCXX})
# By full path here too: `-lstdc++` finds libstdc++.a first on a toolchain without the shared
# library in its own folder, and an archive before the objects pulls nothing.
if(GRIDRUN_LIBSTDCXX)
  set(_gridrun_cxx_first "${GRIDRUN_LIBSTDCXX}")
else()
  set(_gridrun_cxx_first "-lstdc++")
endif()
target_link_options(gridrun_cxx_runtime_first INTERFACE
  "LINKER:--push-state,--no-as-needed" "${_gridrun_cxx_first}" "LINKER:--pop-state")

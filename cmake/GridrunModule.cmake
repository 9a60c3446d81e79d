# gridrun_module(NAME SOURCES...): one folder's library target gridrun_<NAME> with the alias
# gridrun::<NAME>, public headers in <folder>/include (what other modules include), private ones in
# <folder>/src (also what only the module's program and tests include), position-
# independent code (the test and bench executables link it too) and warnings on.
# Why a function: every module's target has this same shape; writing it once keeps them equal.
# gridrun_warnings(TARGET): the one set of warning flags, for module libraries (below), the two
# programs (app/ `gridrun`, runner/ `gridrun-train`) and, through gridrun_warnings_under, every
# compiled target of tests/ and bench/, so no target builds with fewer.
function(gridrun_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()

# gridrun_warnings_under(DIR): gridrun_warnings on every executable and library defined in DIR and
# the folders below it. Called once at the end of tests/ and bench/: a test or benchmark added
# later gets the warnings without its folder having to remember them.
function(gridrun_warnings_under dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      gridrun_warnings(${t})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    gridrun_warnings_under(${d})
  endforeach()
endfunction()

function(gridrun_module name)
  add_library(gridrun_${name} STATIC ${ARGN})
  add_library(gridrun::${name} ALIAS gridrun_${name})
  target_include_directories(gridrun_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  set_target_properties(gridrun_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  gridrun_warnings(gridrun_${name})
  # gridrun::<NAME>_internals: the library plus its src/ headers, for what tests or runs the
  # module from inside: its own program (runner/app, exec/app), its unit tests and benchmarks. No
  # other module links it (tests/arch/check_layers.py refuses the link: not in the folder table).
  add_library(gridrun_${name}_internals INTERFACE)
  add_library(gridrun::${name}_internals ALIAS gridrun_${name}_internals)
  target_include_directories(gridrun_${name}_internals INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_link_libraries(gridrun_${name}_internals INTERFACE gridrun_${name})
endfunction()

# gridrun_module(NAME SOURCES...): one folder's library target gridrun_<NAME> with the alias
# gridrun::<NAME>, public headers in <folder>/include, private ones in <folder>/src, position-
# independent code (the test and bench executables link it too) and warnings on.
# Why a function: every module's target has this same shape; writing it once keeps them equal.
# gridrun_warnings(TARGET): the one set of warning flags, for module libraries (below) and for the
# two programs (app/ `gridrun`, runner/ `gridrun-train`), so no target builds with fewer.
function(gridrun_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()

function(gridrun_module name)
  add_library(gridrun_${name} STATIC ${ARGN})
  add_library(gridrun::${name} ALIAS gridrun_${name})
  target_include_directories(gridrun_${name}
    PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  set_target_properties(gridrun_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  gridrun_warnings(gridrun_${name})
endfunction()

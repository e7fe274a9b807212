# Optional dependencies: each is detected and reported, none is required for the core.
find_package(Threads REQUIRED)
find_package(PkgConfig QUIET)

set(CFX_OPTIONAL_FOUND "")
set(CFX_OPTIONAL_MISSING "")
function(cfx_report name found)
  if(found)
    set(CFX_OPTIONAL_FOUND "${CFX_OPTIONAL_FOUND} ${name}" PARENT_SCOPE)
  else()
    set(CFX_OPTIONAL_MISSING "${CFX_OPTIONAL_MISSING} ${name}" PARENT_SCOPE)
  endif()
endfunction()

if(PkgConfig_FOUND)
  pkg_check_modules(HWLOC QUIET IMPORTED_TARGET hwloc)
  # UCX's memory hooks (libucm patches madvise/mmap in every loaded library) crash under TSan's
  # interceptors when a thread exits: TSan builds leave UCX out (ASan builds keep it).
  if(NOT CFX_SANITIZE STREQUAL "thread")
    pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
  endif()
endif()
find_library(NUMA_LIBRARY numa)
find_library(IBVERBS_LIBRARY ibverbs)
find_package(CUDAToolkit QUIET)
find_package(MPI QUIET COMPONENTS C)
find_package(Gloo QUIET CONFIG)

# Libraries the network transports need, for consumers of the static library.
set(CFX_NET_LINK_NAMES "")
if(UCX_FOUND)
  list(APPEND CFX_NET_LINK_NAMES ucp uct ucs)
endif()
if(IBVERBS_LIBRARY)
  list(APPEND CFX_NET_LINK_NAMES ibverbs)
endif()

list(TRANSFORM CFX_NET_LINK_NAMES PREPEND "-l" OUTPUT_VARIABLE CFX_NET_PC_LIBS)
list(JOIN CFX_NET_PC_LIBS " " CFX_NET_PC_LIBS)

cfx_report(hwloc "${HWLOC_FOUND}")
cfx_report(libnuma "${NUMA_LIBRARY}")
cfx_report(UCX "${UCX_FOUND}")
cfx_report(libibverbs "${IBVERBS_LIBRARY}")
cfx_report(CUDA "${CUDAToolkit_FOUND}")
cfx_report(MPI "${MPI_C_FOUND}")
cfx_report(Gloo "${Gloo_FOUND}")
message(STATUS "Conflux optional dependencies found:${CFX_OPTIONAL_FOUND}")
message(STATUS "Conflux optional dependencies missing:${CFX_OPTIONAL_MISSING}")

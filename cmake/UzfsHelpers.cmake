# Helpers shared by every layer's CMakeLists.txt.

# uzfs_simd_sources(<target> <sources...>)
# Gives each source the instruction-set flags its file name asks for, so a
# kernel file says what it needs by its suffix (fletcher4_avx2.cc, ...).
# Only these files are built with those flags; callers must check the CPU
# (zfs/util/cpu.h) before running any code from them.
function(uzfs_simd_sources target)
  foreach(src IN LISTS ARGN)
    set(flags "")
    if(src MATCHES "_sse2\\.cc$")
      set(flags -msse2)
    elseif(src MATCHES "_ssse3\\.cc$")
      set(flags -mssse3)
    elseif(src MATCHES "_avx2\\.cc$")
      set(flags -mavx2 -mbmi2)
    elseif(src MATCHES "_avx512f\\.cc$")
      set(flags -mavx512f)
    elseif(src MATCHES "_avx512bw\\.cc$")
      set(flags -mavx512f -mavx512bw -mavx512vl -mbmi2)
    elseif(src MATCHES "_gfni\\.cc$")
      set(flags -mavx512f -mavx512bw -mavx512vl -mgfni -mbmi2)
    endif()
    if(flags)
      set_source_files_properties(${src} TARGET_DIRECTORY ${target}
                                  PROPERTIES COMPILE_OPTIONS "${flags}")
    endif()
  endforeach()
endfunction()

# uzfs_unity(<target>)
# Compiles the target's sources in batches of UZFS_UNITY_BATCH when
# UZFS_UNITY_BUILD is on. Files with their own instruction-set flags
# (uzfs_simd_sources) stay out of the batches (CMake leaves out files with
# per-file compile options). Names private to a file (anonymous namespace)
# must therefore be unique within the target.
function(uzfs_unity target)
  if(UZFS_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${UZFS_UNITY_BATCH})
  endif()
endfunction()

# uzfs_layer_library(<target> <dir>)
# A layer library made of every .cc below <dir> (excluding tests), with SIMD
# flags set per file name. New files are picked up at configure time.
function(uzfs_layer_library target dir)
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${dir}/*.cc)
  if(NOT srcs)  # a layer not yet written still gives a linkable target
    set(srcs ${CMAKE_CURRENT_BINARY_DIR}/${target}_empty.cc)
    file(WRITE ${srcs} "// ${target} has no sources yet\n")
  endif()
  add_library(${target} STATIC ${srcs})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  uzfs_simd_sources(${target} ${srcs})
  uzfs_unity(${target})
endfunction()

# Resolves CONVEYOR_GPU (auto|amd|nvidia|off) into CONVEYOR_GPU_FLAVOUR and sets up the
# toolchain for it:
#   nvidia: CMake's CUDA language with nvcc, sm_90, static cudart (easy to carry to a host
#           without CUDA libraries).
#   amd:    Debian's hipcc compiles .hip files in a custom command (CMake 3.25's HIP
#           language does not work with Debian's ROCm as shipped); hip::host links them.
#   off:    g++ only.
# auto picks the vendor whose GPU this host has, and off when it has none.

set(CONVEYOR_AMD_ARCHS "gfx90a;gfx1030" CACHE STRING "AMD offload architectures")
set(CONVEYOR_CUDA_ARCHS "90" CACHE STRING "CUDA architectures")

# Runs at the including scope (not in a function): enable_language must.
set(_gpu_choice "${CONVEYOR_GPU}")
if(_gpu_choice STREQUAL "auto")
  find_program(HIPCC_PROBE hipcc)
  if(EXISTS "/dev/nvidiactl" AND (EXISTS "/usr/local/cuda/bin/nvcc" OR CMAKE_CUDA_COMPILER))
    set(_gpu_choice nvidia)
  elseif(EXISTS "/dev/kfd" AND HIPCC_PROBE)
    set(_gpu_choice amd)
  else()
    set(_gpu_choice off)
  endif()
endif()
if(NOT _gpu_choice MATCHES "^(amd|nvidia|off)$")
  message(FATAL_ERROR "CONVEYOR_GPU must be auto, amd, nvidia or off (got '${CONVEYOR_GPU}')")
endif()
set(CONVEYOR_GPU_FLAVOUR ${_gpu_choice})

if(CONVEYOR_GPU_FLAVOUR STREQUAL "nvidia")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS "/usr/local/cuda/bin/nvcc")
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  set(CMAKE_CUDA_ARCHITECTURES ${CONVEYOR_CUDA_ARCHS})
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
elseif(CONVEYOR_GPU_FLAVOUR STREQUAL "amd")
  find_program(HIPCC hipcc REQUIRED)
  find_package(hip CONFIG REQUIRED)
  # gfx942 (MI300) only where the toolchain knows it; ROCm 5.2's clang-15 does not.
  set(CONVEYOR_AMD_ARCH_LIST ${CONVEYOR_AMD_ARCHS})
  # (TMPDIR: see conveyor_add_gpu_sources.)
  file(WRITE "${CMAKE_BINARY_DIR}/arch_probe.hip" "__global__ void k() {}\n")
  file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/arch_probe.tmp")
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${CMAKE_BINARY_DIR}/arch_probe.tmp
            ${HIPCC} --offload-arch=gfx942 -c "${CMAKE_BINARY_DIR}/arch_probe.hip"
            -o "${CMAKE_BINARY_DIR}/arch_probe.o"
    RESULT_VARIABLE _probe_rc OUTPUT_QUIET ERROR_QUIET)
  file(REMOVE_RECURSE "${CMAKE_BINARY_DIR}/arch_probe.tmp")
  if(_probe_rc EQUAL 0)
    list(APPEND CONVEYOR_AMD_ARCH_LIST gfx942)
  else()
    message(STATUS "hipcc does not accept gfx942; building for ${CONVEYOR_AMD_ARCH_LIST}")
  endif()
endif()

# Adds GPU sources (.hip) to `target` for the resolved flavour.
function(conveyor_add_gpu_sources target)
  if(CONVEYOR_GPU_FLAVOUR STREQUAL "nvidia")
    set_source_files_properties(${ARGN} PROPERTIES LANGUAGE CUDA)
    target_sources(${target} PRIVATE ${ARGN})
    set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${CONVEYOR_CUDA_ARCHS}"
                                               CUDA_STANDARD 17 CUDA_SEPARABLE_COMPILATION OFF)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fPIC> $<$<COMPILE_LANGUAGE:CUDA>:-diag-suppress=2810> $<$<COMPILE_LANGUAGE:CUDA>:-lineinfo>)
  elseif(CONVEYOR_GPU_FLAVOUR STREQUAL "amd")
    set(arch_flags)
    foreach(a ${CONVEYOR_AMD_ARCH_LIST})
      list(APPEND arch_flags --offload-arch=${a})
    endforeach()
    # The same warnings as the C++ code (CMakeLists.txt), and -Werror with CONVEYOR_WERROR.
    set(warning_flags -Wall -Wextra)
    if(CONVEYOR_WERROR)
      list(APPEND warning_flags -Werror)
    endif()
    file(GLOB headers "${CMAKE_CURRENT_SOURCE_DIR}/*.h" "${PROJECT_SOURCE_DIR}/base/*.h")
    foreach(src ${ARGN})
      get_filename_component(name ${src} NAME_WE)
      set(obj "${CMAKE_CURRENT_BINARY_DIR}/${name}.hip.o")
      # clang 15's driver leaves two empty directories in TMPDIR for each device
      # compilation (NAME-XXXXXX, newer clang removes them): each compilation gets a
      # TMPDIR of its own in the build tree, removed after it.
      set(tmp "${CMAKE_CURRENT_BINARY_DIR}/${name}.hip.tmp")
      add_custom_command(
        OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${tmp}
        COMMAND ${CMAKE_COMMAND} -E env TMPDIR=${tmp}
                ${HIPCC} ${arch_flags} -O3 -std=c++17 -fPIC ${warning_flags} -DCONVEYOR_GPU_AMD
                -I${CMAKE_CURRENT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/base
                -c ${CMAKE_CURRENT_SOURCE_DIR}/${src} -o ${obj}
        COMMAND ${CMAKE_COMMAND} -E rm -rf ${tmp}
        DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${src} ${headers}
        COMMENT "hipcc ${src} (${CONVEYOR_AMD_ARCH_LIST})"
        VERBATIM)
      set_source_files_properties(${obj} PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
      target_sources(${target} PRIVATE ${obj})
    endforeach()
  endif()
endfunction()

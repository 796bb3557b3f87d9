// The one place that knows which GPU vendor we build for. Kernels and the GPU runtime
// code are written against HIP. On AMD this includes the real HIP runtime; for nvcc it
// maps the hip* names this project uses to CUDA, because the HIP-on-NVIDIA headers that
// Debian ships do not compile against CUDA 12/13. Only names the project uses live here
// (the idea is ggml's vendors/hip.h, in the other direction).
#pragma once

#if defined(CONVEYOR_GPU_NVIDIA)

#include <cuda_runtime.h>

using hipError_t = cudaError_t;
using hipStream_t = cudaStream_t;
using hipEvent_t = cudaEvent_t;
using hipDeviceProp_t = cudaDeviceProp;

#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipGetErrorName cudaGetErrorName
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipSetDeviceFlags cudaSetDeviceFlags
#define hipDeviceScheduleAuto cudaDeviceScheduleAuto
#define hipDeviceScheduleSpin cudaDeviceScheduleSpin
#define hipDeviceScheduleYield cudaDeviceScheduleYield
#define hipDeviceScheduleBlockingSync cudaDeviceScheduleBlockingSync
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDriverGetVersion cudaDriverGetVersion
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipHostMalloc cudaHostAlloc
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostMallocMapped cudaHostAllocMapped
#define hipHostFree cudaFreeHost
#define hipHostGetDevicePointer cudaHostGetDevicePointer
#define hipHostRegister cudaHostRegister
#define hipHostRegisterDefault cudaHostRegisterDefault
#define hipHostRegisterReadOnly cudaHostRegisterReadOnly
#define hipHostUnregister cudaHostUnregister
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemsetAsync cudaMemsetAsync
using hipMemcpyKind = cudaMemcpyKind;
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpy2DAsync cudaMemcpy2DAsync
#define hipDeviceGetPCIBusId cudaDeviceGetPCIBusId
#define hipStreamCreateWithPriority cudaStreamCreateWithPriority
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventDestroy cudaEventDestroy
#define hipEventElapsedTime cudaEventElapsedTime
#define hipLaunchKernelGGL(kernel, grid, block, shared, stream, ...) \
  kernel<<<(grid), (block), (shared), (stream)>>>(__VA_ARGS__)
// A kernel parameter read in place (constant bank) even where it is indexed at run time;
// without it nvcc copies an indexed parameter array to every thread's local memory.
#define CONVEYOR_GRID_CONSTANT __grid_constant__

#elif defined(CONVEYOR_GPU_AMD)

#include <hip/hip_runtime.h>
#define CONVEYOR_GRID_CONSTANT  // kernel arguments are read from memory there anyway

#else
#error "hip_compat.h is for GPU builds; define CONVEYOR_GPU_NVIDIA or CONVEYOR_GPU_AMD"
#endif

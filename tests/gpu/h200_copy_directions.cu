// Link diagnostic for the GPU host (CUDA only, not built by CMake): D2H copy rate by copy
// size, alone and while 3.1 MB H2D copies (a 1080p yuv420p frame) run on another stream,
// with and without a timing event before and after each D2H copy. Results: docs/benchmarks-history.md.
//   nvcc -O2 -cudart static -o copy_directions tests/gpu/h200_copy_directions.cu && ./copy_directions
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

int main() {
  const size_t up_bytes = 3110400;  // 1080p yuv420p
  void *hin, *hout, *din, *dout;
  CK(cudaHostAlloc(&hin, up_bytes, 0));
  CK(cudaHostAlloc(&hout, 64 << 20, 0));
  CK(cudaMalloc(&din, up_bytes));
  CK(cudaMalloc(&dout, 64 << 20));
  cudaStream_t up, down;
  CK(cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&down, cudaStreamNonBlocking));
  cudaEvent_t a, b, c, d, t[2];
  for (cudaEvent_t* ev : {&a, &b, &c, &d, &t[0], &t[1]}) CK(cudaEventCreate(ev));
  const size_t sizes[] = {64 << 10, 256 << 10, 720 << 10, 1200 << 10};
  for (int warm = 0; warm < 2; ++warm) {
    for (size_t s : sizes) {
      for (int timing = 0; timing < 2; ++timing) {
        for (int with_up = 0; with_up < 2; ++with_up) {
          const int n_up = 2000;
          const size_t down_total = with_up ? (size_t)n_up * 900000 : (size_t)2000 * 720 * 1024;  // about a ladder's share
          const int n_down = (int)(down_total / s);
          CK(cudaEventRecord(a, up));
          CK(cudaStreamWaitEvent(down, a, 0));
          if (with_up) for (int i = 0; i < n_up; ++i) CK(cudaMemcpyAsync(din, hin, up_bytes, cudaMemcpyHostToDevice, up));
          CK(cudaEventRecord(b, up));
          size_t off = 0;
          for (int i = 0; i < n_down; ++i) {
            if (timing) CK(cudaEventRecord(t[0], down));
            CK(cudaMemcpyAsync((char*)hout + off, (char*)dout + off, s, cudaMemcpyDeviceToHost, down));
            if (timing) CK(cudaEventRecord(t[1], down));
            off = (off + s + s > (64u << 20)) ? 0 : off + s;
          }
          CK(cudaEventRecord(c, down));
          CK(cudaEventSynchronize(b));
          CK(cudaEventSynchronize(c));
          float up_ms = 0, down_ms = 0;
          CK(cudaEventElapsedTime(&up_ms, a, b));
          CK(cudaEventElapsedTime(&down_ms, a, c));
          if (warm) printf("down copies %7zu B, timing %d, with H2D %d: D2H %6.2f GB/s (%6.2f us a copy) | H2D %6.2f GB/s over %.1f ms, D2H over %.1f ms\n",
                 s, timing, with_up, (double)n_down * s / down_ms / 1e6, down_ms * 1e3 / n_down,
                 with_up ? (double)n_up * up_bytes / up_ms / 1e6 : 0.0, up_ms, down_ms);
        }
      }
    }
  }
  return 0;
}

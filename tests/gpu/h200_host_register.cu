// Diagnostic for the GPU host (CUDA only, not built by CMake): what registering a
// session's frame-assembly ring costs (daemon/session/frame_assembly_ring.h), and whether
// it holds up copies that another thread issues meanwhile, as the GPU worker's would be.
//   nvcc -O2 -cudart static -o host_register tests/gpu/h200_host_register.cu && ./host_register
// Sizes: one 1080p yuv420p frame (page-rounded), and rings of 18 and 72 of them (2 x
// session_queue_frames + 2 buffers: 10 with the default queue of 4, 18 with 8).
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); return 1; } } while (0)

namespace {

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

}  // namespace

int main() {
  const size_t frame = 3112960;  // 1920x1080 yuv420p (3 110 400 bytes) rounded up to 4 KiB pages
  CK(cudaSetDevice(0));
  CK(cudaFree(nullptr));  // make the context before any timing
  using clock = std::chrono::steady_clock;
  printf("%-22s %10s %10s %12s %10s %8s\n", "size", "mmap+touch", "register", "unregister", "munmap", "(ms)");
  for (int count : {1, 18, 72}) {
    const size_t len = frame * count;
    std::vector<double> touch, reg, unreg, unmap;
    for (int rep = 0; rep < 7; ++rep) {
      auto t0 = clock::now();
      void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) { perror("mmap"); return 1; }
      memset(p, 1, len);
      auto t1 = clock::now();
      CK(cudaHostRegister(p, len, cudaHostRegisterDefault));
      auto t2 = clock::now();
      CK(cudaHostUnregister(p));
      auto t3 = clock::now();
      munmap(p, len);
      auto t4 = clock::now();
      touch.push_back(Ms(t0, t1)); reg.push_back(Ms(t1, t2)); unreg.push_back(Ms(t2, t3)); unmap.push_back(Ms(t3, t4));
    }
    char name[64];
    snprintf(name, sizeof name, "%d x 1080p (%.1f MB)", count, len / 1e6);
    printf("%-22s %10.2f %10.2f %12.2f %10.2f   median of 7\n", name, Median(touch), Median(reg), Median(unreg), Median(unmap));
  }

  // A copier thread: 3.1 MB H2D copies from pinned memory on its own stream, one at a
  // time, each timed by the host. First alone, then while this thread registers and
  // unregisters 18-frame rings back to back.
  void *src, *dst;
  CK(cudaHostAlloc(&src, frame, 0));
  CK(cudaMalloc(&dst, frame));
  std::atomic<int> phase{0};
  std::vector<double> alone, beside;
  std::thread copier([&] {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return;
    while (phase.load() < 3) {
      auto a = clock::now();
      cudaMemcpyAsync(dst, src, frame, cudaMemcpyHostToDevice, s);
      cudaStreamSynchronize(s);
      const double ms = Ms(a, clock::now());
      if (phase.load() == 0) alone.push_back(ms);
      if (phase.load() == 2) beside.push_back(ms);
    }
    cudaStreamDestroy(s);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  phase = 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  phase = 2;
  const size_t len = frame * 18;
  for (int rep = 0; rep < 10; ++rep) {
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) { perror("mmap"); break; }
    memset(p, 1, len);
    if (cudaHostRegister(p, len, cudaHostRegisterDefault) != cudaSuccess) { printf("register failed\n"); break; }
    cudaHostUnregister(p);
    munmap(p, len);
  }
  phase = 3;
  copier.join();
  printf("3.1 MB H2D copy, alone:                    %zu copies, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n", alone.size(),
         Quantile(alone, 0.5), Quantile(alone, 0.99), Quantile(alone, 1.0));
  if (!beside.empty()) {
    printf("3.1 MB H2D copy, beside 10 ring (un)registers: %zu copies, p50 %.3f ms, p99 %.3f ms, max %.3f ms\n",
           beside.size(), Quantile(beside, 0.5), Quantile(beside, 0.99), Quantile(beside, 1.0));
  }
  return 0;
}

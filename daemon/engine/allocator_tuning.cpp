// glibc malloc tuning for frame-sized buffers.
#include "allocator_tuning.h"

#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace conveyor {

void TuneAllocatorForFrames() {
#if defined(__GLIBC__)
  // Blocks under 256 MiB come from the heap (default: 128 KiB, adjusted upward lazily);
  // free memory at the top of the heap is returned only past 512 MiB.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  // One arena. glibc's default (eight per core) lets each of the many threads that touch
  // frames (gRPC, sessions, decoders, workers) keep its own arena of freed frames, and
  // idle RSS then creeps from one soak round to the next (tests/soak); with one arena it
  // stays flat. Frame-sized blocks are a few allocations a frame and small ones hit the
  // per-thread cache first, so the one lock is not contended. An operator's
  // GLIBC_TUNABLES=glibc.malloc.arena_max=N is left in force.
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables == nullptr || std::strstr(tunables, "glibc.malloc.arena_max") == nullptr) mallopt(M_ARENA_MAX, 1);
#endif
}

HeapUsage HeapUsageNow() {
  HeapUsage u;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  const struct mallinfo2 m = mallinfo2();
  u.in_use_bytes = static_cast<double>(m.uordblks + m.hblkhd);
  u.free_bytes = static_cast<double>(m.fordblks);
#endif
  return u;
}

bool ReleaseFreeHeap() {
#if defined(__GLIBC__)
  return malloc_trim(0) == 1;
#else
  return false;
#endif
}

}  // namespace conveyor

// glibc malloc tuning for frame-sized buffers.
#include "allocator_tuning.h"

#include <malloc.h>

namespace conveyor {

void TuneAllocatorForFrames() {
#if defined(__GLIBC__)
  // Blocks under 256 MiB come from the heap (default: 128 KiB, adjusted upward lazily);
  // free memory at the top of the heap is returned only past 512 MiB.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  // Two arenas in all. glibc's default (eight per core) let each of the many threads that
  // touch frames (gRPC, sessions, decoders, workers) keep its own arena of freed frames:
  // after load, idle RSS crept 3-8 % per soak round (tests/soak) and settled near 330 MiB
  // on 2 cores; with two arenas, 228 MiB and flat, at the same frames/s. Frame-sized
  // blocks are a few allocations a frame, so the arena locks are not contended.
  mallopt(M_ARENA_MAX, 2);
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

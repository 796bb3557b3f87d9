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
#endif
}

}  // namespace conveyor

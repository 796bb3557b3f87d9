// Process-wide allocator settings for a frame pipeline. Each encoded frame is a fresh
// multi-megabyte buffer; glibc serves those with mmap, so every frame faults its output
// in page by page and unmaps it again, which in a VM costs more than the encode (4K on
// the GPU host: 433 fps as shipped, 1277 fps with these settings). Keeping such blocks
// on the heap lets them be reused; RSS then stays at the high-water mark of the frames
// in flight instead of returning to the OS between frames.
#pragma once

namespace conveyor {

// Call once at start, before threads allocate. Safe to call more than once.
void TuneAllocatorForFrames();

// Gives the heap's free pages back to the OS (glibc: malloc_trim, which also releases
// whole free pages inside each arena, not only at the top). For an idle daemon: the
// high-water mark of the frames that were in flight is then not held while nothing runs.
// Returns false where nothing was released or the allocator has no such call.
bool ReleaseFreeHeap();

// The heap as the allocator counts it (glibc: mallinfo2): bytes handed out and not yet
// freed, and free bytes it still holds. In-use bytes grow with a leak; RSS also counts
// pages that a few live blocks pin among free ones, so the two tell a leak from
// fragmentation. Zero where the allocator has no such call.
struct HeapUsage {
  double in_use_bytes = 0, free_bytes = 0;
};
HeapUsage HeapUsageNow();

}  // namespace conveyor

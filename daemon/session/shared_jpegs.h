// Shared-memory JPEG output (JpegFramesOutput.shared_memory_slots): the daemon writes each
// encoded JPEG into a slot of a memfd it made and handed to the client on the attach
// socket, and the OutputPacket only names the slot, so the image crosses no protobuf and
// no socket. The counterpart of shared-memory input (shared_frames.h); the idea of
// output written into client-visible shared memory is Triton Inference Server's system
// shared-memory extension.
//
// The memory is the daemon's: the client gets a descriptor it can only map read-only
// (F_SEAL_FUTURE_WRITE) and cannot resize (F_SEAL_SHRINK, F_SEAL_GROW), so nothing it
// does can fault the daemon or change a JPEG under it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "status.h"
#include "unique_fd.h"

namespace conveyor {

class SharedJpegSlots {
 public:
  // A sealed memfd of `slots` (1..32) x `slot_bytes`, mapped read-write here. `name`
  // shows in /proc/PID/fd of both sides.
  static StatusOr<std::unique_ptr<SharedJpegSlots>> Create(int slots, size_t slot_bytes, const char* name);
  ~SharedJpegSlots();
  SharedJpegSlots(const SharedJpegSlots&) = delete;
  SharedJpegSlots& operator=(const SharedJpegSlots&) = delete;

  int fd() const { return fd_.get(); }
  int slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  uint8_t* slot(int i) { return base_ + static_cast<size_t>(i) * slot_bytes_; }

  // Slot states, for the session to keep under its own lock: free -> taken (a JPEG is
  // being written into it) -> sent (the client was told to read it) -> free again on the
  // client's release. The session never waits for a slot: with none free, a JPEG goes
  // out in OutputPacket.data, so a client that releases late is never a deadlock (its
  // releases may queue behind input the daemon has no room to read yet).
  int Take();  // a free slot, now taken; -1 when none is free
  void MarkSent(int slot);
  // The client's OutputSlotReleased. INVALID_ARGUMENT naming the field unless `slot`
  // holds a JPEG sent to the client and not released since.
  Status Release(uint32_t slot);
  // Whether the client holds any slot sent to it and not released.
  bool AwaitingRelease() const { return sent_ != 0; }

 private:
  SharedJpegSlots(UniqueFd fd, uint8_t* base, size_t length, int slots, size_t slot_bytes)
      : fd_(std::move(fd)), base_(base), length_(length), slots_(slots), slot_bytes_(slot_bytes) {}
  void Free(int slot);

  UniqueFd fd_;
  uint8_t* base_;
  size_t length_;
  int slots_;
  size_t slot_bytes_;
  uint32_t taken_ = 0;  // a bit per slot: taken or sent
  uint32_t sent_ = 0;   // a bit per slot: sent, awaiting the client's release
};

// Bytes of a slot for these renditions: the largest one's yuv420p size at its MCU-padded
// dimensions, plus 4 KiB for the headers, rounded up to a page. A JPEG at a quality a service uses is a fraction of that; a larger one
// (noise at quality 100) goes out in OutputPacket.data instead.
size_t SharedJpegSlotBytes(const std::vector<std::pair<int, int>>& rendition_sizes);

}  // namespace conveyor

// Shared-memory raw input (RawInput.shared_memory_slots): a client on the same host
// writes frames into slots of a memfd it handed to the daemon, and sends only a
// SharedFrame naming the slot, so a frame crosses no socket and no protobuf. The idea of
// client memory registered with the server is Triton Inference Server's system
// shared-memory extension; passing the memfd over a unix socket with the shrink seal,
// so that the daemon can never fault on a truncated file, is how Wayland's wl_shm
// clients and compositors do it.
//
// The client keeps write access. One that writes a slot while the worker reads it (the
// CPU worker encodes registered memory in place, the GPU worker uploads from it) only
// garbles its own frame: every byte value is a valid sample, and nothing in a frame is
// read once to be checked and again to be used, as a length or an index would be.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "status.h"
#include "worker.h"

namespace conveyor {

// A client's memfd, mapped read-only for as long as a frame from it may still be read.
class SharedFrameMemory {
 public:
  // Maps `slots` x `slot_bytes` of `fd` (which the caller still owns and closes).
  // FAILED_PRECONDITION, saying what is wrong, for anything but a regular file (memfd)
  // sealed against shrinking and at least that long.
  static StatusOr<std::shared_ptr<SharedFrameMemory>> Map(int fd, int slots, size_t slot_bytes);
  ~SharedFrameMemory();
  SharedFrameMemory(const SharedFrameMemory&) = delete;
  SharedFrameMemory& operator=(const SharedFrameMemory&) = delete;

  // Registers the mapping with `worker` (Worker::RegisterHostMemory), so that it reads
  // frames where they are instead of copying them; kept until this object goes, and
  // dropped before the unmap. A worker that cannot (a GPU runtime refusing read-only
  // pages) leaves frames to be copied, which is slower and as correct.
  Status RegisterWith(Worker& worker);
  bool registered() const { return registration_ != nullptr; }

  int slots() const { return slots_; }
  size_t slot_bytes() const { return slot_bytes_; }
  const uint8_t* slot(int i) const { return base_ + static_cast<size_t>(i) * slot_bytes_; }

 private:
  SharedFrameMemory(const uint8_t* base, size_t length, int slots, size_t slot_bytes)
      : base_(base), length_(length), slots_(slots), slot_bytes_(slot_bytes) {}

  const uint8_t* base_;
  size_t length_;
  std::unique_ptr<HostMemoryRegistration> registration_;
  int slots_;
  size_t slot_bytes_;
};

// A new attach key: 32 hex characters from the kernel's random source.
StatusOr<std::string> NewAttachKey();
// Compares keys in time that does not depend on where they differ.
bool SameAttachKey(const std::string& a, const std::string& b);

}  // namespace conveyor

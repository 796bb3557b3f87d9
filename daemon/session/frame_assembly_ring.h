// Buffers for raw frames that arrive in frame_chunk messages. The session assembles each
// frame's chunks into one of them, and the buffers are registered with the session's
// worker (Worker::RegisterHostMemory), so a GPU worker uploads the frame from where it
// was assembled instead of first copying it into one of its pinned slots: one 3 MB host
// copy less a 1080p frame. Registered memory is page-locked, so it is bounded across
// sessions by PinnedInputBudget (workers.pinned_input_bytes); a session that finds the
// budget spent, or every buffer of its ring in use, assembles in ordinary memory and the
// worker copies, as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "status.h"
#include "worker.h"

namespace conveyor {

// Bytes of frame buffers that sessions may hold registered at once.
class PinnedInputBudget {
 public:
  explicit PinnedInputBudget(uint64_t limit) : limit_(limit) {}
  bool TryReserve(uint64_t bytes);
  void Give(uint64_t bytes);
  uint64_t in_use() const;
  uint64_t limit() const { return limit_; }

 private:
  mutable std::mutex mu_;
  const uint64_t limit_;
  uint64_t in_use_ = 0;
};

class FrameAssemblyRing : public std::enable_shared_from_this<FrameAssemblyRing> {
 public:
  // `count` (1..32) buffers of `frame_bytes` each, registered with `worker`, charged to
  // `budget`. RESOURCE_EXHAUSTED when the budget has no room; the worker's or the
  // kernel's error when the memory cannot be made or registered.
  static StatusOr<std::shared_ptr<FrameAssemblyRing>> Create(Worker& worker, int count, size_t frame_bytes,
                                                             std::shared_ptr<PinnedInputBudget> budget);
  ~FrameAssemblyRing();
  FrameAssemblyRing(const FrameAssemblyRing&) = delete;
  FrameAssemblyRing& operator=(const FrameAssemblyRing&) = delete;

  // A free buffer of frame_bytes: when the last copy of the pointer goes (the worker is
  // done reading the frame) the buffer is free again. It keeps the ring, and so its
  // registration, alive. Null when every buffer is in use.
  std::shared_ptr<uint8_t> TryTake();

  size_t bytes() const { return length_; }
  int in_use() const;
  // The bytes a ring of `count` buffers of `frame_bytes` maps and registers: each buffer
  // starts on a page, so registrations never share a page with other data.
  static size_t BytesFor(int count, size_t frame_bytes);
  // Whether this ring is what Create(worker, count, frame_bytes) would make.
  bool Fits(const Worker& worker, int count, size_t frame_bytes) const;

 private:
  FrameAssemblyRing(const Worker* worker, uint8_t* base, size_t length, size_t stride, int count)
      : worker_(worker), base_(base), length_(length), stride_(stride), count_(count) {}
  void Give(int index);

  const Worker* worker_;  // whom it is registered with; compared, never called
  uint8_t* base_;
  size_t length_, stride_;
  int count_;
  std::unique_ptr<HostMemoryRegistration> registration_;  // dropped before the unmap
  std::shared_ptr<PinnedInputBudget> budget_;
  mutable std::mutex mu_;
  uint32_t busy_ = 0;  // a bit per buffer taken and not yet given back
};

}  // namespace conveyor

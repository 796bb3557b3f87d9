// The client's side of shared-memory raw input (RawInput.shared_memory_slots), written
// from the proto's description alone, for the end-to-end tests and the daemon benchmark:
// a sealed memfd of frame slots, mapped read-write, and the attach handshake on the
// daemon's attach socket.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "conveyor/v1/transcoder.pb.h"

namespace conveyor::e2e {

class SharedFrameSlots {
 public:
  // A memfd of `slots` x `slot_bytes`, sealed against shrinking unless `seal` is false
  // (for the test that the daemon refuses it). Null with `error` set on failure.
  static std::unique_ptr<SharedFrameSlots> Create(uint32_t slots, size_t slot_bytes, std::string* error,
                                                  bool seal = true);
  ~SharedFrameSlots();
  SharedFrameSlots(const SharedFrameSlots&) = delete;
  SharedFrameSlots& operator=(const SharedFrameSlots&) = delete;

  uint8_t* slot(uint32_t i) { return base_ + static_cast<size_t>(i) * slot_bytes_; }
  int fd() const { return fd_; }

 private:
  SharedFrameSlots(int fd, uint8_t* base, size_t length, size_t slot_bytes)
      : fd_(fd), base_(base), length_(length), slot_bytes_(slot_bytes) {}

  int fd_;
  uint8_t* base_;
  size_t length_;
  size_t slot_bytes_;
};

// The client's view of its slots: Started (where to attach) and SlotReleased, fed by the
// thread that reads responses, waited on by the one that writes frames. End() (the
// stream is over) wakes every wait.
class SharedSlotTracker {
 public:
  void OnResponse(const v1::TranscodeResponse& r);
  void End();
  // Started's shared_memory; none once the stream ended without it or after `timeout_s`.
  std::optional<v1::SharedMemoryInput> WaitStarted(double timeout_s);
  // A free slot, taken; -1 once the stream ended or after `timeout_s` without one.
  int TakeFreeSlot(double timeout_s);
  int released() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<v1::SharedMemoryInput> shm_;
  std::set<uint32_t> free_;
  int released_ = 0;
  bool ended_ = false;
};

// Connects to `socket`, sends `key` with `fd` as SCM_RIGHTS (fd < 0: none) and returns
// the daemon's answer line without its newline ("OK" or "ERROR ..."), or "CLIENT ..."
// when this side failed.
std::string AttachSharedFrames(const std::string& socket, const std::string& key, int fd);

}  // namespace conveyor::e2e

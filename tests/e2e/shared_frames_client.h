// The client's side of shared-memory raw input (RawInput.shared_memory_slots), written
// from the proto's description alone, for the end-to-end tests and the daemon benchmark:
// a sealed memfd of frame slots, mapped read-write, and the attach handshake on the
// daemon's attach socket.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

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

// Connects to `socket`, sends `key` with `fd` as SCM_RIGHTS (fd < 0: none) and returns
// the daemon's answer line without its newline ("OK" or "ERROR ..."), or "CLIENT ..."
// when this side failed.
std::string AttachSharedFrames(const std::string& socket, const std::string& key, int fd);

}  // namespace conveyor::e2e

// The client's side of shared memory, written from the proto's description alone, for
// the end-to-end tests and the daemon benchmark: raw input (RawInput.shared_memory_slots),
// a sealed memfd of frame slots mapped read-write; JPEG output (JpegFramesOutput.
// shared_memory_slots), the daemon's memfd mapped read-only; and the attach handshake on
// the daemon's attach socket that swaps them.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

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

// The daemon's JPEG slots (Started.shared_memory_output), mapped read-only from the
// descriptor the attach handed back; this object closes it.
class SharedJpegSlotsView {
 public:
  // Null with `error` set on failure.
  static std::unique_ptr<SharedJpegSlotsView> Map(int fd, uint32_t slots, uint64_t slot_bytes, std::string* error);
  ~SharedJpegSlotsView();
  SharedJpegSlotsView(const SharedJpegSlotsView&) = delete;
  SharedJpegSlotsView& operator=(const SharedJpegSlotsView&) = delete;

  // The JPEG an OutputPacket.shared names; empty if it lies outside the mapping.
  std::vector<uint8_t> Read(const v1::SharedJpeg& jpeg) const;
  int fd() const { return fd_; }

 private:
  SharedJpegSlotsView(int fd, const uint8_t* base, size_t length, uint64_t slot_bytes)
      : fd_(fd), base_(base), length_(length), slot_bytes_(slot_bytes) {}

  int fd_;
  const uint8_t* base_;
  size_t length_;
  uint64_t slot_bytes_;
};

// The client's view of its slots: Started (where to attach), SlotReleased, and the JPEG
// slots the daemon filled (OutputPacket.shared), fed by the thread that reads responses,
// waited on by the one that writes (which also sends the releases: a gRPC stream has one
// writer). End() (the stream is over) wakes every wait.
class SharedSlotTracker {
 public:
  void OnResponse(const v1::TranscodeResponse& r);
  void End();
  // Started's shared_memory; none once the stream ended without it or after `timeout_s`.
  std::optional<v1::SharedMemoryInput> WaitStarted(double timeout_s);
  // Started itself, for the output side; none as above.
  std::optional<v1::Started> WaitStartedMessage(double timeout_s);
  // JPEG slots filled since the last call, to be released; waits up to `timeout_s` for
  // at least `at_least` of them.
  std::vector<uint32_t> TakeFilledOutputSlots(size_t at_least = 0, double timeout_s = 0);
  // A free slot, taken; -1 once the stream ended or after `timeout_s` without one.
  int TakeFreeSlot(double timeout_s);
  int released() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<v1::SharedMemoryInput> shm_;
  std::optional<v1::Started> started_;
  std::vector<uint32_t> filled_;
  std::set<uint32_t> free_;
  int released_ = 0;
  bool ended_ = false;
};

// Connects to `socket`, sends `key` with `fd` as SCM_RIGHTS (fd < 0: none) and returns
// the daemon's answer line without its newline ("OK" or "ERROR ..."), or "CLIENT ..."
// when this side failed. A descriptor that came with the answer (the JPEG slots) goes to
// `received` (-1: none; the caller closes it), or is closed when `received` is null.
std::string AttachSharedFrames(const std::string& socket, const std::string& key, int fd, int* received = nullptr);

// Sends OutputSlotReleased for each slot.
template <class Stream>
bool ReleaseOutputSlots(Stream* stream, const std::vector<uint32_t>& slots) {
  for (uint32_t slot : slots) {
    v1::TranscodeRequest r;
    r.mutable_output_slot_released()->set_slot(slot);
    if (!stream->Write(r)) return false;
  }
  return true;
}

}  // namespace conveyor::e2e

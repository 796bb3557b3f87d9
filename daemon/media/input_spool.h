// A private file that holds the input of a client that cannot seek, for a demuxer that
// must (an MP4 whose moov follows mdat, streamed from a pipe). It is made with O_TMPFILE
// (or unlinked at once where the file system lacks it), so no name ever exists and the
// kernel frees it when the session closes it, a crash included. It is bounded: an append
// past `limit_bytes` is RESOURCE_EXHAUSTED. The bytes of every spool in the process are
// counted for the conveyor_input_spool_bytes gauge.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "status.h"
#include "unique_fd.h"

namespace conveyor::media {

class InputSpool {
 public:
  static StatusOr<std::unique_ptr<InputSpool>> Create(const std::string& directory, uint64_t limit_bytes);
  ~InputSpool();
  InputSpool(const InputSpool&) = delete;
  InputSpool& operator=(const InputSpool&) = delete;

  // Appends at the end (the input's next bytes).
  Status Append(const uint8_t* data, size_t size);
  // Copies up to `size` bytes from `offset` (< bytes()); returns the count.
  StatusOr<size_t> ReadAt(uint64_t offset, uint8_t* buf, size_t size) const;
  uint64_t bytes() const { return bytes_; }
  uint64_t limit() const { return limit_; }

  // All spools of the process together.
  static uint64_t TotalBytes() { return total_.load(); }

 private:
  InputSpool(UniqueFd fd, uint64_t limit) : fd_(std::move(fd)), limit_(limit) {}

  UniqueFd fd_;
  const uint64_t limit_;
  uint64_t bytes_ = 0;
  static inline std::atomic<uint64_t> total_{0};
};

}  // namespace conveyor::media

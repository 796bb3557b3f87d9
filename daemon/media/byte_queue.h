// The bounded byte pipe between the rpc layer, which pushes the chunks a client sends,
// and the demuxer, which reads them through its AVIO read callback. It is bounded by
// bytes, so a fast client cannot make the daemon hold more of its upload than that.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "status.h"

namespace conveyor::media {

class ByteQueue {
 public:
  // `capacity_bytes` bounds the bytes held. A chunk larger than the capacity is taken
  // only into an empty queue, so the queue never holds more than
  // max(capacity_bytes, largest chunk) bytes.
  // `on_space` (optional) is called, on the thread that freed the space and with no
  // lock held, once a chunk of the size a TryPush was refused fits again, and on
  // Cancel(). A gRPC reactor uses it to retry and start its next read, never blocking.
  explicit ByteQueue(size_t capacity_bytes, std::function<void()> on_space = nullptr);

  ByteQueue(const ByteQueue&) = delete;
  ByteQueue& operator=(const ByteQueue&) = delete;

  // Producer side.
  // Blocks while the chunk does not fit. OK once queued; CANCELLED after Cancel();
  // FAILED_PRECONDITION after Close(). Empty chunks are accepted and dropped.
  Status Push(std::vector<uint8_t> chunk);
  // Never blocks. Takes the chunk (moving from it) and returns true when it fits; returns
  // false and leaves `chunk` untouched when the queue is full, closed or cancelled.
  bool TryPush(std::vector<uint8_t>& chunk);
  // End of input: readers get the rest, then AVERROR_EOF.
  void Close();

  // Either side: abort. Drops queued bytes; blocked readers return AVERROR_EXIT and
  // blocked Push() calls CANCELLED, now and from then on.
  void Cancel();

  // Reader side, shaped as an AVIO read callback: blocks until there are bytes and
  // copies up to `size` of them into `buf`. Returns the count (> 0), AVERROR_EOF once
  // closed and drained, AVERROR_EXIT once cancelled. Never returns 0 for size > 0.
  int Read(uint8_t* buf, int size);

  // Random access (a client that sends any range of its input on request). Bytes are
  // positioned: each chunk says its offset, and belongs to a generation, the ReadRequest
  // it answers (0: the stream from offset 0 before any request).
  // Reader side: drops what is queued and starts generation + 1 at `offset`; returns the
  // new generation, which the caller sends to the client with the offset. nullopt after
  // Close() or Cancel(): nothing more will come.
  std::optional<uint64_t> Reposition(uint64_t offset);
  // Producer side: a chunk of `generation` at `offset`. kTaken (moved from `chunk`); kFull
  // (untouched, as TryPush); kStale: of an earlier generation, dropped. INVALID_ARGUMENT
  // for a generation not yet started or an offset other than where the generation goes
  // on. `end`: nothing follows the chunk in this generation; readers then get AVERROR_EOF
  // until the next Reposition.
  enum class PushAt { kTaken, kFull, kStale };
  StatusOr<PushAt> TryPushAt(uint64_t generation, uint64_t offset, std::vector<uint8_t>& chunk, bool end);
  uint64_t position() const;  // input offset of the next byte a reader gets
  bool generation_ended() const;  // the current generation's end_of_input came

  size_t capacity() const { return capacity_; }
  size_t queued_bytes() const;
  size_t peak_bytes() const;    // the most bytes ever held at once
  uint64_t bytes_read() const;  // total handed to readers
  bool closed() const;
  bool cancelled() const;

 private:
  bool FitsLocked(size_t size) const;

  const size_t capacity_;
  const std::function<void()> on_space_;
  mutable std::mutex mu_;
  std::condition_variable readable_;
  std::condition_variable writable_;
  std::deque<std::vector<uint8_t>> chunks_;
  size_t front_offset_ = 0;  // bytes of chunks_.front() already read
  size_t queued_ = 0;        // unread bytes in chunks_
  size_t peak_ = 0;
  uint64_t read_total_ = 0;
  bool closed_ = false;
  bool cancelled_ = false;
  // Random access: the generation, where it goes on (the offset of its next pushed byte),
  // whether it has ended, and where the reader is.
  uint64_t generation_ = 0;
  uint64_t push_offset_ = 0;
  bool generation_ended_ = false;
  uint64_t position_ = 0;
  bool refused_ = false;     // a TryPush was refused; on_space_ is owed
  size_t refused_size_ = 0;  // ...for a chunk of this size, called once it fits
};

}  // namespace conveyor::media

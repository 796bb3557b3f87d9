// Fuzz target: the random-access surface of container input. A client that says
// ContainerInput.seekable answers the demuxer's seeks as ReadRequests (ByteQueue
// Reposition, then ranges pushed with TryPushAt); one that cannot has its MP4 with moov
// after mdat spooled to a file (InputSpool). The client here answers every request at
// once from the fuzzed bytes, so a run is one thread and reproducible, and it misbehaves
// as the header says: stale ranges of the request before, a range at the wrong offset, an
// answer cut short, a declared size shorter than the input.
//
// Input layout: byte 0 the mode bits (below), byte 1 the first run's chunk size, byte 2 a
// parameter (the spool bound, or how much shorter the declared size is); the rest is the
// input. Beyond "no crash": a request never lies past a declared size, a misplaced range
// is always refused, and no spool byte outlives its decoder.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "byte_queue.h"
#include "demux_decoder.h"
#include "input_spool.h"

extern "C" {
#include <libavutil/log.h>
}

namespace {

using conveyor::media::ByteQueue;

enum Mode : uint8_t {
  kRandomAccess = 1 << 0,  // else: stream it, with a spool
  kSizeExact = 1 << 1,     // ContainerInput.size: the input's length...
  kSizeShort = 1 << 2,     // ...or that less the parameter byte times 64
  kStaleRanges = 1 << 3,   // before each answer, a range of the run before
  kMisplaced = 1 << 4,     // answer the first request one byte off (the session ends)
  kCutShort = 1 << 5,      // answers end halfway, with end_of_input
  kNoForwardRead = 1 << 6, // every forward seek is a request
  kSmallBuffer = 1 << 7,   // a 1 KiB AVIO buffer: more seeks leave it
};

constexpr int kMaxFrames = 8;
constexpr int64_t kMaxPixels = 1280 * 720;

struct Client {
  const uint8_t* data;
  size_t size;
  uint8_t mode;
  ByteQueue* queue;
  uint64_t declared_size;
  bool misplaced_sent = false;

  // Sends data[offset, end) as run `generation`, in chunks of `chunk`.
  void SendRun(uint64_t generation, uint64_t offset, uint64_t end, size_t chunk) {
    for (uint64_t at = offset; at < end || at == offset;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, end - at));
      std::vector<uint8_t> bytes;
      if (n > 0) bytes.assign(data + at, data + at + n);
      const bool last = at + n >= end;
      auto pushed = queue->TryPushAt(generation, at, bytes, last);
      // The queue holds the whole input and was emptied by the request: nothing is refused.
      if (!pushed.ok() || *pushed != ByteQueue::PushAt::kTaken) __builtin_trap();
      at += n;
      if (last) break;
    }
  }

  void Answer(uint64_t generation, uint64_t offset) {
    if (declared_size > 0 && offset > declared_size) __builtin_trap();  // the decoder checks it first
    if (offset >= size) {  // past what the client has: an empty run that ends at once
      SendRun(generation, offset, offset, 1);
      return;
    }
    if ((mode & kStaleRanges) != 0 && generation > 0) {
      std::vector<uint8_t> stale(data, data + std::min<size_t>(size, 16));
      auto pushed = queue->TryPushAt(generation - 1, 0, stale, false);
      if (!pushed.ok() || *pushed != ByteQueue::PushAt::kStale) __builtin_trap();
    }
    if ((mode & kMisplaced) != 0 && !misplaced_sent) {
      misplaced_sent = true;
      std::vector<uint8_t> one(1, 0);
      if (queue->TryPushAt(generation, offset + 1, one, false).ok()) __builtin_trap();
      queue->Cancel();  // as the session does when it refuses a range
      return;
    }
    uint64_t end = size;
    if ((mode & kCutShort) != 0) end = offset + (size - offset) / 2;
    SendRun(generation, offset, end, 4096);
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  av_log_set_level(AV_LOG_QUIET);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const uint8_t mode = data[0];
  const size_t chunk = 1 + static_cast<size_t>(data[1]) * 64;
  const uint8_t param = data[2];
  data += 3;
  size -= 3;

  ByteQueue queue(size + 1);
  conveyor::media::DecoderOptions options;
  options.threads = 1;
  options.max_pixels = kMaxPixels;
  if ((mode & kSmallBuffer) != 0) options.avio_buffer_bytes = 1024;
  Client client{data, size, mode, &queue, 0};
  if ((mode & kRandomAccess) != 0) {
    if ((mode & kSizeExact) != 0) client.declared_size = size;
    if ((mode & kSizeShort) != 0) client.declared_size = size > param * 64u ? size - param * 64u : 1;
    options.random_access.enabled = true;
    options.random_access.size = client.declared_size;
    options.random_access.request = [&client](uint64_t generation, uint64_t offset) {
      client.Answer(generation, offset);
    };
    if ((mode & kNoForwardRead) != 0) options.random_access.forward_read_bytes = 0;
    client.SendRun(0, 0, size, chunk);
  } else {
    options.spool_directory = "/tmp";
    options.spool_bytes = 1024 + static_cast<uint64_t>(param) * 256;
    for (size_t at = 0; at < size; at += chunk) {
      const size_t n = std::min(chunk, size - at);
      if (!queue.Push(std::vector<uint8_t>(data + at, data + at + n)).ok()) __builtin_trap();
    }
    queue.Close();
  }

  {
    auto opened = conveyor::media::ContainerDecoder::Open(&queue, options);
    if (opened.ok()) {
      conveyor::media::ContainerDecoder& decoder = **opened;
      conveyor::media::DecodedFrame frame;
      for (int i = 0; i < kMaxFrames; ++i) {
        auto more = decoder.Next(&frame);
        if (!more.ok() || !*more) break;
      }
      if ((mode & kRandomAccess) == 0 && decoder.spooled_bytes() > options.spool_bytes) __builtin_trap();
    }
  }
  if (conveyor::media::InputSpool::TotalBytes() != 0) __builtin_trap();
  return 0;
}

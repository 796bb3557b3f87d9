// conveyor-bench-daemon's seekable container input (--seekable): the input goes as
// ContainerRange runs, the first from offset 0 and each later one from where the daemon's
// ReadRequest asks, as a client holding the whole file in memory answers them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "conveyor/v1/transcoder.grpc.pb.h"

namespace conveyor::bench {

using Stream = grpc::ClientReaderWriter<v1::TranscodeRequest, v1::TranscodeResponse>;

// The daemon's ReadRequests, posted by the thread that reads responses and taken by the
// writer (a gRPC stream has one writer). Only the newest request counts: an older one not
// yet answered is overtaken, as the daemon drops ranges of an earlier seek_id anyway.
class ReadRequestMailbox {
 public:
  void Post(const v1::ReadRequest& request);
  // No request can come any more: Summary arrived, or the call is over.
  void Close();
  bool closed() const;
  // The newest request not taken yet; waits up to `wait_s` for one (< 0: until one comes
  // or the mailbox closes, 0: not at all). None once closed.
  std::optional<v1::ReadRequest> Take(double wait_s);

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<v1::ReadRequest> pending_;
  bool closed_ = false;
};

// What the client moved: every byte written (stale ranges included) and the runs started.
struct RangeTally {
  uint64_t bytes_sent = 0;
  uint64_t runs = 0;  // 1 + the requests answered
};

// Writes `input` as ranges of up to `chunk_bytes`, answering each request in `requests`,
// and waits at the input's end for a request until the mailbox closes; it never
// half-closes, since a request may come until Summary. `between` (may be empty) runs after
// each write and, every 50 ms, while waiting at the end: the JPEG slots going back.
// Returns false once a write (or `between`) fails: the call is over.
bool SendRanges(Stream* stream, const std::vector<uint8_t>& input, size_t chunk_bytes, ReadRequestMailbox* requests,
                const std::function<bool()>& between, RangeTally* tally);

}  // namespace conveyor::bench

// conveyor-bench-daemon's seekable container input (--seekable): the input goes as
// ContainerRange runs, the first from offset 0 and each later one from where the daemon's
// ReadRequest asks, as a client holding the whole file in memory answers them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "transcode_input.h"  // ctl::ReadRequests, the mailbox conveyorctl uses

namespace conveyor::bench {

using Stream = grpc::ClientReaderWriter<v1::TranscodeRequest, v1::TranscodeResponse>;


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
bool SendRanges(Stream* stream, const std::vector<uint8_t>& input, size_t chunk_bytes, ctl::ReadRequests* requests,
                const std::function<bool()>& between, RangeTally* tally);

}  // namespace conveyor::bench

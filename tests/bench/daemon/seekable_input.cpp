// conveyor-bench-daemon's seekable container input (see seekable_input.h).
#include "seekable_input.h"

#include <algorithm>
#include <optional>

namespace conveyor::bench {

bool SendRanges(Stream* stream, const std::vector<uint8_t>& input, size_t chunk_bytes, ctl::ReadRequests* requests,
                const std::function<bool()>& between, RangeTally* tally) {
  v1::TranscodeRequest request;
  v1::ContainerRange* range = request.mutable_container_range();
  uint64_t seek_id = 0, offset = 0;
  bool at_end = false;
  tally->runs = 1;
  for (;;) {
    // While sending, a request is only looked at between writes; at the end, the writer
    // waits for one (in short steps when slots have to go back meanwhile).
    const double wait_s = !at_end ? 0 : between ? 0.05 : -1;
    const std::optional<v1::ReadRequest> asked = requests->Take(wait_s);
    if (requests->closed()) return true;
    if (asked) {
      seek_id = asked->seek_id();
      offset = std::min<uint64_t>(asked->offset(), input.size());
      at_end = false;
      tally->runs++;
    }
    if (!at_end) {
      const size_t n = std::min<size_t>(chunk_bytes, input.size() - offset);
      range->set_seek_id(seek_id);
      range->set_offset(offset);
      range->set_data(input.data() + offset, n);
      at_end = offset + n >= input.size();
      range->set_end_of_input(at_end);
      if (!stream->Write(request)) return false;
      offset += n;
      tally->bytes_sent += n;
    }
    if (between && !between()) return false;
  }
}

}  // namespace conveyor::bench

// conveyor-bench-daemon's seekable container input (see seekable_input.h).
#include "seekable_input.h"

#include <algorithm>
#include <chrono>

namespace conveyor::bench {

void ReadRequestMailbox::Post(const v1::ReadRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = request;
  }
  cv_.notify_all();
}

void ReadRequestMailbox::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool ReadRequestMailbox::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

std::optional<v1::ReadRequest> ReadRequestMailbox::Take(double wait_s) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return closed_ || pending_.has_value(); };
  if (wait_s < 0) {
    cv_.wait(lock, ready);
  } else if (wait_s > 0) {
    cv_.wait_for(lock, std::chrono::duration<double>(wait_s), ready);
  }
  if (closed_) return std::nullopt;
  std::optional<v1::ReadRequest> taken;
  taken.swap(pending_);
  return taken;
}

bool SendRanges(Stream* stream, const std::vector<uint8_t>& input, size_t chunk_bytes, ReadRequestMailbox* requests,
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

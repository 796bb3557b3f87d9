// The per-stream order of finished frames and the one thread that hands them over.
#include "in_order_handover.h"

#include <utility>

namespace conveyor {

uint64_t InOrderHandover::Enter(uint64_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  return streams_[stream].submitted++;
}

bool InOrderHandover::Add(FinishedFrame&& frame) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(frame.stream);
  StreamOrder& o = it->second;
  o.finished.emplace(frame.sequence, std::move(frame));
  for (auto f = o.finished.begin(); f != o.finished.end() && f->first == o.next; f = o.finished.erase(f)) {
    ready_.push_back(std::move(f->second));
    ++o.next;
  }
  if (o.next == o.submitted) streams_.erase(it);  // nothing of it in flight: forget it
  if (handing_over_) return false;
  handing_over_ = true;
  return true;
}

std::optional<FinishedFrame> InOrderHandover::TakeReady() {
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_.empty()) {
    handing_over_ = false;
    return std::nullopt;
  }
  FinishedFrame next = std::move(ready_.front());
  ready_.pop_front();
  return next;
}

}  // namespace conveyor

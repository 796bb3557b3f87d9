#include "decoder_lifecycle.h"

#include <algorithm>
#include <utility>

namespace conveyor::media {

bool SurfaceGate::WaitForRoom(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return held_ < bound_; });
}

int SurfaceGate::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

void SurfaceGate::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  ++held_;
}

void SurfaceGate::Give() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --held_;
  }
  cv_.notify_all();
}

DecoderLifecycle::Creation::Creation(DecoderLifecycle* owner) : owner_(owner) {
  owner_->creators_++;  // before the wait: a teardown not yet started waits for this one
  lock_ = std::unique_lock<std::mutex>(owner_->mu_);
}

DecoderLifecycle::Creation::Creation(Creation&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), lock_(std::move(other.lock_)) {}

DecoderLifecycle::Creation& DecoderLifecycle::Creation::operator=(Creation&& other) noexcept {
  if (this != &other) {
    End();
    owner_ = std::exchange(other.owner_, nullptr);
    lock_ = std::move(other.lock_);
  }
  return *this;
}

void DecoderLifecycle::Creation::End() {
  if (owner_ == nullptr) return;
  lock_.unlock();
  std::exchange(owner_, nullptr)->CreationEnded();
}

void DecoderLifecycle::CreationEnded() {
  {
    std::lock_guard<std::mutex> lock(release_mu_);
    last_creation_end_ = Clock::now();
    creators_--;
  }
  release_cv_.notify_all();
}

DecoderLifecycle::DecoderLifecycle(Policy policy) : policy_(policy) {}

DecoderLifecycle::~DecoderLifecycle() {
  {
    std::lock_guard<std::mutex> lock(release_mu_);
    stopping_ = true;
  }
  release_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DecoderLifecycle::Hold(uint64_t bytes, SurfaceGate* gate) {
  held_bytes_ += bytes;
  if (gate != nullptr) gate->Take();
}

void DecoderLifecycle::StartThreadLocked() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
}

void DecoderLifecycle::Free(FramePtr frame, std::shared_ptr<SurfaceGate> gate, uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(release_mu_);
    frames_.push_back(Released{std::move(frame), std::move(gate), bytes});
    StartThreadLocked();
  }
  release_cv_.notify_all();
}

void DecoderLifecycle::Retire(std::shared_ptr<void> decoder, std::shared_ptr<SurfaceGate> gate) {
  if (!decoder) return;
  {
    std::lock_guard<std::mutex> lock(release_mu_);
    retired_.push_back(Retiree{std::move(decoder), std::move(gate), Clock::now()});
    StartThreadLocked();
  }
  release_cv_.notify_all();
}

std::size_t DecoderLifecycle::retired() const {
  std::lock_guard<std::mutex> lock(release_mu_);
  return retired_.size();
}

double DecoderLifecycle::teardown_seconds() const {
  std::lock_guard<std::mutex> lock(release_mu_);
  return teardown_seconds_;
}

std::deque<DecoderLifecycle::Retiree>::iterator DecoderLifecycle::NextTeardown(Clock::time_point now,
                                                                               Clock::time_point* again) {
  *again = Clock::time_point::max();
  if (retired_.empty()) return retired_.end();
  if (stopping_) return retired_.begin();
  // The oldest retiree whose frames are all freed (or that waited max_wait for them).
  auto ready = retired_.end();
  for (auto it = retired_.begin(); it != retired_.end(); ++it) {
    const Clock::time_point given_up = it->at + policy_.max_wait;
    if (!it->gate || it->gate->held() == 0 || now >= given_up) {
      ready = it;
      break;
    }
    *again = std::min(*again, given_up);  // else a frame freed here wakes the loop
  }
  if (ready == retired_.end()) return ready;
  if (retired_.size() > policy_.max_retired) return ready;  // too many wait: no grace
  if (creators_.load() > 0) return retired_.end();          // woken when it ends
  const Clock::time_point due = std::max(ready->at, last_creation_end_) + policy_.grace;
  if (now >= due) return ready;
  *again = std::min(*again, due);
  return retired_.end();
}

void DecoderLifecycle::Loop() {
  std::unique_lock<std::mutex> lock(release_mu_);
  for (;;) {
    if (!frames_.empty()) {
      std::deque<Released> batch;
      batch.swap(frames_);
      lock.unlock();
      {
        std::unique_lock<std::mutex> lifecycle = Lock();
        for (Released& r : batch) r.frame.reset();  // unmaps; tears down a decoder it held last
      }
      for (Released& r : batch) {
        held_bytes_ -= r.bytes;
        if (r.gate) r.gate->Give();
      }
      lock.lock();
      continue;
    }
    Clock::time_point again;
    auto next = NextTeardown(Clock::now(), &again);
    if (next != retired_.end()) {
      std::shared_ptr<void> decoder = std::move(next->decoder);
      retired_.erase(next);
      lock.unlock();
      const Clock::time_point start = Clock::now();
      {
        std::unique_lock<std::mutex> lifecycle = Lock();
        decoder.reset();
      }
      const double took = std::chrono::duration<double>(Clock::now() - start).count();
      lock.lock();
      teardown_seconds_ += took;
      teardowns_++;
      continue;
    }
    if (stopping_) return;  // nothing queued, nothing retired
    if (again == Clock::time_point::max()) {
      release_cv_.wait(lock);
    } else {
      release_cv_.wait_until(lock, again);
    }
  }
}

}  // namespace conveyor::media

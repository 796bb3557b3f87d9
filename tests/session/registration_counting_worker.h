// A worker that forwards to another (the CPU worker) and records what a GPU worker would
// do with registered memory: the ranges registered and still live, and the frames
// submitted from inside one (which a GPU worker uploads in place instead of copying).
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "worker.h"

namespace conveyor::session_test {

class RegistrationCountingWorker : public Worker {
 public:
  // `info`: what it says it is (a GPU's, for the session manager to lend it registered
  // memory); without one, the inner worker's. (Two constructors, not an optional with a
  // default argument: GCC 12 with AddressSanitizer warns, wrongly, that the empty
  // std::optional each caller builds may be read uninitialized.)
  explicit RegistrationCountingWorker(std::unique_ptr<Worker> inner)
      : inner_(std::move(inner)), info_(inner_->Info()) {}
  RegistrationCountingWorker(std::unique_ptr<Worker> inner, WorkerInfo info)
      : inner_(std::move(inner)), info_(std::move(info)) {}

  std::string Describe() const override { return inner_->Describe(); }
  WorkerInfo Info() const override { return info_; }
  Status Submit(FrameRequest request) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      const uint8_t* p = request.frame.plane[0];
      for (const Range& r : live_) {
        if (p >= r.data && p < r.data + r.size) ++frames_in_registered_;
      }
      ++frames_;
    }
    return inner_->Submit(std::move(request));
  }
  void Flush() override { inner_->Flush(); }
  StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void* data, size_t size) override {
    if (refuse_) return ResourceExhausted("test: registration refused");
    std::lock_guard<std::mutex> lock(mu_);
    live_.push_back({static_cast<const uint8_t*>(data), size});
    ++registrations_;
    return std::unique_ptr<HostMemoryRegistration>(std::make_unique<Registration>(this, data));
  }
  WorkerStats Stats() const override { return inner_->Stats(); }
  StatusOr<std::shared_ptr<Sprite>> NewSprite(PixelFormat format, int width, int height, ColorMatrix matrix,
                                              ColorRange range) override {
    return inner_->NewSprite(format, width, height, matrix, range);
  }

  void RefuseRegistrations() { refuse_ = true; }
  int registrations() const { return Locked([&] { return registrations_; }); }
  int live_registrations() const { return Locked([&] { return static_cast<int>(live_.size()); }); }
  int frames() const { return Locked([&] { return frames_; }); }
  int frames_in_registered() const { return Locked([&] { return frames_in_registered_; }); }

 private:
  struct Range {
    const uint8_t* data;
    size_t size;
  };
  class Registration : public HostMemoryRegistration {
   public:
    Registration(RegistrationCountingWorker* worker, void* data) : worker_(worker), data_(data) {}
    ~Registration() override { worker_->Drop(data_); }

   private:
    RegistrationCountingWorker* worker_;
    void* data_;
  };
  void Drop(void* data) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(std::remove_if(live_.begin(), live_.end(), [&](const Range& r) { return r.data == data; }),
                live_.end());
  }
  template <class F>
  int Locked(F f) const {
    std::lock_guard<std::mutex> lock(mu_);
    return f();
  }

  std::unique_ptr<Worker> inner_;
  const WorkerInfo info_;
  mutable std::mutex mu_;
  std::vector<Range> live_;
  int registrations_ = 0, frames_ = 0, frames_in_registered_ = 0;
  std::atomic<bool> refuse_{false};
};

// One over a one-thread, one-slot CPU worker: enough for tests of the memory itself.
inline std::unique_ptr<RegistrationCountingWorker> SmallCountingWorker() {
  WorkerOptions wo;
  wo.slots = 1;
  wo.cpu_threads = 1;
  return std::make_unique<RegistrationCountingWorker>(MakeCpuWorker(wo));
}

}  // namespace conveyor::session_test

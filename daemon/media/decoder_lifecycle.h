// DecoderLifecycle: when one device's hardware decoders are created and torn down, and
// where their frames are freed.
//
// On one device these steps never overlap: the 9-minute decode soak on the GPU host
// crashed the daemon inside libnvcuvid's cuvidDestroyDecoder, reached from the GPU
// worker's delivery thread as it freed the last frame of a closed session's decoder while
// other sessions created and destroyed theirs. So every step takes the lifecycle lock,
// and frames and decoders are freed on this class's thread, never a worker's.
//
// The steps are not equally cheap. On the GPU host (an H100) an NVDEC decoder takes
// about 50 ms to create and about 200 ms to tear down (the debug lines of
// decode_targets.sh's sessions in a row). A teardown on the closing session's thread
// delayed that session's end by 200 ms, and one freed with the session's last frame held
// up the creation of the session that came next. So a closed decoder is retired here
// instead: its teardown waits until the frames it decoded are freed (its SurfaceGate is
// empty, so no frame free tears it down), no creation waits or has run for `grace`, and
// the retirement itself is `grace` old. Creations go first; a teardown gives way to none
// that started before it. More than `max_retired` waiting (their surfaces stay allocated)
// tears the oldest down at once, and a retiree whose frames are still held after
// `max_wait` is freed anyway (its last frame then tears the decoder down).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "ffmpeg_handles.h"

namespace conveyor::media {

// Counts the device frames a session holds, up to its bound (hw_decode.h's
// kDefaultHeldDeviceFrames says why there is one).
class SurfaceGate {
 public:
  explicit SurfaceGate(int bound) : bound_(bound) {}
  // Waits until fewer than the bound are held, or `timeout` passes; false on timeout.
  bool WaitForRoom(std::chrono::milliseconds timeout);
  int held() const;
  void Take();  // one more frame held
  void Give();  // one frame given back (once it was freed); wakes a waiter

 private:
  const int bound_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int held_ = 0;
};

class DecoderLifecycle {
 public:
  using Clock = std::chrono::steady_clock;
  struct Policy {
    std::chrono::milliseconds grace{250};
    std::size_t max_retired = 4;
    std::chrono::milliseconds max_wait{10000};
  };

  // The lifecycle lock, held for a decoder's creation; while one is held or waited for,
  // no retired decoder's teardown starts. Empty when default-constructed or moved from.
  class Creation {
   public:
    Creation() = default;
    Creation(Creation&& other) noexcept;
    Creation& operator=(Creation&& other) noexcept;
    Creation(const Creation&) = delete;
    Creation& operator=(const Creation&) = delete;
    ~Creation() { End(); }
    explicit operator bool() const { return owner_ != nullptr; }

   private:
    friend class DecoderLifecycle;
    explicit Creation(DecoderLifecycle* owner);
    void End();
    DecoderLifecycle* owner_ = nullptr;
    std::unique_lock<std::mutex> lock_;
  };

  explicit DecoderLifecycle(Policy policy);
  DecoderLifecycle() : DecoderLifecycle(Policy{}) {}
  DecoderLifecycle(const DecoderLifecycle&) = delete;
  DecoderLifecycle& operator=(const DecoderLifecycle&) = delete;
  // Frees every queued frame and tears every retired decoder down, then stops the thread.
  ~DecoderLifecycle();

  // Waits for the lifecycle lock, ahead of any teardown not yet started.
  Creation BeginCreation() { return Creation(this); }
  // The lifecycle lock alone, as the thread takes it for frees and teardowns.
  std::unique_lock<std::mutex> Lock() const { return std::unique_lock<std::mutex>(mu_); }

  // A frame decoded on this device is held on its way to the encoder: `bytes` more in
  // held_bytes(), and one more in `gate` (may be null).
  void Hold(uint64_t bytes, SurfaceGate* gate);
  // Queues `frame` to be freed on the thread, under the lock; then its bytes come off
  // held_bytes() and its surface goes back to `gate`. Never blocks on a creation or a
  // teardown: the GPU worker's delivery thread calls it.
  void Free(FramePtr frame, std::shared_ptr<SurfaceGate> gate, uint64_t bytes);
  // Hands over a closed decoder (its last owner: freeing it tears the decoder down) for
  // teardown on the thread once `gate` (may be null) holds no frame, as the header says.
  // Never blocks.
  void Retire(std::shared_ptr<void> decoder, std::shared_ptr<SurfaceGate> gate);

  uint64_t held_bytes() const { return held_bytes_.load(); }
  // Retired decoders not torn down yet, and those torn down so far with their time.
  std::size_t retired() const;
  uint64_t teardowns() const { return teardowns_.load(); }
  double teardown_seconds() const;

 private:
  struct Released {
    FramePtr frame;
    std::shared_ptr<SurfaceGate> gate;
    uint64_t bytes = 0;
  };
  struct Retiree {
    std::shared_ptr<void> decoder;
    std::shared_ptr<SurfaceGate> gate;
    Clock::time_point at;
  };
  void CreationEnded();
  void StartThreadLocked();  // release_mu_ held
  void Loop();
  // Under release_mu_: the retiree to tear down now (retired_.end() if none), and else
  // when to look again (Clock::time_point::max() for "when woken").
  std::deque<Retiree>::iterator NextTeardown(Clock::time_point now, Clock::time_point* again);

  const Policy policy_;
  mutable std::mutex mu_;  // the lifecycle lock
  std::atomic<uint64_t> held_bytes_{0};
  std::atomic<int> creators_{0};  // creations holding or waiting for the lock
  std::atomic<uint64_t> teardowns_{0};
  mutable std::mutex release_mu_;  // guards the queues, the times below and the thread's start
  std::condition_variable release_cv_;
  std::deque<Released> frames_;
  std::deque<Retiree> retired_;
  Clock::time_point last_creation_end_{};
  double teardown_seconds_ = 0;
  bool stopping_ = false;
  std::thread thread_;  // declared last: joined (everything freed) before the rest goes
};

}  // namespace conveyor::media

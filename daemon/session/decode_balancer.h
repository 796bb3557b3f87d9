// Keeps both decoders of a GPU host busy: its GPUs' video engines and its CPU cores. Under
// `decode auto`, sessions go to the engines until measurement says the engines are the
// bottleneck (their busy share at or above Policy::engine_busy) while the CPU has cores to
// spare (Policy::spare_cores idle); from then on new sessions decode on the CPU, and one
// engine session at a time (each Policy::move_every) is asked to move to the CPU at its
// next keyframe, which loses no frame (ContainerDecoder::MoveToSoftwareAtNextKeyframe).
// The load is read at most every Policy::sample_every, lazily, by the sessions' own calls,
// and placement goes by the last reading alone: a burst between readings lands on the
// engines, which share themselves out, and moves take the surplus off (decode_balancer.cpp
// says why not the other way round). Where the engines' load cannot be read (no NVML: AMD
// GPUs), every session goes to the engines, as without a balancer. A worker with fewer
// engine sessions than engines (SetEngines) is never the bottleneck, whatever NVML reads:
// a stream decodes on one engine at a time (on the GPU host NVDEC gives one 1080p H.264
// stream 442 frames/s, 8 streams 2 337 and 32 streams 3 159 on its 7 engines), so one is
// free, and NVML's share, averaged over its last sampling period, still reads a burst that
// has just ended (at 16 sessions every session went to the CPU after a warm-up round of 16
// on the engines).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace conveyor {

struct DecodeLoad {
  std::vector<double> engine_busy;  // by worker, 0..1; negative: not known
  double cpu_idle_cores = -1;       // negative: not known
};

class DecodeBalancer {
 public:
  struct Policy {
    double engine_busy = 0.90;
    double spare_cores = 2.0;
    std::chrono::milliseconds sample_every{500};
    std::chrono::milliseconds move_every{1000};
  };
  using Sampler = std::function<DecodeLoad()>;
  using Clock = std::chrono::steady_clock;

  // `sampler` reads the load (null: no balancing, every session on the engines).
  DecodeBalancer(int workers, Sampler sampler, Policy policy);
  DecodeBalancer(int workers, Sampler sampler) : DecodeBalancer(workers, std::move(sampler), Policy{}) {}
  // NVML's decoder utilization of each GPU worker (by PCI bus id; "" for a worker
  // without engines) and /proc/stat's idle cores; null where NVML is not there.
  static Sampler SystemSampler(const std::vector<std::string>& pci_bus_ids);

  // A session decoding on a worker's engines, registered while it does.
  class Ticket {
   public:
    ~Ticket();
    // The balancer asks this session to move to the CPU decoder (at its next keyframe).
    bool move_requested() const { return move_.load(std::memory_order_relaxed); }

   private:
    friend class DecodeBalancer;
    struct State;
    std::shared_ptr<State> state_;
    int worker_ = 0;
    uint64_t serial_ = 0;
    std::atomic<bool> move_{false};
  };

  // Worker `worker`'s video decode engines (HwDecodeDevice::engines(); 0 or less: not known).
  void SetEngines(int worker, int engines);
  // Where a new `auto` session on `worker` decodes: "" for the engines, else why the CPU.
  std::string Place(int worker, Clock::time_point now = Clock::now());
  std::shared_ptr<Ticket> Register(int worker);
  // Called by engine sessions as they decode: reads the load when it is due, and asks the
  // newest engine session of a bottlenecked worker to move when a move is due.
  void Tick(int worker, Clock::time_point now = Clock::now());

  // Sessions moved to the CPU so far (all workers).
  uint64_t moves() const;

 private:
  std::shared_ptr<Ticket::State> state_;
};

}  // namespace conveyor

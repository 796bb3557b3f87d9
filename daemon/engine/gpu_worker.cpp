// The GPU worker: one per device. Frames go through a ring of slots (gpu_slot.h) on three
// kinds of dedicated non-blocking streams (one upload, `encode_streams` encode lanes, one
// readback):
//   upload:   H2D of the slot's input                        -> uploaded
//   encode:   waits uploaded; the stages band by band         -> band_done[k] after band k
//   readback: waits band_done[k]; D2H of band k alone
// The issue thread takes frames in groups and queues their copies and kernels
// (GpuLauncher) without waiting. Each encode lane has delivery threads that wait on one
// event at a time and read the group back band by band (BandReadback); the frames then
// reach their callers in submission order within their stream (InOrderHandover). A lane
// has its own delivery threads because a frame's readback is a chain of host round trips
// (band done -> queue its copy -> copy done) that would otherwise serialise the frames
// two lanes encode side by side. Nothing calls device-wide synchronisation
// (docs/DESIGN.md, Stream roles); a slot goes back to the pool only after its last
// copy's completion was observed (docs/DESIGN.md, Slot reuse).
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <thread>

#include "device_sprite.h"
#include "encode_plan.h"
#include "frame_queue.h"
#include "gpu_encoder.h"
#include "gpu_issue_policy.h"
#include "gpu_launch.h"
#include "gpu_readback.h"
#include "gpu_slot.h"
#include "heartbeat.h"
#include "in_order_handover.h"
#include "registered_ranges.h"
#include "slot_pool.h"
#include "stream_overlap.h"
#include "worker.h"

namespace conveyor {
namespace {

#if defined(CONVEYOR_GPU_NVIDIA)
// The calling thread's CUDA context (the device's primary context, once the runtime has
// made it current), from the driver library the runtime has loaded. FFmpeg's CUDA device
// is built on it: FFmpeg's own way of taking the primary context insists on the blocking
// synchronisation flag, which the runtime's active context does not have.
void* CurrentCudaContext() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) return nullptr;
  using GetCurrent = int (*)(void**);
  auto get_current = reinterpret_cast<GetCurrent>(dlsym(lib, "cuCtxGetCurrent"));
  void* context = nullptr;
  const bool ok = get_current != nullptr && get_current(&context) == 0;
  dlclose(lib);
  return ok ? context : nullptr;
}
#endif

// Scratch reserved at start on each encode lane, in bands of the largest frame per frame
// of a launch.
constexpr int kLaunchScratchBands = 3;
// Frames a worker holds at most, per slot: a slot is free once its frame is read back,
// and finished frames wait, without one, for their turn to be handed over.
constexpr int kInFlightPerSlot = 2;

class GpuWorker : public Worker {
 public:
  GpuWorker(const GpuDeviceInfo& device, const WorkerOptions& options)
      : device_(device.index),
        options_(options),
        info_{WorkerKind::kGpu, GpuBackendName(), device.index, device.name, device.total_memory},
        pool_(options.slots),
        in_flight_(kInFlightPerSlot * options.slots),
        slots_(options.slots),
        launcher_(options_, streams_, &counters_),
        lane_balance_(std::max(1, options.encode_streams), options.balance_encode_streams),
        timing_runs_(options.stage_timing),
        heartbeats_(1 + std::max(1, options.encode_streams) * std::max(1, options.delivery_threads_per_stream)) {}

  ~GpuWorker() override {
    issue_queue_.Close();
    if (issue_thread_.joinable()) issue_thread_.join();
    for (auto& q : delivery_queues_) q->Close();
    for (std::thread& t : delivery_threads_) t.join();
    (void)hipSetDevice(device_);
    for (Stream* s : streams_.All()) {
      if (s->get() != nullptr) (void)hipStreamSynchronize(s->get());
    }
  }

  Status Init() {
    GPU_RETURN_IF_ERROR(hipSetDevice(device_), "hipSetDevice(" + std::to_string(device_) + ")");
    if (options_.host_wait != WorkerOptions::HostWait::kAuto) {
      const unsigned flags = options_.host_wait == WorkerOptions::HostWait::kSpin    ? hipDeviceScheduleSpin
                             : options_.host_wait == WorkerOptions::HostWait::kYield ? hipDeviceScheduleYield
                                                                                     : hipDeviceScheduleBlockingSync;
      GPU_RETURN_IF_ERROR(hipSetDeviceFlags(flags), "hipSetDeviceFlags(" + std::to_string(flags) + ")");
    }
    RETURN_IF_ERROR(streams_.Create(options_.encode_streams));
    char bus_id[64] = {};
    if (hipDeviceGetPCIBusId(bus_id, sizeof bus_id, device_) == hipSuccess) pci_bus_id_ = bus_id;
#if defined(CONVEYOR_GPU_NVIDIA)
    // FFmpeg's CUDA hwaccel queues its copies of decoded pictures here; frames submitted
    // from them wait for it with an event (GpuSlot::decoded), never a device sync.
    ASSIGN_OR_RETURN(decode_stream_, Stream::Create(0, "decode"));
    decode_context_ = CurrentCudaContext();
    decode_api_ = "cuda";
#else
    decode_api_ = "vaapi";  // AMD's video engines, whose frames come to host memory
#endif
    for (GpuSlot& s : slots_) RETURN_IF_ERROR(s.CreateEvents(options_.stage_timing.on()));
    if (options_.stage_timing.on()) {
      ASSIGN_OR_RETURN(reference_, Event::Create(true, "reference"));
      GPU_RETURN_IF_ERROR(hipEventRecord(reference_.get(), streams_.upload.get()), "hipEventRecord(reference)");
    }
    RETURN_IF_ERROR(AllocateBuffers());
    PinnedBuffer ring;  // none at size 0: a ring with no room, so every band takes the fallback
    if (options_.readback_ring_bytes > 0) {
      ASSIGN_OR_RETURN(ring, PinnedBuffer::Allocate(options_.readback_ring_bytes, false, "readback ring"));
      counters_.pinned_bytes += ring.size();
    }
    readback_ = std::make_unique<BandReadback>(options_, streams_, reference_,
                                               std::make_shared<RingMemory>(std::move(ring)), &counters_);
    issue_thread_ = std::thread([this] { IssueLoop(); });
    const int per_lane = std::max(1, options_.delivery_threads_per_stream);
    for (size_t i = 0; i < streams_.lanes.size(); ++i) {
      delivery_queues_.push_back(std::make_unique<FrameQueue<std::vector<int>>>());
    }
    for (size_t i = 0; i < streams_.lanes.size(); ++i) {
      for (int k = 0; k < per_lane; ++k) {
        const int thread = static_cast<int>(i) * per_lane + k;
        delivery_threads_.emplace_back([this, i, thread] { DeliveryLoop(static_cast<int>(i), thread); });
      }
    }
    return OkStatus();
  }

  std::string Describe() const override { return "gpu " + std::to_string(device_) + ": " + info_.device_name; }
  WorkerInfo Info() const override { return info_; }

  Status Submit(FrameRequest request) override {
    RETURN_IF_ERROR(ValidateRequest(request, options_));
    if (request.device.enabled && decode_stream_.get() == nullptr) {
      return InvalidArgument("device input: " + Describe() + " takes no decoder frames");
    }
    if (dead_.load()) return Unavailable(Describe() + " is out of service: " + dead_reason_);
    const SteadyTime submitted = std::chrono::steady_clock::now();
    in_flight_.Enter();
    const int index = pool_.Acquire();
    GpuSlot& s = slots_[index];
    s.status = OkStatus();
    s.request = std::move(request);
    s.submitted = submitted;
    const FrameView& f = s.request.frame;
    FrameRequest::Deinterlace& d = s.request.deinterlace;
    s.frame_bytes = PackedFrameSize(f.format, f.width, f.height);
    // Deinterlacing uploads the frames before and after too, packed behind the frame in
    // the slot's pinned input (ValidateRequest checked that the three fit).
    // A sprite is copied on the device too, after the tiles written into it (CopyFromDevice).
    s.device = s.request.device.enabled || s.request.sprite != nullptr;
    s.direct = !s.device && ranges_->Holds(f) && !d.enabled;
    s.input_released = !s.direct && !s.device;
    s.sequence = handover_.Enter(s.request.stream);
    if (s.request.sprite != nullptr) {
      // Nothing to record: the sprite's `written` event orders its copy.
    } else if (s.device) {
      // The decoder's copies into these surfaces were queued on the decode stream before
      // this call: the upload waits for them there, and `owner` keeps the surfaces
      // until the slot's upload has completed.
      const Status recorded =
          Check("hipEventRecord(decoded)", s.index, hipEventRecord(s.decoded.get(), decode_stream_.get()));
      if (!recorded.ok()) s.status = recorded;
    } else if (!s.direct) {
      // Host copy into the slot's pinned input. The slot is free, so its last upload
      // has completed (the delivery thread observed `uploaded` before releasing it).
      CopyToPackedLayout(f, s.input.get<uint8_t>());
      if (d.enabled) {
        CopyToPackedLayout(d.prev, s.input.get<uint8_t>() + s.frame_bytes);
        CopyToPackedLayout(d.next, s.input.get<uint8_t>() + 2 * s.frame_bytes);
        d.prev = d.next = FrameView{};
      }
      s.request.frame.plane[0] = s.request.frame.plane[1] = s.request.frame.plane[2] = nullptr;  // caller's
      s.request.owner.reset();
      if (s.request.on_input_released) s.request.on_input_released();
    }
    issue_queue_.Push(index);
    return OkStatus();
  }

  void Flush() override { in_flight_.WaitNone(); }

  std::optional<DecodeTarget> Decoding() const override {
    if (decode_api_.empty()) return std::nullopt;
    return DecodeTarget{decode_api_, device_, pci_bus_id_, decode_stream_.get(), decode_context_};
  }

  StatusOr<std::shared_ptr<Sprite>> NewSprite(PixelFormat format, int width, int height, ColorMatrix matrix,
                                              ColorRange range) override {
    RETURN_IF_ERROR(ValidateSpriteSize(width, height, options_));
    if (dead_.load()) return Unavailable(Describe() + " is out of service: " + dead_reason_);
    GPU_RETURN_IF_ERROR(hipSetDevice(device_), "hipSetDevice");
    // Cleared on the upload stream: every frame's upload, which its tiles wait for, follows.
    ASSIGN_OR_RETURN(std::shared_ptr<DeviceSprite> sprite,
                     DeviceSprite::Create(format, width, height, matrix, range, streams_.upload.get()));
    return std::shared_ptr<Sprite>(std::move(sprite));
  }

  StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void* data, size_t size) override {
    GPU_RETURN_IF_ERROR(hipSetDevice(device_), "hipSetDevice");
    ASSIGN_OR_RETURN(HostRegistration r, HostRegistration::Register(data, size, "caller frames"));
    return RegisteredRanges::Add(ranges_, data, size, std::make_shared<HostRegistration>(std::move(r)));
  }

  WorkerStats Stats() const override {
    WorkerStats st;
    st.frames_done = counters_.done.load();
    st.frames_failed = counters_.failed.load();
    st.restarts = counters_.restarts.load();
    st.pinned_bytes = counters_.pinned_bytes;
    st.device_bytes = counters_.device_bytes.load();
    st.in_flight = in_flight_.Count();
    st.issue_busy_s = counters_.issue_busy_ns.load() / 1e9;
    st.delivery_busy_s = counters_.delivery_busy_ns.load() / 1e9;
    st.delivery_band_wait_s = counters_.band_wait_ns.load() / 1e9;
    st.delivery_copy_wait_s = counters_.copy_wait_ns.load() / 1e9;
    st.delivery_append_s = counters_.append_ns.load() / 1e9;
    st.readback_ring_fallbacks = counters_.ring_fallbacks.load();
    st.pinned_in_use_bytes = static_cast<uint64_t>(pool_.InUse()) * slot_pinned_bytes_;
    st.stalest_thread_s = heartbeats_.StalestSeconds();
    st.overlap_ratio = overlap_.Ratio();
    st.launch_groups = counters_.launch_groups.load();
    st.launch_group_frames = counters_.launch_group_frames.load();
    return st;
  }

 private:
  // The slots' buffers and the lanes' scratch, sized at start for the largest frame the
  // limits allow, in every subsampling (their bands round to whole segments
  // differently), so that no frame grows one (docs/DESIGN.md, Memory bounds).
  Status AllocateBuffers() {
    const size_t max_input = PackedFrameSize(PixelFormat::kRgba, options_.max_width, options_.max_height);
    for (int i = 0; i < options_.slots; ++i) {
      GpuSlot& s = slots_[i];
      s.index = i;
      RETURN_IF_ERROR(s.AllocateInput(max_input));
      counters_.pinned_bytes += s.input.size() + s.band_bytes.size();
    }
    std::vector<uint8_t> probe_frame;
    const FrameView largest = LargestFrameShape(&probe_frame);
    uint64_t band_capacity = 0, out_capacity = 0;
    for (Subsampling sub : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
      EncodeParams worst;
      worst.subsampling = sub;
      ASSIGN_OR_RETURN(EncodePlan p, MakeEncodePlan(largest, worst, GpuBandRows(options_, largest, worst),
                                                    GpuFirstBandRows(options_, largest, worst)));
      band_capacity = std::max<uint64_t>(band_capacity, p.band_capacity);
      out_capacity = std::max<uint64_t>(out_capacity, p.band_capacity * p.num_bands);
      // Room for kLaunchScratchBands bands of it a launch frame: a 1080p ladder's one wave
      // (1080p, 720p and 360p: 2.3 bands) fits in one launch.
      for (EncodeLane& lane : streams_.lanes) {
        RETURN_IF_ERROR(
            lane.ReserveScratch(ScratchSizes(p, kLaunchScratchBands * LaunchFrames()), &counters_.device_bytes));
      }
    }
    const uint64_t band_buffer = options_.test_band_buffer_bytes > 0 ? options_.test_band_buffer_bytes : band_capacity;
    for (GpuSlot& s : slots_) {
      RETURN_IF_ERROR(s.AllocateOutput(band_buffer, out_capacity));
      counters_.pinned_bytes += s.output.size();
      counters_.device_bytes += s.source.size() + s.out.size();
    }
    slot_pinned_bytes_ = slots_[0].input.size() + slots_[0].band_bytes.size() + slots_[0].output.size();
    return OkStatus();
  }

  FrameView LargestFrameShape(std::vector<uint8_t>* storage) const {
    storage->assign(1, 0);
    FrameView v;
    v.width = options_.max_width;
    v.height = options_.max_height;
    v.format = PixelFormat::kRgba;
    v.plane[0] = storage->data();
    v.stride[0] = 4 * v.width;
    return v;
  }

  int LaunchFrames() const { return std::clamp(options_.max_launch_frames, 1, kMaxLaunchFrames); }

  // Takes frames off the issue queue in groups: the first waiting frame and those queued
  // right behind it with the same shape, up to max_launch_frames. A frame of another
  // shape starts the next group.
  void IssueLoop() {
    (void)hipSetDevice(device_);  // once, for this thread
    std::optional<int> next;
    for (;;) {
      std::optional<int> head =
          next ? next : issue_queue_.PopTicking([this] { heartbeats_.Beat(0); }, kHeartbeatPeriod);
      next.reset();
      if (!head) break;
      std::vector<GpuSlot*> group = {&slots_[*head]};
      while (static_cast<int>(group.size()) < LaunchFrames()) {
        next = issue_queue_.TryPop();
        if (!next) break;
        if (!SameShape(group.front()->request, slots_[*next].request)) break;
        group.push_back(&slots_[*next]);
        next.reset();
      }
      if (options_.test_on_issue) options_.test_on_issue(static_cast<int>(group.size()));
      const SteadyTime started = std::chrono::steady_clock::now();
      int64_t pixels = 0;
      for (GpuSlot* s : group) pixels += s->lane_pixels = FramePixels(s->request);
      const int lane = lane_balance_.Take(pixels);
      const uint64_t timing_run = timing_runs_.RunFor(static_cast<int>(group.size()));
      std::vector<int> indices;
      for (GpuSlot* s : group) {
        s->started = started;
        s->lane = lane;
        s->timing_run = timing_run;
        indices.push_back(s->index);
      }
      {
        std::shared_lock<std::shared_mutex> lock(recover_mu_);  // Recover() swaps the streams
        if (dead_.load()) {
          for (GpuSlot* s : group) s->status = Unavailable(Describe() + " is out of service: " + dead_reason_);
        } else {
          launcher_.Issue(group);
        }
      }
      counters_.launch_groups.fetch_add(1);
      counters_.launch_group_frames.fetch_add(group.size());
      counters_.issue_busy_ns += Nanoseconds(started, std::chrono::steady_clock::now());
      delivery_queues_[lane]->Push(std::move(indices));
    }
  }

  // Takes the groups issued to one lane, reads them back, frees their slots and hands
  // their frames over. A failed group makes the worker recover before its slots are free.
  void DeliveryLoop(int lane, int thread) {
    (void)hipSetDevice(device_);  // once, for this thread
    while (auto indices = delivery_queues_[lane]->PopTicking([this, thread] { heartbeats_.Beat(1 + thread); },
                                                              kHeartbeatPeriod)) {
      std::vector<GpuSlot*> group, live;
      std::vector<FrameResult> results(indices->size());
      std::vector<FrameResult*> live_results;
      for (size_t i = 0; i < indices->size(); ++i) {
        GpuSlot& s = slots_[(*indices)[i]];
        FrameResult& result = results[i];
        result.id = s.request.id;
        result.times.submitted = s.submitted;
        result.times.started = s.started;
        result.jpeg.resize(s.request.renditions.size());
        result.status = s.status;
        group.push_back(&s);
        if (s.status.ok()) {
          live.push_back(&s);
          live_results.push_back(&result);
        }
      }
      const SteadyTime deliver_start = std::chrono::steady_clock::now();
      if (!live.empty()) {
        std::shared_lock<std::shared_mutex> lock(recover_mu_);  // streams stay while we use them
        const Status status = readback_->Read(live, live_results);
        if (!status.ok()) {
          for (FrameResult* r : live_results) r->status = status;
        }
      }
      const SteadyTime done = std::chrono::steady_clock::now();
      counters_.delivery_busy_ns += Nanoseconds(deliver_start, done);
      std::optional<Status> failure;
      std::vector<JpegBytes> failed_bytes;  // may lend ring room a copy still writes: kept past Recover
      for (FrameResult& result : results) {
        result.times.done = done;
        if (result.status.ok()) continue;
        result.status = result.status.WithContext(Describe());
        for (JpegBytes& j : result.jpeg) failed_bytes.push_back(std::move(j));
        result.jpeg.clear();
        if (!failure) failure = result.status;
      }
      if (failure) {
        // The issue thread may have queued later frames on these streams already; they
        // fail with this group or complete, and Recover() waits for them either way.
        std::unique_lock<std::shared_mutex> lock(recover_mu_);
        Recover(*failure);  // waits for every stream, so no copy still reads the input
      }
      failed_bytes.clear();
      for (size_t i = 0; i < group.size(); ++i) {
        GpuSlot& s = *group[i];
        s.ReleaseInput();
        // A storyboard's sprite lives as long as its session holds it, not until the slot's next frame.
        s.request.sprite.reset();
        for (Rendition& r : s.request.renditions) r.tiles = {};
        FinishedFrame f{s.request.stream, s.sequence, std::move(s.request.on_done), std::move(results[i])};
        // The slot is free: its upload, kernels and copies have completed (or Recover()
        // waited for them), and the result holds its bytes (lent from the ring or
        // copied). Frames behind it enter the pipeline while this one waits its turn.
        lane_balance_.Release(s.lane, s.lane_pixels);
        pool_.Release(s.index);
        HandOver(std::move(f));
      }
    }
  }

  // After a failed frame: let queued work drain, then re-create the streams so the next
  // frame starts clean. Events stay: frames queued after the failed one still wait on
  // theirs. If the context itself is broken, stop taking frames: later frames are refused
  // with UNAVAILABLE, which ends their sessions.
  void Recover(const Status& cause) {
    for (Stream* st : streams_.All()) (void)hipStreamSynchronize(st->get());
    (void)hipGetLastError();  // clear a non-sticky error
    Status s = streams_.Create(options_.encode_streams);
    if (s.ok()) {
      s = GpuStatus(hipStreamSynchronize(streams_.lanes[0].stream.get()), "hipStreamSynchronize after re-create");
    }
    counters_.restarts.fetch_add(1);
    if (!s.ok()) {
      dead_reason_ = s.ToString() + " (after: " + cause.ToString() + ")";
      dead_.store(true);
    }
  }

  // Hands over, in order, every frame whose turn has come, unless another delivery
  // thread is doing so (InOrderHandover).
  void HandOver(FinishedFrame&& frame) {
    if (!handover_.Add(std::move(frame))) return;
    while (std::optional<FinishedFrame> next = handover_.TakeReady()) {
      FrameResult& result = next->result;
      (result.status.ok() ? counters_.done : counters_.failed).fetch_add(1);
      if (result.status.ok()) overlap_.Add(result.times);  // timed frames only
      result.times.handed_over = std::chrono::steady_clock::now();
      next->on_done(std::move(result));
      in_flight_.Leave();
    }
  }

  const int device_;
  std::string pci_bus_id_;
  std::string decode_api_;  // DecodeTarget::api
  Stream decode_stream_;    // NVIDIA: the hardware decoder's copies; never re-created
  void* decode_context_ = nullptr;  // NVIDIA: the CUcontext the runtime works in on device_
  const WorkerOptions options_;
  const WorkerInfo info_;
  GpuStreams streams_;
  Event reference_;  // stage timing: time zero of FrameTimes' GPU intervals
  GpuCounters counters_;
  SlotPool pool_;
  InFlightLimit in_flight_;  // frames from Submit() to hand-over
  std::vector<GpuSlot> slots_;
  GpuLauncher launcher_;                    // issue thread only
  std::unique_ptr<BandReadback> readback_;  // made by Init(), used by the delivery threads
  InOrderHandover handover_;
  std::shared_ptr<RegisteredRanges> ranges_ = std::make_shared<RegisteredRanges>();
  LaneBalance lane_balance_;  // which encode lane each group takes
  TimingRuns timing_runs_;    // issue thread only

  FrameQueue<int> issue_queue_;
  std::vector<std::unique_ptr<FrameQueue<std::vector<int>>>> delivery_queues_;  // groups, one queue per lane
  std::thread issue_thread_;
  std::vector<std::thread> delivery_threads_;
  // Issue and delivery use the streams shared; Recover() swaps them exclusively.
  std::shared_mutex recover_mu_;
  std::atomic<bool> dead_{false};
  std::string dead_reason_;
  Heartbeats heartbeats_;  // [0] the issue thread, [1 + k] delivery thread k
  OverlapWindow overlap_;  // stage timing only
  uint64_t slot_pinned_bytes_ = 0;  // input, band counts and readback buffers of one slot
};

}  // namespace

StatusOr<std::unique_ptr<Worker>> MakeGpuWorker(int device, const WorkerOptions& options) {
  const GpuProbe probe = ProbeGpus();
  if (device < 0 || device >= static_cast<int>(probe.devices.size())) {
    return Unavailable(probe.devices.empty() ? probe.unavailable_reason
                                             : "no GPU with index " + std::to_string(device));
  }
  auto worker = std::make_unique<GpuWorker>(probe.devices[device], options);
  RETURN_IF_ERROR(worker->Init());
  return std::unique_ptr<Worker>(std::move(worker));
}

}  // namespace conveyor

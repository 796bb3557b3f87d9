// The GPU worker: one per device. Frames go through a ring of slots, each holding its
// pinned input, its device input and output and its events, on three dedicated
// non-blocking streams:
//   upload:   H2D of the slot's input                        -> ev_uploaded
//   encode:   waits ev_uploaded; the stages band by band      -> ev_band[k] after band k
//   readback: waits ev_band[k]; D2H of band k alone
// The issue thread queues a frame's copies and kernels and moves on. A launch of each
// stage carries bands of several encodes: a frame's renditions (Launch() puts the small
// ones beside the large one's last band) and, optionally, up to max_launch_frames queued
// frames of the same shape (a single 1080p band fills too few SMs on its own). Each
// encode lane has a delivery thread that waits on one event at a time, reads band k's
// size from mapped memory, queues band k's readback and gathers the bytes; frames then
// reach the caller in submission order within their stream (a small reorder step). One delivery thread per lane, because a
// frame's readback is a chain of host round trips (band done -> queue its copy -> copy
// done) that would otherwise serialise frames the two lanes encode side by side. Nothing calls
// device-wide synchronisation; a slot goes back to the pool only after its last copy's
// completion was observed (DESIGN.md rules 1-6).
#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "encode_plan.h"
#include "frame_queue.h"
#include "gpu_band_scratch.h"
#include "gpu_encoder.h"
#include "gpu_runtime.h"
#include "gpu_scale.h"
#include "gpu_stages.h"
#include "heartbeat.h"
#include "jfif_writer.h"
#include "jpeg_bytes.h"
#include "readback_ring.h"
#include "registered_ranges.h"
#include "slot_pool.h"
#include "stream_overlap.h"
#include "worker.h"

namespace conveyor {
namespace {

constexpr int kMaxBandsPerFrame = 4096;  // mapped counters per slot, summed over renditions
// Scratch reserved at start on each encode lane, in bands of the largest frame per frame
// of a launch.
constexpr int kLaunchScratchBands = 3;
// Band buffers per slot on the host side of readback: band k's copy is queued while
// band k-1's may still be in flight.
constexpr int kReadbackBuffers = 2;
// Frames a worker holds at most, per slot: a slot is free once its frame is read back,
// and finished frames wait, without one, for their turn to be handed over.
constexpr int kInFlightPerSlot = 2;

int64_t Nanoseconds(SteadyTime from, SteadyTime to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

void AppendTrailer(JpegBytes* jpeg) {
  std::vector<uint8_t> trailer;
  AppendJfifTrailer(&trailer);
  jpeg->AppendCopy(trailer.data(), trailer.size());
}

// The pinned readback ring and its memory, shared by the worker and the leases of the
// results that still lend from it (which may outlive the worker).
struct RingMemory {
  explicit RingMemory(PinnedBuffer b) : buffer(std::move(b)), ring(buffer.size()) {}
  PinnedBuffer buffer;
  ReadbackRing ring;
};

// A frame's room in the ring, given back when the last rendition lending from it is
// dropped.
struct RingLease {
  explicit RingLease(std::shared_ptr<RingMemory> m) : memory(std::move(m)) {}
  ~RingLease() {
    for (size_t offset : offsets) memory->ring.Release(offset);
  }
  std::shared_ptr<RingMemory> memory;
  std::vector<size_t> offsets;
};

class GpuWorker : public Worker {
 public:
  GpuWorker(int device, const WorkerOptions& options, const std::string& name)
      : device_(device),
        options_(options),
        name_(name),
        pool_(options.slots),
        in_flight_(kInFlightPerSlot * options.slots),
        slots_(options.slots),
        lane_pixels_(std::make_unique<std::atomic<int64_t>[]>(std::max(1, options.encode_streams))),
        heartbeats_(1 + std::max(1, options.encode_streams) * std::max(1, options.delivery_threads_per_stream)) {}

  ~GpuWorker() override {
    issue_queue_.Close();
    if (issue_thread_.joinable()) issue_thread_.join();
    for (auto& q : delivery_queues_) q->Close();
    for (std::thread& t : delivery_threads_) t.join();
    (void)hipSetDevice(device_);
    for (Stream* s : AllStreams()) {
      if (s->get() != nullptr) (void)hipStreamSynchronize(s->get());
    }
  }

  Status Init() {
    GPU_RETURN_IF_ERROR(hipSetDevice(device_), "hipSetDevice(" + std::to_string(device_) + ")");
    RETURN_IF_ERROR(CreateStreams());
    RETURN_IF_ERROR(CreateEvents());
    if (options_.stage_timing.on()) {
      ASSIGN_OR_RETURN(reference_, Event::Create(true, "reference"));
      GPU_RETURN_IF_ERROR(hipEventRecord(reference_.get(), upload_.get()), "hipEventRecord(reference)");
    }
    // Pinned input is fixed at start: enough for the largest frame the limits allow.
    const size_t max_input = PackedFrameSize(PixelFormat::kRgba, options_.max_width, options_.max_height);
    for (int i = 0; i < options_.slots; ++i) {
      Slot& s = slots_[i];
      s.index = i;
      ASSIGN_OR_RETURN(s.input, PinnedBuffer::Allocate(max_input, false, "slot " + std::to_string(i) + " input"));
      ASSIGN_OR_RETURN(s.band_bytes, PinnedBuffer::Allocate(kMaxBandsPerFrame * sizeof(uint32_t), true,
                                                            "slot " + std::to_string(i) + " band_bytes"));
      ASSIGN_OR_RETURN(s.source, DeviceBuffer::Allocate(max_input, "slot " + std::to_string(i) + " source"));
      pinned_bytes_ += s.input.size() + s.band_bytes.size();
    }
    // Size the rest for the largest frame too, in every subsampling (their bands round
    // to whole segments differently), so that no frame the limits allow grows a buffer.
    // Growing one frees and allocates pinned or device memory, which waits for the whole
    // device: a 4K frame that did so stalled the pipeline 15-20 ms.
    std::vector<uint8_t> probe_frame;
    const FrameView largest = LargestFrameShape(&probe_frame);
    uint64_t band_capacity = 0, out_capacity = 0;
    for (Subsampling sub : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
      EncodeParams worst;
      worst.subsampling = sub;
      ASSIGN_OR_RETURN(EncodePlan p,
                       MakeEncodePlan(largest, worst, BandRows(largest, worst), FirstBandRows(largest, worst)));
      band_capacity = std::max<uint64_t>(band_capacity, p.band_capacity);
      out_capacity = std::max<uint64_t>(out_capacity, p.band_capacity * p.num_bands);
      // Room for kLaunchScratchBands bands of it a launch frame: a 1080p ladder's one wave
      // (1080p, 720p and 360p: 2.3 bands) fits in one launch.
      for (EncodeLane& lane : lanes_) {
        RETURN_IF_ERROR(ReserveScratch(lane, ScratchSizes(p, kLaunchScratchBands * LaunchFrames())));
      }
    }
    const uint64_t band_buffer = options_.test_band_buffer_bytes > 0 ? options_.test_band_buffer_bytes : band_capacity;
    for (Slot& s : slots_) {
      ASSIGN_OR_RETURN(s.output, PinnedBuffer::Allocate(kReadbackBuffers * band_buffer, false, "slot output"));
      for (Event& e : s.copied) {
        ASSIGN_OR_RETURN(e, Event::Create(false, "copied"));
      }
      ASSIGN_OR_RETURN(s.out, DeviceBuffer::Allocate(out_capacity, "slot out"));
      pinned_bytes_ += s.output.size();
      device_bytes_ += s.source.size() + s.out.size();
    }
    slot_pinned_bytes_ = slots_[0].input.size() + slots_[0].band_bytes.size() + slots_[0].output.size();
    PinnedBuffer ring;  // none at size 0: a ring with no room, so every band takes the fallback
    if (options_.readback_ring_bytes > 0) {
      ASSIGN_OR_RETURN(ring, PinnedBuffer::Allocate(options_.readback_ring_bytes, false, "readback ring"));
      pinned_bytes_ += ring.size();
    }
    ring_ = std::make_shared<RingMemory>(std::move(ring));
    issue_thread_ = std::thread([this] { IssueLoop(); });
    const int per_lane = std::max(1, options_.delivery_threads_per_stream);
    for (size_t i = 0; i < lanes_.size(); ++i) {
      delivery_queues_.push_back(std::make_unique<FrameQueue<std::vector<int>>>());
    }
    for (size_t i = 0; i < lanes_.size(); ++i) {
      for (int k = 0; k < per_lane; ++k) {
        const int thread = static_cast<int>(i) * per_lane + k;
        delivery_threads_.emplace_back([this, i, thread] { DeliveryLoop(static_cast<int>(i), thread); });
      }
    }
    return OkStatus();
  }

  std::string Describe() const override { return "gpu " + std::to_string(device_) + ": " + name_; }

  Status Submit(FrameRequest request) override {
    RETURN_IF_ERROR(ValidateRequest(request, options_));
    if (dead_.load()) return Unavailable(Describe() + " is out of service: " + dead_reason_);
    const SteadyTime submitted = std::chrono::steady_clock::now();
    in_flight_.Enter();
    const int index = pool_.Acquire();
    Slot& s = slots_[index];
    s.status = OkStatus();
    s.request = std::move(request);
    s.submitted = submitted;
    const FrameView& f = s.request.frame;
    s.frame_bytes = PackedFrameSize(f.format, f.width, f.height);
    s.direct = ranges_->Holds(f);
    s.input_released = !s.direct;
    {
      std::lock_guard<std::mutex> lock(order_mu_);
      s.sequence = streams_[s.request.stream].submitted++;
    }
    if (!s.direct) {
      // Host copy into the slot's pinned input. The slot is free, so its last upload
      // has completed (the delivery thread observed ev_uploaded before releasing it).
      CopyToPackedLayout(f, s.input.get<uint8_t>());
      s.request.frame.plane[0] = s.request.frame.plane[1] = s.request.frame.plane[2] = nullptr;  // caller's
      s.request.owner.reset();
      if (s.request.on_input_released) s.request.on_input_released();
    }
    issue_queue_.Push(index);
    return OkStatus();
  }

  void Flush() override { in_flight_.WaitNone(); }

  StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void* data, size_t size) override {
    GPU_RETURN_IF_ERROR(hipSetDevice(device_), "hipSetDevice");
    ASSIGN_OR_RETURN(HostRegistration r, HostRegistration::Register(data, size, "caller frames"));
    return RegisteredRanges::Add(ranges_, data, size, std::make_shared<HostRegistration>(std::move(r)));
  }

  WorkerStats Stats() const override {
    WorkerStats st;
    st.frames_done = done_.load();
    st.frames_failed = failed_.load();
    st.restarts = restarts_.load();
    st.pinned_bytes = pinned_bytes_;
    st.device_bytes = device_bytes_.load();
    st.in_flight = in_flight_.Count();
    st.issue_busy_s = issue_busy_ns_.load() / 1e9;
    st.delivery_busy_s = delivery_busy_ns_.load() / 1e9;
    st.delivery_band_wait_s = band_wait_ns_.load() / 1e9;
    st.delivery_copy_wait_s = copy_wait_ns_.load() / 1e9;
    st.delivery_append_s = append_ns_.load() / 1e9;
    st.readback_ring_fallbacks = ring_fallbacks_.load();
    st.pinned_in_use_bytes = static_cast<uint64_t>(pool_.InUse()) * slot_pinned_bytes_;
    st.stalest_thread_s = heartbeats_.StalestSeconds();
    st.overlap_ratio = overlap_.Ratio();
    st.launch_groups = launch_groups_.load();
    st.launch_group_frames = launch_group_frames_.load();
    return st;
  }

 private:
  // Encode lanes: each is a stream with its own scratch, and consecutive frames take
  // turns (ChooseLane), so the small launches of two frames can share the SMs. One
  // upload and one readback stream serve both (DESIGN.md: two to four streams in all).
  struct EncodeLane {
    Stream stream;
    BandScratch scratch;
    DeviceBuffer scaled;  // the rendition being encoded, when it is scaled
  };

  // In-order hand-over, per stream (FrameRequest::stream): a frame whose slot is already
  // free, waiting for its turn.
  struct Finished {
    uint64_t stream = 0, sequence = 0;
    std::function<void(FrameResult&&)> on_done;
    FrameResult result;
  };

  struct Slot {
    int index = 0;
    bool direct = false;      // upload straight from the caller's registered memory
    bool input_released = false;
    PinnedBuffer input;       // the packed frame, source of the H2D copy
    PinnedBuffer band_bytes;  // mapped: each band's byte count, written by SegmentCodeKernel
    PinnedBuffer output;      // kReadbackBuffers band buffers, destinations of the D2H copies
    Event copied[kReadbackBuffers];  // recorded after the copy into each band buffer
    Event ring_copied;               // recorded after copies into the readback ring, to wait on
    DeviceBuffer source;      // the uploaded frame
    DeviceBuffer out;         // every band of every rendition, at fixed offsets
    Event uploaded;
    std::vector<Event> band_done;        // flattened over renditions
    // Timing events (created with stage timing on, recorded for timed frames only; the
    // events above never carry timing, which costs throughput):
    std::vector<Event> band_end;         // beside band_done
    std::vector<Event> band_copy_start;  // around band k's D2H
    std::vector<Event> band_copy_end;
    Event upload_start, upload_end, encode_start;

    FrameRequest request;
    SteadyTime submitted, started;
    size_t frame_bytes = 0;
    std::vector<EncodePlan> plans;
    std::vector<const EncodeTables*> tables;  // per rendition, on the device
    std::vector<size_t> out_offset;  // per rendition, into `out`
    std::vector<std::optional<ScalePlan>> scale_plans;  // per rendition; empty: source size
    std::vector<size_t> scaled_offset;  // per scaled rendition, into the frame's part of the lane's `scaled`
    size_t scaled_bytes = 0;  // every scaled rendition of the frame, end to end
    Status status;
    int lane = 0;           // the encode lane (and delivery thread) this frame uses
    int64_t lane_pixels = 0;  // its share of lane_pixels_[lane] until it is read back
    uint64_t timing_run = 0;  // the frame's run of timed frames; 0: not timed
    uint64_t sequence = 0;  // submission order within the request's stream, for in-order delivery
  };

  Status Check(const std::string& what, int slot, hipError_t err) {
    return GpuStatus(err, what + " (slot " + std::to_string(slot) + ")");
  }
  Status Injected(const std::string& what, int slot) {
    if (!options_.test_fault) return OkStatus();
    return options_.test_fault(what).WithContext(what + " (slot " + std::to_string(slot) + ")");
  }

  Status CreateStreams() {
    ASSIGN_OR_RETURN(upload_, Stream::Create(0, "upload"));
    lanes_.resize(std::max(1, options_.encode_streams));
    for (EncodeLane& lane : lanes_) {
      ASSIGN_OR_RETURN(lane.stream, Stream::Create(HighestStreamPriority(), "encode"));
    }
    ASSIGN_OR_RETURN(readback_, Stream::Create(0, "readback"));
    return OkStatus();
  }

  Status CreateEvents() {
    for (Slot& s : slots_) {
      ASSIGN_OR_RETURN(s.uploaded, Event::Create(false, "uploaded"));
      ASSIGN_OR_RETURN(s.ring_copied, Event::Create(false, "ring_copied"));
      if (options_.stage_timing.on()) {
        ASSIGN_OR_RETURN(s.upload_start, Event::Create(true, "upload_start"));
        ASSIGN_OR_RETURN(s.upload_end, Event::Create(true, "upload_end"));
        ASSIGN_OR_RETURN(s.encode_start, Event::Create(true, "encode_start"));
      }
    }
    return OkStatus();
  }

  // The run of timed frames a group issued now belongs to, or 0 (StageTiming): a run
  // takes the next run_frames frames and starts at most every `every`. Issue thread only.
  uint64_t TimingRunFor(int frames) {
    const StageTiming& t = options_.stage_timing;
    if (!t.on()) return 0;
    if (t.every.count() == 0) return 1;
    if (run_frames_left_ <= 0) {
      const SteadyTime now = std::chrono::steady_clock::now();
      if (timing_runs_ > 0 && now - run_started_ < t.every) return 0;
      ++timing_runs_;
      run_started_ = now;
      run_frames_left_ = t.run_frames;
    }
    run_frames_left_ -= frames;
    return timing_runs_;
  }

  // Device tables for one quality, uploaded once on the upload stream.
  StatusOr<const EncodeTables*> TablesFor(int quality, int slot) {
    auto it = tables_.find(quality);
    if (it != tables_.end()) return it->second.device.get<const EncodeTables>();
    TablesEntry e;
    ASSIGN_OR_RETURN(e.host, PinnedBuffer::Allocate(sizeof(EncodeTables), false, "tables"));
    ASSIGN_OR_RETURN(e.device, DeviceBuffer::Allocate(sizeof(EncodeTables), "tables"));
    BuildEncodeTables(quality, e.host.get<EncodeTables>());
    RETURN_IF_ERROR(Injected("hipMemcpyAsync(tables)", slot));
    RETURN_IF_ERROR(Check("hipMemcpyAsync(tables)", slot,
                          hipMemcpyAsync(e.device.get(), e.host.get(), sizeof(EncodeTables),
                                         hipMemcpyHostToDevice, upload_.get())));
    pinned_bytes_ += e.host.size();
    auto& entry = tables_[quality] = std::move(e);
    return entry.device.get<const EncodeTables>();
  }

  // Scratch shared by every slot, used only on the encode stream. Growing waits for that
  // stream first; it happens only when a frame needs more than any before it.
  Status ReserveScratch(EncodeLane& lane, const BandScratchSizes& bytes) {
    const uint64_t before = lane.scratch.bytes();
    RETURN_IF_ERROR(lane.scratch.Reserve(bytes, lane.stream.get(), [&lane] {
      return GpuStatus(hipStreamSynchronize(lane.stream.get()), "hipStreamSynchronize(encode) before growing scratch");
    }));
    device_bytes_ += lane.scratch.bytes() - before;
    return OkStatus();
  }

  // Bands of at most about kGpuBandBlocks blocks (kGpuLadderBandBlocks for the
  // renditions of a frame that has several), unless the options name the band rows.
  int BandRows(const FrameView& f, const EncodeParams& params, bool ladder = false) const {
    if (options_.band_rows > 0) return options_.band_rows;
    return EvenBandRows(f, params.subsampling, ladder ? kGpuLadderBandBlocks : kGpuBandBlocks);
  }

  // Pixel rows of band 0 when it is smaller than the others (first_band_blocks), else 0.
  int FirstBandRows(const FrameView& f, const EncodeParams& params, bool ladder = false) const {
    if (options_.first_band_blocks <= 0 || options_.band_rows > 0) return 0;
    return SmallFirstBandRows(f, params.subsampling, BandRows(f, params, ladder), options_.first_band_blocks);
  }

  // The scaled frame renditions are encoded from; grows like the band scratch.
  Status ReserveScaled(EncodeLane& lane, size_t bytes) {
    if (lane.scaled.get() != nullptr && lane.scaled.size() >= bytes) return OkStatus();
    if (lane.scaled.get() != nullptr) {
      GPU_RETURN_IF_ERROR(hipStreamSynchronize(lane.stream.get()), "hipStreamSynchronize(encode) before growing scaled");
    }
    device_bytes_ += bytes - lane.scaled.size();
    return lane.scaled.Reserve(bytes, "scaled");
  }

  std::vector<Stream*> AllStreams() {
    std::vector<Stream*> all = {&upload_, &readback_};
    for (EncodeLane& lane : lanes_) all.push_back(&lane.stream);
    return all;
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

  // Whether two frames can share launches: the same plans, so the same size, format,
  // colour signalling and renditions.
  static bool SameShape(const FrameRequest& a, const FrameRequest& b) {
    const FrameView &x = a.frame, &y = b.frame;
    if (x.width != y.width || x.height != y.height || x.format != y.format || x.matrix != y.matrix ||
        x.EffectiveRange() != y.EffectiveRange() || a.renditions.size() != b.renditions.size()) {
      return false;
    }
    for (size_t i = 0; i < a.renditions.size(); ++i) {
      const EncodeParams &p = a.renditions[i].params, &q = b.renditions[i].params;
      if (RenditionWidth(a, i) != RenditionWidth(b, i) || RenditionHeight(a, i) != RenditionHeight(b, i) ||
          p.quality != q.quality || p.subsampling != q.subsampling || p.restart_interval != q.restart_interval) {
        return false;
      }
    }
    return true;
  }

  // The plans of a frame's renditions, and the buffers and events its slot needs.
  Status Plan(Slot& s) {
    const FrameView& f = s.request.frame;
    s.plans.clear();
    s.out_offset.clear();
    s.scale_plans.assign(s.request.renditions.size(), std::nullopt);
    s.scaled_offset.assign(s.request.renditions.size(), 0);
    s.scaled_bytes = 0;
    size_t out_total = 0, bands_total = 0;
    for (size_t i = 0; i < s.request.renditions.size(); ++i) {
      const Rendition& r = s.request.renditions[i];
      FrameView shape = f;  // the frame this rendition encodes, as a shape: plane pointers are not read
      if (RenditionIsScaled(s.request, i)) {
        ASSIGN_OR_RETURN(ScalePlan sp, MakeScalePlan(f.format, f.width, f.height, RenditionWidth(s.request, i),
                                                     RenditionHeight(s.request, i)));
        shape.width = sp.dst_width;
        shape.height = sp.dst_height;
        s.scaled_offset[i] = s.scaled_bytes;
        s.scaled_bytes += (sp.dst_size + 255) / 256 * 256;  // each rendition's planes aligned as an allocation's
        s.scale_plans[i] = sp;
      }
      const PlaneGeometry g = PackedPlaneGeometry(f.format, shape.width, shape.height);
      for (int p = 0; p < 3; ++p) {
        shape.plane[p] = s.input.get<uint8_t>();
        shape.stride[p] = g.row_bytes[p];
      }
      const bool ladder = s.request.renditions.size() > 1;
      ASSIGN_OR_RETURN(EncodePlan plan, MakeEncodePlan(shape, r.params, BandRows(shape, r.params, ladder),
                                                       FirstBandRows(shape, r.params, ladder)));
      s.out_offset.push_back(out_total);
      out_total += plan.band_capacity * plan.num_bands;
      bands_total += plan.num_bands;
      s.plans.push_back(plan);
    }
    if (bands_total > kMaxBandsPerFrame) return InvalidArgument("too many bands in one frame");
    // Tables first: a quality's first use queues their copy on the upload stream, and it
    // must come before this frame's upload, whose event is all the encode stream waits for.
    s.tables.clear();
    for (const Rendition& r : s.request.renditions) {
      ASSIGN_OR_RETURN(const EncodeTables* t, TablesFor(r.params.quality, s.index));
      s.tables.push_back(t);
    }

    // Slot buffers: the slot is ours, nothing in flight uses them. The pinned band
    // buffers keep their size from the start: a larger band is read back through them
    // in pieces.
    if (s.out.size() < out_total) device_bytes_ += out_total - s.out.size();
    RETURN_IF_ERROR(s.out.Reserve(out_total, "slot out"));
    while (s.band_done.size() < bands_total) {
      ASSIGN_OR_RETURN(Event e, Event::Create(false, "band_done"));
      s.band_done.push_back(std::move(e));
      if (options_.stage_timing.on()) {
        ASSIGN_OR_RETURN(Event b, Event::Create(true, "band_end"));
        s.band_end.push_back(std::move(b));
        ASSIGN_OR_RETURN(Event c, Event::Create(true, "band_copy_start"));
        s.band_copy_start.push_back(std::move(c));
        ASSIGN_OR_RETURN(Event d, Event::Create(true, "band_copy_end"));
        s.band_copy_end.push_back(std::move(d));
      }
    }
    return OkStatus();
  }

  Status Upload(Slot& s) {
    if (s.timing_run) (void)hipEventRecord(s.upload_start.get(), upload_.get());
    RETURN_IF_ERROR(Injected("hipMemcpyAsync(upload)", s.index));
    RETURN_IF_ERROR(Check("hipMemcpyAsync(upload)", s.index,
                          hipMemcpyAsync(s.source.get(), s.direct ? s.request.frame.plane[0] : s.input.get<uint8_t>(),
                                         s.frame_bytes, hipMemcpyHostToDevice, upload_.get())));
    if (s.timing_run) (void)hipEventRecord(s.upload_end.get(), upload_.get());
    return Check("hipEventRecord(uploaded)", s.index, hipEventRecord(s.uploaded.get(), upload_.get()));
  }

  static std::string SlotNames(const std::vector<Slot*>& group) {
    std::string names = group.size() == 1 ? "slot " : "slots ";
    for (size_t i = 0; i < group.size(); ++i) names += (i ? "," : "") + std::to_string(group[i]->index);
    return names;
  }

  // Everything the GPU does for a group of same-shape frames, queued without waiting.
  // A frame whose planning or upload fails gets its own status and leaves the group;
  // a failed launch fails every frame still in it (they shared it).
  void Issue(std::vector<Slot*> group) {
    std::vector<Slot*> live;
    for (Slot* s : group) {
      s->status = Plan(*s);
      if (s->status.ok()) s->status = Upload(*s);
      if (s->status.ok()) live.push_back(s);
    }
    if (live.empty()) return;
    const Status launched = Launch(live);
    if (!launched.ok()) {
      for (Slot* s : live) s->status = launched;
    }
  }

  // Encodes a group's renditions in waves of launches. Wave w carries, for every frame,
  // band w - (waves - bands) of each rendition that has it: renditions end with the
  // largest one's last band, so its first bands go out alone (the soonest first byte) and
  // the small renditions share the last launch instead of adding launches of their own.
  // A coding launch costs about 20 us of critical path however little it holds
  // (BENCHMARKS.md), so launches, not work, set the ladder's pace.
  Status Launch(const std::vector<Slot*>& group) {
    Slot& first = *group.front();
    const int frames = static_cast<int>(group.size());
    const int renditions = static_cast<int>(first.plans.size());
    EncodeLane& lane = lanes_[first.lane];
    if (first.scaled_bytes > 0) RETURN_IF_ERROR(ReserveScaled(lane, first.scaled_bytes * frames));
    for (Slot* s : group) {
      RETURN_IF_ERROR(Check("hipStreamWaitEvent(encode, uploaded)", s->index,
                            hipStreamWaitEvent(lane.stream.get(), s->uploaded.get(), 0)));
      if (s->timing_run) (void)hipEventRecord(s->encode_start.get(), lane.stream.get());
    }
    std::vector<int> flat_base(renditions);  // rendition r's band k is band_done[flat_base[r] + k]
    int waves = 0;
    for (int r = 0, flat = 0; r < renditions; ++r) {
      flat_base[r] = flat;
      flat += first.plans[r].num_bands;
      waves = std::max(waves, first.plans[r].num_bands);
    }
    // The frame rendition r of frame i is encoded from: the upload, or its scaled copy in
    // the lane's buffer (queued before the rendition's first wave; encode-stream work).
    std::vector<SourcePlanes> source(static_cast<size_t>(renditions) * frames);
    struct Pending {
      int rendition, frame, band;
    };
    for (int wave = 0; wave < waves; ++wave) {
      std::vector<Pending> pending;
      std::vector<ScaleJob> scales;  // the renditions that start in this wave, scaled in one go
      for (int r = 0; r < renditions; ++r) {
        const int band = wave - (waves - first.plans[r].num_bands);
        if (band < 0) continue;
        for (int i = 0; i < frames; ++i) {
          if (band == 0) source[r * frames + i] = SourceOf(*group[i], r, i, lane, &scales);
          pending.push_back({r, i, band});
        }
      }
      if (!scales.empty()) {
        Status scaled = Injected("launch scale", first.index);
        if (scaled.ok()) scaled = EnqueueScales(scales.data(), static_cast<int>(scales.size()), lane.stream.get());
        if (!scaled.ok()) return scaled.WithContext(SlotNames(group));
      }
      for (size_t next = 0; next < pending.size();) {
        BandLaunch launch{};
        BandScratchSizes need{};  // the launch's scratch so far
        std::vector<int> launch_plan(renditions, -1);
        const size_t begin = next;
        for (; next < pending.size(); ++next) {
          const Pending& item = pending[next];
          const int r = item.rendition;
          const EncodePlan& p = first.plans[r];
          if (launch.items == kMaxLaunchItems || (launch_plan[r] < 0 && launch.plans == kMaxLaunchPlans)) break;
          // Items join while the lane's scratch holds them all; a lone item grows it.
          const BandScratchSizes more = need + ScratchSizes(p, 1);
          if (launch.items > 0 && !lane.scratch.Holds(more)) break;
          need = more;
          if (launch_plan[r] < 0) {
            launch_plan[r] = launch.plans;
            launch.plan[launch.plans] = p;
            launch.tables[launch.plans++] = first.tables[r];
          }
          const Slot& s = *group[item.frame];
          BandItem& b = launch.item[launch.items++];
          b.io.source = source[r * frames + item.frame];
          b.io.band_out = s.out.get<uint8_t>() + s.out_offset[r] + item.band * p.band_capacity;
          b.io.band_bytes = s.band_bytes.device_get<uint32_t>() + flat_base[r] + item.band;
          b.plan = launch_plan[r];
          b.band = item.band;
        }
        RETURN_IF_ERROR(ReserveScratch(lane, need));
        Status launched = Injected("launch band stages", first.index);
        if (launched.ok()) launched = EnqueueBandStages(launch, lane.scratch.buffers(), lane.stream.get());
        if (!launched.ok()) return launched.WithContext(SlotNames(group));  // names built only on failure
        for (size_t k = begin; k < next; ++k) {
          Slot& s = *group[pending[k].frame];
          const int flat = flat_base[pending[k].rendition] + pending[k].band;
          // The timing event first, so that band k's copy, which waits for band_done, never
          // appears to start before the band ended.
          if (s.timing_run) (void)hipEventRecord(s.band_end[flat].get(), lane.stream.get());
          RETURN_IF_ERROR(Check("hipEventRecord(band_done)", s.index,
                                hipEventRecord(s.band_done[flat].get(), lane.stream.get())));
        }
      }
    }
    return OkStatus();
  }

  // The device frame rendition r of frame `s` (the i-th of its launch group) is encoded
  // from: the upload itself, or a scaled copy in the lane's buffer, whose scale is added
  // to `scales`.
  SourcePlanes SourceOf(Slot& s, int r, int i, EncodeLane& lane, std::vector<ScaleJob>* scales) {
    const FrameView& f = s.request.frame;
    const EncodePlan& p = s.plans[r];
    const uint8_t* frame = s.source.get<uint8_t>();
    if (s.scale_plans[r]) {
      uint8_t* scaled = lane.scaled.get<uint8_t>() + i * s.scaled_bytes + s.scaled_offset[r];
      scales->push_back({&*s.scale_plans[r], PackedSourcePlanes(frame, f.format, f.width, f.height), scaled});
      frame = scaled;
    }
    return PackedSourcePlanes(frame, f.format, p.width, p.height);
  }

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
      std::vector<Slot*> group = {&slots_[*head]};
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
      for (Slot* s : group) pixels += s->lane_pixels = FramePixels(s->request);
      const int lane = ChooseLane(pixels);
      next_lane_ = (lane + 1) % static_cast<int>(lanes_.size());
      lane_pixels_[lane] += pixels;
      const uint64_t timing_run = TimingRunFor(static_cast<int>(group.size()));
      std::vector<int> indices;
      for (Slot* s : group) {
        s->started = started;
        s->lane = lane;
        s->timing_run = timing_run;
        indices.push_back(s->index);
      }
      {
        std::shared_lock<std::shared_mutex> lock(recover_mu_);  // Recover() swaps the streams
        if (dead_.load()) {
          for (Slot* s : group) s->status = Unavailable(Describe() + " is out of service: " + dead_reason_);
        } else {
          Issue(group);
        }
      }
      launch_groups_.fetch_add(1);
      launch_group_frames_.fetch_add(group.size());
      issue_busy_ns_ += Nanoseconds(started, std::chrono::steady_clock::now());
      delivery_queues_[lane]->Push(std::move(indices));
    }
  }

  // Pixels a frame's renditions encode: the load it puts on its encode lane.
  static int64_t FramePixels(const FrameRequest& r) {
    int64_t pixels = 0;
    for (size_t i = 0; i < r.renditions.size(); ++i) {
      pixels += static_cast<int64_t>(RenditionWidth(r, i)) * RenditionHeight(r, i);
    }
    return pixels;
  }

  // The next lane in turn, unless it holds more pixels not yet read back than the least
  // loaded lane plus this group's (balance_encode_streams). Frames of one size still
  // alternate; a light frame behind a heavy one takes the other lane instead of waiting
  // for the heavy frame's whole encode (BENCHMARKS.md, session 10: position 2 behind
  // each 4K frame waited 254 us for it).
  int ChooseLane(int64_t pixels) const {
    const int turn = next_lane_;
    if (!options_.balance_encode_streams) return turn;
    int least = turn;
    for (int l = 0; l < static_cast<int>(lanes_.size()); ++l) {
      if (lane_pixels_[l].load() < lane_pixels_[least].load()) least = l;
    }
    return lane_pixels_[turn].load() > lane_pixels_[least].load() + pixels ? least : turn;
  }

  // Reads a group's frames back band by band, band k of every frame before band k+1 of
  // any, into `results` (one per frame of the group).
  Status Deliver(const std::vector<Slot*>& group, const std::vector<FrameResult*>& results) {
    for (Slot* s : group) {
      RETURN_IF_ERROR(Check("hipEventSynchronize(uploaded)", s->index, hipEventSynchronize(s->uploaded.get())));
      // The upload has completed: the input, pinned slot or caller memory, may be
      // written again from here on.
      if (s->direct) {
        ReleaseInput(*s);
      } else if (options_.test_on_input_free) {
        options_.test_on_input_free(s->index, s->input.get<uint8_t>(), s->frame_bytes);
      }
    }
    const std::vector<EncodePlan>& plans = group.front()->plans;  // the group's frames share them
    int bands_total = 0;
    for (const EncodePlan& p : plans) bands_total += p.num_bands;
    if (!options_.progress_events) {
      // The seed's pattern: readback only after the whole frame is encoded.
      for (Slot* s : group) {
        RETURN_IF_ERROR(Check("hipEventSynchronize(frame encoded)", s->index,
                              hipEventSynchronize(s->band_done[bands_total - 1].get())));
      }
    }
    // A band is copied into the readback ring when it has room: the result then lends
    // those bytes to the caller, and no host copy follows. When the ring is full (callers
    // hold many results), the frame's remaining bands take the fallback path: the slot's
    // two band buffers, in turn, each read into the result, and reused, only after its
    // copy's event has completed; a band larger than a buffer (a ladder's) goes through
    // them in pieces. A frame never goes back to the ring, so its pieces stay in
    // order. Copies stay in flight across renditions: waiting for each rendition's last
    // copy before queuing the next rendition's first serialised a ladder frame's copies
    // (73 us a frame of waiting on the H200, against 29 us for one rendition).
    struct InFlight {
      int buffer;
      uint32_t bytes;
      size_t rendition;
      bool last_band;  // the rendition's JPEG is complete once this piece is appended
    };
    std::vector<int> next_buffer(group.size(), 0);  // the fallback's buffers are taken in turn
    std::vector<std::deque<InFlight>> in_flight(group.size());
    std::vector<std::shared_ptr<RingLease>> leases(group.size());
    std::vector<bool> fallback(group.size(), false);
    std::vector<bool> ring_unsynced(group.size(), false);  // ring copies queued since the last wait
    auto append_oldest = [&](size_t i) -> Status {
      Slot& s = *group[i];
      const InFlight c = in_flight[i].front();
      in_flight[i].pop_front();
      const SteadyTime wait_start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(Check("hipEventSynchronize(copied)", s.index, hipEventSynchronize(s.copied[c.buffer].get())));
      const SteadyTime copied = std::chrono::steady_clock::now();
      ring_unsynced[i] = false;  // the ring's copies of the frame were queued before this one
      FrameResult& result = *results[i];
      if (result.times.first_byte == SteadyTime{}) result.times.first_byte = copied;
      JpegBytes& jpeg = result.jpeg[c.rendition];
      jpeg.AppendCopy(s.output.get<uint8_t>() + c.buffer * (s.output.size() / kReadbackBuffers), c.bytes);
      if (c.last_band) AppendTrailer(&jpeg);
      copy_wait_ns_ += Nanoseconds(wait_start, copied);
      append_ns_ += Nanoseconds(copied, std::chrono::steady_clock::now());
      return OkStatus();
    };
    // Waits for the frame's ring copies queued so far (and the fallback ones before them).
    auto sync_ring = [&](size_t i) -> Status {
      Slot& s = *group[i];
      const SteadyTime wait_start = std::chrono::steady_clock::now();
      RETURN_IF_ERROR(Check("hipEventRecord(ring copied)", s.index, hipEventRecord(s.ring_copied.get(), readback_.get())));
      RETURN_IF_ERROR(Check("hipEventSynchronize(ring copied)", s.index, hipEventSynchronize(s.ring_copied.get())));
      const SteadyTime copied = std::chrono::steady_clock::now();
      ring_unsynced[i] = false;
      if (results[i]->times.first_byte == SteadyTime{}) results[i]->times.first_byte = copied;
      copy_wait_ns_ += Nanoseconds(wait_start, copied);
      return OkStatus();
    };
    int flat = 0;
    for (size_t r = 0; r < plans.size(); ++r) {
      const EncodePlan& p = plans[r];
      std::vector<uint8_t> header;
      AppendJfifHeader(p, &header);
      for (FrameResult* result : results) result->jpeg[r].AppendCopy(header.data(), header.size());
      for (int band = 0; band < p.num_bands; ++band, ++flat) {
        for (size_t i = 0; i < group.size(); ++i) {
          Slot& s = *group[i];
          Event& done = s.band_done[flat];
          const SteadyTime wait_start = std::chrono::steady_clock::now();
          RETURN_IF_ERROR(Check("hipEventSynchronize(band_done " + std::to_string(band) + ")", s.index,
                                hipEventSynchronize(done.get())));
          band_wait_ns_ += Nanoseconds(wait_start, std::chrono::steady_clock::now());
          const volatile uint32_t* counts = s.band_bytes.get<uint32_t>();  // mapped
          const uint32_t n = counts[flat];
          if (n > p.band_capacity) {
            return Internal("band " + std::to_string(band) + " overflowed its buffer (slot " +
                            std::to_string(s.index) + ")");
          }
          std::optional<size_t> at;
          const bool was_fallback = fallback[i];
          if (!fallback[i]) {
            at = ring_->ring.Allocate(n);
            if (at) {
              if (!leases[i]) leases[i] = std::make_shared<RingLease>(ring_);
              leases[i]->offsets.push_back(*at);
            } else {
              fallback[i] = true;
              ring_fallbacks_.fetch_add(1);
            }
          }
          if (!at && (band == 0 || !was_fallback)) {
            // The rest of the rendition is copied into the result: room for it at once,
            // guessed from this band with a quarter to spare (growing band by band copied
            // a 4K frame's bytes twice over).
            results[i]->jpeg[r].ReserveOwned(static_cast<size_t>(n) * (p.num_bands - band) * 5 / 4 + 2);
          }
          const uint8_t* band_out = s.out.get<uint8_t>() + s.out_offset[r] + band * p.band_capacity;
          RETURN_IF_ERROR(Check("hipStreamWaitEvent(readback, band_done)", s.index,
                                hipStreamWaitEvent(readback_.get(), done.get(), 0)));
          if (s.timing_run) (void)hipEventRecord(s.band_copy_start[flat].get(), readback_.get());
          if (at) {
            uint8_t* dst = ring_->buffer.get<uint8_t>() + *at;
            RETURN_IF_ERROR(Injected("hipMemcpyAsync(readback)", s.index));
            RETURN_IF_ERROR(Check("hipMemcpyAsync(readback)", s.index,
                                  hipMemcpyAsync(dst, band_out, n, hipMemcpyDeviceToHost, readback_.get())));
            if (s.timing_run) (void)hipEventRecord(s.band_copy_end[flat].get(), readback_.get());
            JpegBytes& jpeg = results[i]->jpeg[r];
            jpeg.AppendLent(dst, n, leases[i]);
            if (band == p.num_bands - 1) AppendTrailer(&jpeg);
            ring_unsynced[i] = true;
            // The frame's first bytes: waited for now, while its next band encodes.
            if (results[i]->times.first_byte == SteadyTime{}) RETURN_IF_ERROR(sync_ring(i));
            continue;
          }
          const uint32_t piece = static_cast<uint32_t>(s.output.size() / kReadbackBuffers);
          uint32_t copied = 0;
          do {
            if (in_flight[i].size() == kReadbackBuffers) RETURN_IF_ERROR(append_oldest(i));
            const int buffer = next_buffer[i];
            next_buffer[i] = (buffer + 1) % kReadbackBuffers;
            const uint32_t bytes = std::min(piece, n - copied);
            RETURN_IF_ERROR(Injected("hipMemcpyAsync(readback)", s.index));
            RETURN_IF_ERROR(Check("hipMemcpyAsync(readback)", s.index,
                                  hipMemcpyAsync(s.output.get<uint8_t>() + buffer * piece, band_out + copied, bytes,
                                                 hipMemcpyDeviceToHost, readback_.get())));
            RETURN_IF_ERROR(Check("hipEventRecord(copied)", s.index,
                                  hipEventRecord(s.copied[buffer].get(), readback_.get())));
            copied += bytes;
            in_flight[i].push_back({buffer, bytes, r, band == p.num_bands - 1 && copied == n});
          } while (copied < n);
          if (s.timing_run) (void)hipEventRecord(s.band_copy_end[flat].get(), readback_.get());
        }
      }
    }
    for (size_t i = 0; i < group.size(); ++i) {
      while (!in_flight[i].empty()) RETURN_IF_ERROR(append_oldest(i));
      if (ring_unsynced[i]) RETURN_IF_ERROR(sync_ring(i));
    }
    for (size_t i = 0; i < group.size(); ++i) {
      Slot& s = *group[i];
      if (s.timing_run) {
        FrameTimes& t = results[i]->times;
        t.timing_run = s.timing_run;
        t.upload = {SinceStart(s.upload_start), SinceStart(s.upload_end)};
        t.encode = {SinceStart(s.encode_start), SinceStart(s.band_end[bands_total - 1])};
        for (int k = 0; k < bands_total; ++k) {
          t.band_done.push_back(SinceStart(s.band_end[k]));
          t.band_readback.push_back({SinceStart(s.band_copy_start[k]), SinceStart(s.band_copy_end[k])});
        }
      }
    }
    return OkStatus();
  }

  // Tells the caller its registered memory is no longer read (once per frame).
  static void ReleaseInput(Slot& s) {
    if (s.input_released) return;
    s.input_released = true;
    if (s.request.on_input_released) s.request.on_input_released();
    s.request.owner.reset();
  }

  // Seconds from the worker's reference event to a completed timing event.
  double SinceStart(const Event& e) {
    float ms = 0;
    return hipEventElapsedTime(&ms, reference_.get(), e.get()) == hipSuccess ? ms / 1e3 : 0;
  }

  // After a failed frame: let queued work drain, then re-create the streams so the next
  // frame starts clean. Events stay: frames queued after the failed one still wait on
  // theirs. If the context itself is broken, stop taking frames (the engine then moves
  // sessions to another worker).
  void Recover(const Status& cause) {
    for (Stream* st : AllStreams()) (void)hipStreamSynchronize(st->get());
    (void)hipGetLastError();  // clear a non-sticky error
    Status s = CreateStreams();
    if (s.ok()) s = GpuStatus(hipStreamSynchronize(lanes_[0].stream.get()), "hipStreamSynchronize after re-create");
    restarts_.fetch_add(1);
    if (!s.ok()) {
      dead_reason_ = s.ToString() + " (after: " + cause.ToString() + ")";
      dead_.store(true);
    }
  }

  void DeliveryLoop(int lane, int thread) {
    (void)hipSetDevice(device_);  // once, for this thread
    while (auto indices = delivery_queues_[lane]->PopTicking([this, thread] { heartbeats_.Beat(1 + thread); },
                                                              kHeartbeatPeriod)) {
      std::vector<Slot*> group, live;
      std::vector<FrameResult> results(indices->size());
      std::vector<FrameResult*> live_results;
      for (size_t i = 0; i < indices->size(); ++i) {
        Slot& s = slots_[(*indices)[i]];
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
        const Status status = Deliver(live, live_results);
        if (!status.ok()) {
          for (FrameResult* r : live_results) r->status = status;
        }
      }
      const SteadyTime done = std::chrono::steady_clock::now();
      delivery_busy_ns_ += Nanoseconds(deliver_start, done);
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
        Slot& s = *group[i];
        ReleaseInput(s);
        Finished f{s.request.stream, s.sequence, std::move(s.request.on_done), std::move(results[i])};
        // The slot is free: its upload, kernels and copies have completed (or Recover()
        // waited for them), and the result holds its bytes (lent from the ring or
        // copied). Frames behind it enter the pipeline while this one waits its turn.
        lane_pixels_[s.lane] -= s.lane_pixels;
        pool_.Release(s.index);
        HandOver(std::move(f));
      }
    }
  }

  // Gives finished frames to their callers in submission order within each stream: a
  // frame waits only for the earlier frames of its own stream, so a slow frame of one
  // session does not hold back another session's. Whichever delivery thread completes
  // a frame hands over every frame that became ready; only one thread hands over at a
  // time, so on_done calls never overlap.
  void HandOver(Finished&& frame) {
    {
      std::lock_guard<std::mutex> lock(order_mu_);
      auto it = streams_.find(frame.stream);
      StreamOrder& o = it->second;
      o.finished.emplace(frame.sequence, std::move(frame));
      for (auto f = o.finished.begin(); f != o.finished.end() && f->first == o.next; f = o.finished.erase(f)) {
        ready_.push_back(std::move(f->second));
        ++o.next;
      }
      if (o.next == o.submitted) streams_.erase(it);  // nothing of it in flight: forget it
      if (handing_over_) return;
      handing_over_ = true;
    }
    for (;;) {
      Finished next;
      {
        std::lock_guard<std::mutex> lock(order_mu_);
        if (ready_.empty()) {
          handing_over_ = false;
          return;
        }
        next = std::move(ready_.front());
        ready_.pop_front();
      }
      FrameResult& result = next.result;
      (result.status.ok() ? done_ : failed_).fetch_add(1);
      if (result.status.ok()) overlap_.Add(result.times);  // timed frames only
      result.times.handed_over = std::chrono::steady_clock::now();
      next.on_done(std::move(result));
      in_flight_.Leave();
    }
  }

  struct TablesEntry {
    PinnedBuffer host;
    DeviceBuffer device;
  };

  const int device_;
  const WorkerOptions options_;
  const std::string name_;
  Stream upload_, readback_;
  std::vector<EncodeLane> lanes_;
  int next_lane_ = 0;  // issue thread only
  // Runs of timed frames (TimingRunFor), issue thread only.
  uint64_t timing_runs_ = 0;
  int run_frames_left_ = 0;
  SteadyTime run_started_;
  Event reference_;  // stage timing: time zero of FrameTimes' GPU intervals
  SlotPool pool_;
  InFlightLimit in_flight_;  // frames from Submit() to hand-over
  std::vector<Slot> slots_;
  // Per lane: pixels of the frames issued to it and not yet read back (ChooseLane);
  // value-initialised to zero.
  std::unique_ptr<std::atomic<int64_t>[]> lane_pixels_;
  std::map<int, TablesEntry> tables_;  // issue thread only

  FrameQueue<int> issue_queue_;
  std::vector<std::unique_ptr<FrameQueue<std::vector<int>>>> delivery_queues_;  // groups, one queue per lane
  std::thread issue_thread_;
  std::vector<std::thread> delivery_threads_;
  // Issue and delivery use the streams shared; Recover() swaps them exclusively.
  std::shared_mutex recover_mu_;
  // In-order hand-over, per stream (FrameRequest::stream).
  struct StreamOrder {
    uint64_t submitted = 0;  // sequence numbers given out
    uint64_t next = 0;       // the next to hand over
    std::map<uint64_t, Finished> finished;  // waiting for earlier ones
  };
  std::mutex order_mu_;
  std::unordered_map<uint64_t, StreamOrder> streams_;
  std::deque<Finished> ready_;  // in order, to hand over
  bool handing_over_ = false;
  std::shared_ptr<RegisteredRanges> ranges_ = std::make_shared<RegisteredRanges>();
  std::atomic<bool> dead_{false};
  std::string dead_reason_;
  std::atomic<uint64_t> done_{0}, failed_{0}, restarts_{0}, device_bytes_{0};
  std::atomic<uint64_t> pinned_bytes_{0};  // grows on the issue thread, read by Stats()
  std::atomic<int64_t> issue_busy_ns_{0}, delivery_busy_ns_{0};
  std::atomic<int64_t> band_wait_ns_{0}, copy_wait_ns_{0}, append_ns_{0};  // parts of delivery_busy_ns_
  std::shared_ptr<RingMemory> ring_;
  std::atomic<uint64_t> ring_fallbacks_{0};  // frames that found the ring full
  std::atomic<uint64_t> launch_groups_{0}, launch_group_frames_{0};
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
  auto worker = std::make_unique<GpuWorker>(device, options, probe.devices[device].name);
  RETURN_IF_ERROR(worker->Init());
  return std::unique_ptr<Worker>(std::move(worker));
}

}  // namespace conveyor

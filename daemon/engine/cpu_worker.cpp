// The CPU worker: the encoder's host path behind the same interface as the GPU worker.
// Frames take one of a bounded ring of host slots (backpressure). A frame is read where
// it is when its request owns its memory (a decoded AVFrame) or it lies in registered
// memory, and copied into the slot otherwise. Frames are encoded one at a time, each
// frame's bands spread over the thread pool, and handed over (on_done: the gRPC messages
// or the muxer) by a delivery thread, so that the next frame's encode never waits for
// it. The price is a thread's wake-up a frame (the Summary's handover stage); handing
// frames over on the encode thread when none waits saves it but shows no gain.
#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "cpu_encoder.h"
#include "deinterlace_cpu.h"
#include "frame_queue.h"
#include "heartbeat.h"
#include "orient_cpu.h"
#include "registered_ranges.h"
#include "scale_cpu.h"
#include "slot_pool.h"
#include "tile_plan.h"
#include "worker.h"

namespace conveyor {
namespace {

// Pixel rows per band when the options name none: 32 gives a 1080p frame 34 bands to
// share out over the pool's threads (the encoder's default of 128 rows gives it 9), so
// that the threads finish a frame close together. The bytes do not depend on it.
constexpr int kCpuBandRows = 32;

class CpuWorker : public Worker {
 public:
  explicit CpuWorker(const WorkerOptions& options)
      : options_(options), encoder_(options.cpu_threads), pool_(options.slots), slots_(options.slots) {
    thread_ = std::thread([this] { Run(); });
    delivery_thread_ = std::thread([this] { Deliver(); });
  }

  ~CpuWorker() override {
    queue_.Close();
    thread_.join();  // closes deliveries_ once it has handed its last frame on
    delivery_thread_.join();
  }

  std::string Describe() const override {
    return "cpu (" + std::to_string(encoder_.threads()) + " threads)";
  }
  WorkerInfo Info() const override { return WorkerInfo{}; }

  Status Submit(FrameRequest request) override {
    if (request.device.enabled) return InvalidArgument("device input: the cpu worker reads host memory only");
    RETURN_IF_ERROR(ValidateRequest(request, options_));
    const SteadyTime submitted = std::chrono::steady_clock::now();
    const int slot = pool_.Acquire();
    Slot& s = slots_[slot];
    const FrameView& f = request.frame;
    const bool neighbours = request.deinterlace.enabled;
    s.in_place = request.owner != nullptr || (ranges_->Holds(f) && !neighbours);
    if (s.in_place) {
      s.view = f;  // released after its encode (Run): no 3.1 MB copy a 1080p frame
      s.prev = request.deinterlace.prev;
      s.next = request.deinterlace.next;
    } else {
      // The frame, and for deinterlacing the frames before and after it, packed in turn.
      const size_t bytes = PackedFrameSize(f.format, f.width, f.height);
      const FrameView* parts[3] = {&f, &request.deinterlace.prev, &request.deinterlace.next};
      FrameView* views[3] = {&s.view, &s.prev, &s.next};
      s.bytes.resize(bytes * (neighbours ? 3 : 1));
      for (int k = 0; k < (neighbours ? 3 : 1); ++k) {
        CopyToPackedLayout(*parts[k], s.bytes.data() + k * bytes);
        *views[k] = MakePackedFrameView(s.bytes.data() + k * bytes, bytes, f.width, f.height, f.format, f.matrix,
                                        f.range).value();
      }
    }
    s.request = std::move(request);
    s.submitted = submitted;
    if (!s.in_place && s.request.on_input_released) s.request.on_input_released();
    in_flight_.fetch_add(1);
    queue_.Push(slot);
    return OkStatus();
  }

  void Flush() override { pool_.WaitAllFree(); }

  // Packed frames inside [data, data + size) are encoded where they are, not copied, as
  // are frames with an owner: a 1080p yuv420p frame's copy is 3.1 MB, about 0.4 ms on
  // the 2-core development machine.
  StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void* data, size_t size) override {
    return RegisteredRanges::Add(ranges_, data, size);
  }

  StatusOr<std::shared_ptr<Sprite>> NewSprite(PixelFormat format, int width, int height, ColorMatrix matrix,
                                              ColorRange range) override {
    RETURN_IF_ERROR(ValidateSpriteSize(width, height, options_));
    return std::shared_ptr<Sprite>(std::make_shared<HostSprite>(format, width, height, matrix, range));
  }

  WorkerStats Stats() const override {
    WorkerStats st;
    st.frames_done = done_.load();
    st.frames_failed = failed_.load();
    st.in_flight = in_flight_.load();
    st.stalest_thread_s = heartbeats_.StalestSeconds();
    return st;
  }

 private:
  struct Slot {
    bool in_place = false;  // the view is the caller's memory (registered or owned), not `bytes`
    std::vector<uint8_t> bytes;
    FrameView view;
    FrameView prev, next;  // deinterlacing: the frames before and after `view`
    FrameRequest request;
    SteadyTime submitted;
    FrameResult result;  // from the encode thread to the delivery thread
  };

  // A sprite in host memory; the encode thread is the only one that writes it.
  class HostSprite : public Sprite {
   public:
    HostSprite(PixelFormat format, int width, int height, ColorMatrix matrix, ColorRange range)
        : bytes_(PackedFrameSize(format, width, height)) {
      FillBlack(BlackFill(format, range, width, height), bytes_.data());
      frame_ = MakePackedFrameView(bytes_.data(), bytes_.size(), width, height, format, matrix, range).value();
    }
    uint8_t* data() { return bytes_.data(); }

   private:
    std::vector<uint8_t> bytes_;
  };

  int BandRows() const { return options_.band_rows > 0 ? options_.band_rows : kCpuBandRows; }

  // The tiling stage: the frame scaled into each of the rendition's cells.
  static Status PlaceTiles(const FrameView& source, const Rendition& r) {
    auto* sprite = dynamic_cast<HostSprite*>(r.tiles.sprite.get());
    if (sprite == nullptr) return InvalidArgument("tiles: the sprite is not one the cpu worker made");
    const FrameView& to = sprite->frame();
    for (const auto& [x, y] : r.tiles.cells) {
      ASSIGN_OR_RETURN(ScalePlan plan, MakeTilePlan(source.format, source.width, source.height, r.width, r.height,
                                                    to.width, to.height, x, y));
      RETURN_IF_ERROR(ScaleFrameOnHost(source, plan, sprite->data()));
    }
    return OkStatus();
  }

  // Rendition r of the slot's frame, made from `source`: the frame, or its turn.
  StatusOr<std::vector<uint8_t>> EncodeRendition(const Slot& s, const FrameView& source, size_t r) {
    const EncodeParams& params = s.request.renditions[r].params;
    if (!RenditionIsScaled(s.request, r)) return encoder_.Encode(source, params, BandRows());
    ASSIGN_OR_RETURN(ScalePlan plan, MakeScalePlan(source.format, source.width, source.height,
                                                   RenditionWidth(s.request, r), RenditionHeight(s.request, r)));
    ASSIGN_OR_RETURN(ScaledFrame scaled, ScaleFrameToOwned(source, plan));
    return encoder_.Encode(scaled.view, params, BandRows());
  }

  void Run() {
    while (auto slot = queue_.PopTicking([this] { heartbeats_.Beat(0); }, kHeartbeatPeriod)) {
      Slot& s = slots_[*slot];
      FrameResult& result = s.result;
      result = FrameResult();
      result.id = s.request.id;
      result.times.submitted = s.submitted;
      result.times.started = std::chrono::steady_clock::now();
      Status status =
          options_.test_fault ? options_.test_fault("cpu encode").WithContext("cpu encode") : OkStatus();
      // The deinterlace and orientation stages, once for all renditions.
      const FrameRequest::Deinterlace& d = s.request.deinterlace;
      DeinterlacedFrame whole;
      if (status.ok() && d.enabled) {
        StatusOr<DeinterlacedFrame> w = DeinterlaceFrameToOwned(s.prev, s.view, s.next, d.top_field_first);
        if (w.ok()) whole = std::move(w).value();
        status = w.status().WithContext("deinterlace");
      }
      const FrameView& made_whole = d.enabled ? whole.view : s.view;
      OrientedFrame turned;
      if (status.ok() && !s.request.orientation.identity()) {
        StatusOr<OrientedFrame> t = OrientFrameToOwned(made_whole, s.request.orientation);
        if (t.ok()) turned = std::move(t).value();
        status = t.status().WithContext("orientation");
      }
      const FrameView& source = s.request.orientation.identity() ? made_whole : turned.view;
      for (size_t r = 0; status.ok() && r < s.request.renditions.size(); ++r) {
        if (s.request.renditions[r].tiled()) {  // placed now, encoded with the sprite
          status = PlaceTiles(source, s.request.renditions[r]).WithContext("rendition " + std::to_string(r));
          result.jpeg.emplace_back();
          continue;
        }
        auto jpeg = EncodeRendition(s, source, r);
        if (!jpeg.ok()) {
          status = jpeg.status().WithContext("rendition " + std::to_string(r));
          break;
        }
        if (r == 0) result.times.first_byte = std::chrono::steady_clock::now();
        result.jpeg.emplace_back(std::move(jpeg).value());
      }
      if (!status.ok()) {
        result.jpeg.clear();
        result.status = status.WithContext("cpu worker, slot " + std::to_string(*slot));
      }
      result.times.done = std::chrono::steady_clock::now();
      // The encoder read the input synchronously, so the slot (or the caller's memory) is
      // free from here on.
      if (s.in_place) {
        if (s.request.on_input_released) s.request.on_input_released();
        s.request.owner.reset();
      } else if (options_.test_on_input_free) {
        options_.test_on_input_free(*slot, s.bytes.data(), s.bytes.size());
      }
      deliveries_.Push(*slot);
    }
    deliveries_.Close();
  }

  // Hands frames over in the order they were encoded, which is the order of submission.
  void Deliver() {
    while (auto slot = deliveries_.PopTicking([this] { heartbeats_.Beat(1); }, kHeartbeatPeriod)) {
      Slot& s = slots_[*slot];
      auto on_done = std::move(s.request.on_done);
      // A storyboard's sprite lives as long as its session holds it, not until the slot's next frame.
      s.request.sprite.reset();
      for (Rendition& r : s.request.renditions) r.tiles = {};
      (s.result.status.ok() ? done_ : failed_).fetch_add(1);
      s.result.times.handed_over = std::chrono::steady_clock::now();
      on_done(std::move(s.result));
      in_flight_.fetch_sub(1);
      pool_.Release(*slot);  // after delivery, so Flush() means "all delivered"
    }
  }

  const WorkerOptions options_;
  std::shared_ptr<RegisteredRanges> ranges_ = std::make_shared<RegisteredRanges>();
  CpuJpegEncoder encoder_;
  SlotPool pool_;
  std::vector<Slot> slots_;
  FrameQueue<int> queue_;       // submitted slots, to the encode thread
  FrameQueue<int> deliveries_;  // encoded slots, to the delivery thread
  std::atomic<uint64_t> done_{0}, failed_{0};
  std::atomic<int> in_flight_{0};
  Heartbeats heartbeats_{2};
  std::thread thread_, delivery_thread_;
};

}  // namespace

std::unique_ptr<Worker> MakeCpuWorker(const WorkerOptions& options) {
  return std::make_unique<CpuWorker>(options);
}

}  // namespace conveyor

// The engine's worker interface: one per GPU, or one CPU worker, and the code above never
// knows which it has (the CPU is just another device, as in ggml's backend interface).
// A worker takes a decoded frame and its renditions and produces JPEG bytes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "encode_params.h"
#include "frame.h"
#include "jpeg_bytes.h"
#include "stage_orient.h"
#include "status.h"

namespace conveyor {

using SteadyTime = std::chrono::steady_clock::time_point;

// A storyboard's sprite while its cells are filled: a black packed frame in the worker's
// memory (device memory on a GPU worker) that frames are scaled into (Rendition::tiles)
// and that is then encoded as a frame of its own (FrameRequest::sprite). Only the worker
// that made it reads or writes its planes.
class Sprite {
 public:
  virtual ~Sprite() = default;
  const FrameView& frame() const { return frame_; }

 protected:
  FrameView frame_;
};

// One output of a frame. width/height 0 means the source size; any other size is made
// from the one uploaded source by the scaling stage (area down, bilinear up).
struct Rendition {
  int width = 0;
  int height = 0;
  EncodeParams params;
  // Storyboards (the tiling stage): with a sprite, the frame is scaled to width x height
  // into each of `cells` (their top-left corners in the sprite), in submission order
  // with the stream's other frames, and the rendition's JPEG stays empty. Such a
  // rendition is its request's only one.
  struct Tiles {
    std::shared_ptr<Sprite> sprite;
    std::vector<std::pair<int, int>> cells;
  } tiles;
  bool tiled() const { return tiles.sprite != nullptr; }
};

// When each stage of one frame happened, on the host's steady clock, plus GPU event
// times where the worker has them.
struct GpuInterval {
  double start = 0, end = 0;  // seconds on the worker's GPU clock (since its start)
  double seconds() const { return end - start; }
};

struct FrameTimes {
  SteadyTime submitted, started, first_byte, done;
  SteadyTime handed_over;  // when on_done was called
  // GPU worker: the run of timed frames this frame belongs to (WorkerOptions::
  // stage_timing), counting from 1; 0 when the frame was not timed. A timed frame has
  // the intervals below, on the worker's GPU clock:
  uint64_t timing_run = 0;
  GpuInterval upload, encode;
  std::vector<double> band_done;          // when each band's last stage finished
  std::vector<GpuInterval> band_readback;  // each band's D2H copy; starts after band_done
};

struct FrameResult {
  uint64_t id = 0;
  Status status;
  std::vector<JpegBytes> jpeg;  // one per rendition, when status is OK
  FrameTimes times;
};

struct FrameRequest {
  uint64_t id = 0;
  FrameView frame;  // caller memory; see `owner` and on_input_released for how long it is read
  // Optional: owns the memory `frame` points into (a decoded AVFrame, an assembled raw
  // frame). A worker that can read the frame where it is (the CPU worker) keeps it until
  // its encode has read the frame, instead of copying it; a worker that copies (the GPU
  // worker, into pinned staging) drops it once copied. Without an owner the memory is the
  // caller's, and a worker copies it unless it lies in registered memory.
  std::shared_ptr<const void> owner;
  // Deinterlacing (the deinterlace stage, first of all): `frame` made whole from its
  // kept field and the frames before and after it in its stream (the same format and
  // size; at the stream's ends `frame` itself), which must stay readable as `frame` does
  // (the owner keeps all three). The three frames together may hold at most as many bytes
  // as the largest rgba frame the worker takes (3 x 1080p 4:4:4 under a 4K limit).
  struct Deinterlace {
    bool enabled = false;
    bool top_field_first = true;  // the field of `frame` that is kept
    FrameView prev, next;
  } deinterlace;
  // Where `frame`'s planes (and the deinterlace stage's prev and next) lie: host memory,
  // or this GPU worker's device memory, a hardware decoder's surfaces (Worker::Decoding).
  // Device planes are read where they are: the worker orders its device-to-device copy
  // after every decoder copy queued on the decode stream before Submit(), with an event,
  // and `owner` keeps the surfaces until that copy has completed. The CPU worker refuses
  // device input.
  struct DeviceInput {
    bool enabled = false;
    // The planes hold 16-bit samples with the value in the top 10 bits (P010): the upload
    // narrows them to the 8-bit `frame.format` (NV12) as libswscale narrows yuv420p10
    // (kernels/stage_narrow.h). Strides are in bytes, as always.
    bool p010 = false;
  } device;
  // The turn and mirror applied to the frame before its renditions are made (the display
  // matrix's, under autorotate): rendition sizes, and 0 x 0 as the source size, are of
  // the turned frame. The GPU worker turns the uploaded frame on the device, the CPU
  // worker on the host, to the same bytes.
  Orientation orientation;
  std::vector<Rendition> renditions;
  // Storyboards: the frame is this sprite (`frame` is sprite->frame(), `owner` keeps it),
  // encoded once every frame submitted before it in its stream has placed its tiles.
  std::shared_ptr<Sprite> sprite;
  // The caller's stream (a session): frames of one stream are handed over in the order
  // they were submitted, while a stream's slow frame does not hold back another
  // stream's finished ones.
  uint64_t stream = 0;
  // Called exactly once, one frame at a time, in submission order within the frame's
  // stream: on one of the worker's delivery threads, or, for a frame Submit() refused, on
  // the scheduler's dispatcher thread.
  std::function<void(FrameResult&&)> on_done;
  // Optional: called once the worker will never read the frame's memory again. For a
  // frame it copied, that is before Submit() returns; for a frame it reads in place (in
  // registered memory, or kept by `owner`), after its upload or encode has read it. Until
  // then the caller must not touch that memory.
  std::function<void()> on_input_released;
};

// Caller memory registered with a worker; dropping it unregisters. Drop it only after
// every frame submitted from it was released.
class HostMemoryRegistration {
 public:
  virtual ~HostMemoryRegistration() = default;
};

// Which frames the GPU worker records timing events for: FrameTimes' GPU intervals, which
// the stage histograms, the overlap gauge and the benchmark's engine columns read. The
// events are not free (timing every frame costs the H200 10-20 % of its frames/s), so
// the daemon times frames in runs: `run_frames` consecutive frames, a run starting at
// most every `every`. A run is long enough to show how the engines overlap, and rare
// enough to cost nothing measurable at full load; at low frame rates runs follow each
// other and nearly every frame is timed, which costs nothing there.
struct StageTiming {
  int run_frames = 0;  // 0: no timing
  std::chrono::milliseconds every{0};  // 0: every frame timed, all in one run

  bool on() const { return run_frames > 0; }
  static StageTiming Off() { return {}; }
  static StageTiming EveryFrame() { return {1, std::chrono::milliseconds(0)}; }
  static StageTiming Sampled() { return {64, std::chrono::milliseconds(1000)}; }
};

struct WorkerOptions {
  // Frames in flight (the GPU worker's ring of pinned slots). Eight keep both encode
  // streams busy while other frames upload and read back.
  int slots = 8;
  int max_width = 3840;          // pinned and device buffers are sized for this at start
  int max_height = 2160;
  // GPU: read band k back as soon as band k is done, not after the whole frame
  // (docs/DESIGN.md, Band readback).
  bool progress_events = true;
  // Pixel rows per band. 0: the GPU worker picks bands of about kGpuBandBlocks blocks
  // (fewer, fuller launches); the CPU worker takes bands of 32 rows (kCpuBandRows).
  int band_rows = 0;
  // GPU: encode streams that consecutive frames take turns on, so that two frames'
  // small launches can run side by side (each stream has its own scratch).
  int encode_streams = 2;
  // GPU: a frame takes the next encode stream in turn, unless that stream holds more
  // pixels not yet read back than another one does plus this frame: then it takes the
  // other, so the light frames behind a heavy one do not queue behind its encode.
  bool balance_encode_streams = true;
  // GPU: blocks in the first band of a frame of three or more bands (4K and up; 0: as
  // many as in the others). Its first byte waits for the upload and band 0 only, so a
  // small band 0 brings it sooner, but the extra launch costs 4K 1.5-3.5 % of its
  // frames/s on the H200, so it is off.
  int first_band_blocks = 0;
  // GPU: threads that read each encode stream's frames back, in turns; the worker hands
  // frames over in order whichever thread finishes them.
  int delivery_threads_per_stream = 1;
  // GPU: how host threads wait for the device (the runtime's scheduling flag for its
  // context, which FFmpeg's CUDA decoder shares): the runtime's own choice, spinning,
  // yielding, or blocking on an interrupt.
  enum class HostWait { kAuto, kSpin, kYield, kBlock };
  HostWait host_wait = HostWait::kAuto;
  // GPU: pinned host memory that bands are copied into and lent to callers from, so
  // that no host copy follows the readback. A result holds its room until it is
  // dropped; when the ring is full, bands take the slots' own band buffers and are
  // copied into the result. 0: always that fallback.
  size_t readback_ring_bytes = 64 << 20;
  // GPU: most frames of the same shape (size, format, renditions) one launch carries.
  // A launch only takes frames already queued, so batching never waits for frames. Off
  // (1) by default: on the GPU host it does not pay (docs/benchmarks-history.md).
  int max_launch_frames = 1;
  StageTiming stage_timing;      // GPU: timing events around upload, encode and readback
  int cpu_threads = 0;           // CPU worker: 0 = one per hardware thread

  // Test hooks (never set in production).
  // Called when the worker is done with a slot's pinned input: its upload has completed.
  std::function<void(int slot, uint8_t* data, size_t size)> test_on_input_free;
  // Called before each runtime call with its name; a non-OK return is used as that
  // call's result (fault injection).
  std::function<Status(const std::string& call)> test_fault;
  // GPU worker: called on the issue thread before each group of frames is issued, with
  // the group's size; blocking in it holds the issue thread (to make groups form).
  std::function<void(int frames)> test_on_issue;
  // GPU worker: bytes of each of a slot's two pinned band buffers (the readback's path
  // when the ring is full) instead of a whole band's worst case, so that bands go
  // through them in pieces. 0: a band's worst case.
  size_t test_band_buffer_bytes = 0;
};

// Most blocks in a band when band_rows is 0; the GPU worker takes as few bands as that
// allows (EvenBandRows). A coding launch costs about 20 us on the H200 however few
// segments it holds, so bands are as large as progress events allow.
constexpr int kGpuBandBlocks = 32768;
// The same for the renditions of a frame that has several. A ladder is bound by its
// encode, not its upload, and a frame's small renditions join its largest one's last
// band, so a 1080p ladder in one band each (one launch of each stage) runs about 6 %
// more frames/s than with 1080p in two. The first byte of its 1080p rendition then comes
// with the last.
constexpr int kGpuLadderBandBlocks = 2 * kGpuBandBlocks;

struct WorkerStats {
  uint64_t frames_done = 0;
  uint64_t frames_failed = 0;
  uint64_t restarts = 0;             // times the worker re-created its GPU state
  uint64_t pinned_bytes = 0;         // page-locked host memory held (at start, plus a quality's tables)
  uint64_t device_bytes = 0;
  int in_flight = 0;
  // GPU worker: seconds its issue thread spent queuing work, and its delivery threads
  // (one per encode lane, summed) spent waiting for and copying bands (host-side limits
  // show here).
  double issue_busy_s = 0, delivery_busy_s = 0;
  // Of delivery_busy_s: waiting for bands to be encoded, waiting for their copies to the
  // host, and copying their bytes from the pinned band buffers into the results.
  double delivery_band_wait_s = 0, delivery_copy_wait_s = 0, delivery_append_s = 0;
  // GPU worker: frames that found the readback ring full and took the fallback path.
  uint64_t readback_ring_fallbacks = 0;
  // GPU worker: groups of frames issued together (one launch per band and stage carries
  // a group), and the frames in them; frames / launch_groups is the mean batch.
  uint64_t launch_groups = 0, launch_group_frames = 0;
  // Pinned bytes held by slots that have a frame in them now (of pinned_bytes).
  uint64_t pinned_in_use_bytes = 0;
  // Seconds since the least recently active of the worker's threads last showed it is
  // alive; idle threads beat every second, so a large value means a stuck thread.
  double stalest_thread_s = 0;
  // GPU worker with stage timing: share of recent time (the last run of timed frames, or
  // the last 256 frames when every frame is timed) in which two or more of its engines
  // (upload, encode, readback) were busy.
  double overlap_ratio = 0;
};

// What a worker is, in the one vocabulary that the API (WorkerStatus, Started), the
// metrics and the logs use. Code above the engine asks this, never a name.
enum class WorkerKind { kCpu, kGpu };
struct WorkerInfo {
  WorkerKind kind = WorkerKind::kCpu;
  std::string backend = "cpu";       // "cpu", or GpuBackendName(): "hip-nvidia", "hip-amd"
  int device = -1;                   // the GPU's runtime index; -1 for the CPU
  std::string device_name;           // empty for the CPU
  uint64_t device_memory_bytes = 0;  // total; 0 for the CPU
  bool is_gpu() const { return kind == WorkerKind::kGpu; }
};

// What a hardware decoder needs to decode into a GPU worker's device memory, so that its
// frames reach the encode kernels without crossing PCIe.
struct DecodeTarget {
  // FFmpeg's hwaccel for this device: "cuda" (NVIDIA; the decoder works in the worker's
  // own context, `context`) or "vaapi" (AMD, through the
  // device's DRM render node; its frames are transferred to host memory).
  std::string api;
  int device = -1;           // the runtime's index
  std::string pci_bus_id;    // "0000:c1:00.0", for finding the render node
  // CUDA: the stream (a CUstream) the decoder's copies are to be queued on. Frames
  // submitted with DeviceInput wait for what it holds at Submit(). Null for VA-API.
  void* stream = nullptr;
  // CUDA: the worker's context (a CUcontext: the device's primary context, which the
  // runtime made current), for FFmpeg's device to work in. Null where it is not known.
  void* context = nullptr;
  bool device_frames() const { return stream != nullptr; }  // frames may stay on the device
};

class Worker {
 public:
  virtual ~Worker() = default;

  // "cpu (16 threads)" or "gpu 0: NVIDIA H200".
  virtual std::string Describe() const = 0;
  // Fixed for the worker's life.
  virtual WorkerInfo Info() const = 0;

  // Copies the frame into a free slot and queues it; blocks while every slot is busy, or
  // (GPU worker) while it holds twice as many frames as it has slots (finished frames
  // waiting for their turn in their stream hold no slot). That is how backpressure
  // reaches the caller. A frame it refuses (INVALID_ARGUMENT for bad input, UNAVAILABLE
  // from a worker that stopped) never reaches on_done from the worker; the scheduler
  // calls on_done with the refusal instead.
  virtual Status Submit(FrameRequest request) = 0;

  // Waits until every submitted frame has been delivered.
  virtual void Flush() = 0;

  // Lets frames that lie in [data, data + size), tightly packed, be uploaded straight
  // from there with no host copy (the GPU worker page-locks the range in place; the CPU
  // worker reads it as it is).
  virtual StatusOr<std::unique_ptr<HostMemoryRegistration>> RegisterHostMemory(void* data, size_t size) = 0;

  virtual WorkerStats Stats() const = 0;

  // A black sprite of `format` for storyboards (see Sprite), in this worker's memory.
  virtual StatusOr<std::shared_ptr<Sprite>> NewSprite(PixelFormat format, int width, int height, ColorMatrix matrix,
                                                      ColorRange range) = 0;

  // Where a hardware decoder can decode for this worker; none for the CPU worker, and
  // for a GPU whose video engines the build cannot reach.
  virtual std::optional<DecodeTarget> Decoding() const { return std::nullopt; }
};

std::unique_ptr<Worker> MakeCpuWorker(const WorkerOptions& options);

// UNAVAILABLE (with the runtime's reason) where there is no such GPU or the build has none.
StatusOr<std::unique_ptr<Worker>> MakeGpuWorker(int device, const WorkerOptions& options);

// Checks the renditions of a request against the frame and the worker's limits.
Status ValidateRequest(const FrameRequest& request, const WorkerOptions& options);
// Checks a sprite's size against the worker's limits (either way round, as a frame's), so
// that its encode fits a slot (Worker::NewSprite).
Status ValidateSpriteSize(int width, int height, const WorkerOptions& options);

// The frame's size once turned (FrameRequest::orientation): the size its renditions are
// made from.
int OrientedWidth(const FrameRequest& request);
int OrientedHeight(const FrameRequest& request);
// The frame's pixel format once turned: yuv422p under a transpose becomes yuv444p.
PixelFormat TurnedFormat(const FrameRequest& request);
// Rendition i's output size (0 in the request means the turned source's), and whether it
// needs the scaling stage.
int RenditionWidth(const FrameRequest& request, size_t i);
int RenditionHeight(const FrameRequest& request, size_t i);
bool RenditionIsScaled(const FrameRequest& request, size_t i);

}  // namespace conveyor

// The worker contract, run against the CPU worker everywhere and the GPU worker where a
// GPU is present (skipping with the runtime's reason elsewhere): output identical to
// the CPU encoder, no slot reused before its copy completed (poison), band readback
// ordered after its band, survival of an injected runtime error, backpressure, and
// refusal of bad input. The outputs of the order and rendition tests are also decoded by
// libjpeg-turbo and measured against the source (libjpeg_turbo_check.h). Free of FFmpeg
// and gRPC so it runs on the GPU host as built.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <utility>

#include "cpu_encoder.h"
#include "gpu_encoder.h"
#include "deinterlace_cpu.h"
#include "libjpeg_turbo_check.h"
#include "orient_cpu.h"
#include "scale_cpu.h"
#include "synthetic_frame.h"
#include "worker.h"

namespace conveyor {
namespace {

// Keeps each frame's result. A collector flushes the worker its callbacks were made for
// before it goes, so that a test which returns early on a failure (with frames still in
// flight) leaves no callback to write into it afterwards.
struct Collector {
  std::mutex mu;
  std::map<uint64_t, FrameResult> results;
  std::vector<uint64_t> order;
  Worker* worker = nullptr;
  Collector() = default;
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;
  ~Collector() {
    if (worker != nullptr) worker->Flush();
  }
  std::function<void(FrameResult&&)> Callback(Worker& w) {
    worker = &w;
    return [this](FrameResult&& r) {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(r.id);
      results[r.id] = std::move(r);
    };
  }
};

class WorkerTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The GPU worker skips only where no device is found; a device that is there and whose
  // worker does not start (an Init() failure, a kernel that does not load) fails the test.
  std::unique_ptr<Worker> Make(WorkerOptions options) {
    if (GetParam() == "cpu") return MakeCpuWorker(options);
    const GpuProbe probe = ProbeGpus();
    if (probe.devices.empty()) {
      skip_ = probe.unavailable_reason.empty() ? "no device found" : probe.unavailable_reason;
      return nullptr;
    }
    auto w = MakeGpuWorker(0, options);
    if (!w.ok()) {
      ADD_FAILURE() << "device 0 (" << probe.devices[0].name
                    << ") is present but its worker did not start: " << w.status().ToString();
      return nullptr;
    }
    std::printf("worker: %s\n", (*w)->Describe().c_str());
    return std::move(w).value();
  }
  std::string skip_;
};

#define MAKE_OR_SKIP(var, options)                      \
  auto var = Make(options);                             \
  if (!var && skip_.empty()) return;                    \
  if (!var) GTEST_SKIP() << "no GPU: " << skip_

// A mixed stream of frames: sizes, formats and parameters change from frame to frame.
struct Case {
  testing::SyntheticFrame frame;
  EncodeParams params;
};
std::vector<Case> MixedCases(int n) {
  const int sizes[][2] = {{1920, 1080}, {1280, 720}, {17, 9}, {640, 360}, {3840, 2160}};
  const PixelFormat formats[] = {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kRgb24,
                                 PixelFormat::kYuv444p, PixelFormat::kBgra};
  std::vector<Case> cases;
  for (int i = 0; i < n; ++i) {
    Case c;
    const auto& sz = sizes[i % 5];
    c.frame = testing::MakeSyntheticFrame(sz[0], sz[1], formats[(i / 2) % 5], 100 + i);
    c.params.quality = 50 + (i * 7) % 51;
    c.params.subsampling = static_cast<Subsampling>(i % 3);
    cases.push_back(std::move(c));
  }
  return cases;
}

// Submits every case as one single-rendition frame (id = index) and waits for delivery.
// Frame i goes to stream stream_of(i) (one stream when not given).
void SubmitAll(Worker& worker, const std::vector<Case>& cases, Collector& got,
               const std::function<uint64_t(size_t)>& stream_of = nullptr) {
  for (size_t i = 0; i < cases.size(); ++i) {
    FrameRequest req;
    req.id = i;
    req.frame = cases[i].frame.view;
    req.renditions = {Rendition{0, 0, cases[i].params}};
    if (stream_of) req.stream = stream_of(i);
    req.on_done = got.Callback(worker);
    ASSERT_TRUE(worker.Submit(std::move(req)).ok()) << "frame " << i;
  }
  worker.Flush();
}

// Each output equals the CPU encoder's and passes libjpeg-turbo's check against its
// source; prints how many were decoded (tests/gpu/h200_run.sh requires some).
void ExpectMatchesCpuEncoder(const std::vector<Case>& cases, Collector& got) {
  CpuJpegEncoder reference(0);
  for (size_t i = 0; i < cases.size(); ++i) {
    auto want = reference.Encode(cases[i].frame.view, cases[i].params);
    ASSERT_TRUE(want.ok());
    const FrameResult& r = got.results.at(i);
    ASSERT_TRUE(r.status.ok()) << "frame " << i << ": " << r.status.ToString();
    ASSERT_EQ(r.jpeg.size(), 1u);
    const std::vector<uint8_t> jpeg = r.jpeg[0].ToVector();
    ASSERT_EQ(jpeg, *want) << "frame " << i << " differs from the CPU encoder";
    const Status decoded = testing::CheckAgainstLibjpegTurbo(cases[i].frame.view, cases[i].params, jpeg);
    ASSERT_TRUE(decoded.ok()) << "frame " << i << ": " << decoded.ToString();
  }
  std::printf("libjpeg-turbo checked outputs: %zu\n", cases.size());
}

TEST_P(WorkerTest, OutputMatchesCpuEncoderInSubmissionOrder) {
  WorkerOptions options;
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(20);
  Collector got;
  SubmitAll(*worker, cases, got);
  if (HasFatalFailure()) return;
  ASSERT_EQ(got.results.size(), cases.size());
  for (size_t i = 0; i < got.order.size(); ++i) EXPECT_EQ(got.order[i], i);
  ExpectMatchesCpuEncoder(cases, got);
}

// A frame's slot is free once its bytes are read back, before its hand-over: while the
// caller holds frame 0's hand-over (its on_done blocks), more frames than there are slots
// are still taken, encoded and read back. Before, slots went back only at hand-over, so
// a frame waiting its turn held its slot and a slow frame drained the pipeline behind it.
TEST_P(WorkerTest, SlotsAreFreeBeforeTheirFramesAreHandedOver) {
  if (GetParam() == "cpu") GTEST_SKIP() << "the CPU worker encodes in the caller's order with its own queue";
  WorkerOptions options;
  options.slots = 3;
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(8);
  constexpr int kBeyondSlots = 5;  // frames 1..5: more than the 3 slots, fewer than the 6 frames held at most
  std::mutex mu;
  std::condition_variable cv;
  int submitted = 0;
  bool reached = false;
  Collector got;
  for (int i = 0; i <= kBeyondSlots; ++i) {
    FrameRequest req;
    req.id = i;
    req.frame = cases[i].frame.view;
    req.renditions = {Rendition{0, 0, cases[i].params}};
    auto collect = got.Callback(*worker);
    if (i == 0) {
      req.on_done = [&, collect](FrameResult&& r) {
        std::unique_lock<std::mutex> lock(mu);
        reached = cv.wait_for(lock, std::chrono::seconds(20), [&] { return submitted == kBeyondSlots; });
        lock.unlock();
        collect(std::move(r));
      };
    } else {
      req.on_done = collect;
    }
    ASSERT_TRUE(worker->Submit(std::move(req)).ok());
    if (i > 0) {
      std::lock_guard<std::mutex> lock(mu);
      submitted = i;
      cv.notify_all();
    }
  }
  worker->Flush();
  EXPECT_TRUE(reached) << "frames past the slots waited for frame 0's hand-over";
  ASSERT_EQ(got.order.size(), static_cast<size_t>(kBeyondSlots + 1));
  for (size_t i = 0; i < got.order.size(); ++i) EXPECT_EQ(got.order[i], i) << "hand-over order";
  for (int i = 0; i <= kBeyondSlots; ++i) {
    auto want = CpuJpegEncoder(0).Encode(cases[i].frame.view, cases[i].params);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(got.results.at(i).jpeg.at(0).ToVector(), *want) << "frame " << i;
  }
}

// Frames of three streams, submitted interleaved, in mixed sizes so that they finish out
// of order: each stream's frames are handed over in its own submission order.
TEST_P(WorkerTest, EachStreamsFramesComeInItsSubmissionOrder) {
  WorkerOptions options;
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(36);
  Collector got;
  const auto stream_of = [](size_t i) { return static_cast<uint64_t>(i % 3 == 0 ? 7 : i % 3 == 1 ? 1000 : 0); };
  SubmitAll(*worker, cases, got, stream_of);
  if (HasFatalFailure()) return;
  ASSERT_EQ(got.results.size(), cases.size());
  std::map<uint64_t, std::vector<uint64_t>> per_stream;
  for (uint64_t id : got.order) per_stream[stream_of(id)].push_back(id);
  ASSERT_EQ(per_stream.size(), 3u);
  for (const auto& [stream, ids] : per_stream) {
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << "stream " << stream << " out of order";
    EXPECT_EQ(ids.size(), 12u);
  }
  ExpectMatchesCpuEncoder(cases, got);
}

// docs/DESIGN.md, Slot reuse: a slot's pinned input is poisoned the moment the worker says it is
// free. Had the worker released it before its upload completed, the poison would be in
// the upload and the output would differ from the CPU encoder's.
TEST_P(WorkerTest, PoisonedSlotsNeverReachTheOutput) {
  std::atomic<int> poisoned{0};
  WorkerOptions options;
  options.slots = 2;
  options.test_on_input_free = [&](int, uint8_t* data, size_t size) {
    std::memset(data, 0xA5, size);
    poisoned.fetch_add(1);
  };
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(30);
  Collector got;
  SubmitAll(*worker, cases, got);
  if (HasFatalFailure()) return;
  EXPECT_EQ(poisoned.load(), static_cast<int>(cases.size()));
  ExpectMatchesCpuEncoder(cases, got);
}

TEST_P(WorkerTest, ProgressEventsOffGivesTheSameBytes) {
  WorkerOptions options;
  options.progress_events = false;
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(10);
  Collector got;
  SubmitAll(*worker, cases, got);
  if (HasFatalFailure()) return;
  ExpectMatchesCpuEncoder(cases, got);
}

// The stall scenario's shape: a 4K q100 frame among light 1080p ones. With a small
// first band on the large frames and the lanes balanced (light frames skip the heavy
// frame's lane), and with both off, every frame's bytes are the CPU encoder's and the
// frames come in submission order.
TEST_P(WorkerTest, ASmallFirstBandAndBalancedLanesGiveTheSameBytes) {
  std::vector<Case> cases;
  for (int i = 0; i < 16; ++i) {
    Case c;
    const bool heavy = i % 4 == 3;
    c.frame = heavy ? testing::MakeSyntheticFrame(3840, 2160, PixelFormat::kYuv420p, 7 + i)
                    : testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kYuv420p, 7 + i);
    c.params.quality = heavy ? 100 : 85;
    c.params.subsampling = i % 8 == 7 ? Subsampling::k422 : Subsampling::k420;
    cases.push_back(std::move(c));
  }
  for (const bool on : {true, false}) {
    SCOPED_TRACE(on ? "first band 2048 blocks, balanced lanes" : "even bands, lanes in turn");
    WorkerOptions options;
    options.first_band_blocks = on ? 2048 : 0;
    options.balance_encode_streams = on;
    MAKE_OR_SKIP(worker, options);
    Collector got;
    SubmitAll(*worker, cases, got);
    if (HasFatalFailure()) return;
    ASSERT_EQ(got.order.size(), cases.size());
    for (size_t i = 0; i < got.order.size(); ++i) EXPECT_EQ(got.order[i], i);
    ExpectMatchesCpuEncoder(cases, got);
  }
}

TEST_P(WorkerTest, BandReadbackStartsOnlyAfterItsBandIsDone) {
  if (GetParam() == "cpu") GTEST_SKIP() << "the CPU worker has no separate readback";
  WorkerOptions options;
  options.stage_timing = StageTiming::EveryFrame();
  options.band_rows = 32;  // several bands a frame, whatever the default band size
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(6);
  Collector got;
  SubmitAll(*worker, cases, got);
  if (HasFatalFailure()) return;
  size_t bands = 0;
  for (auto& [id, r] : got.results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    ASSERT_FALSE(r.times.band_done.empty());
    ASSERT_EQ(r.times.band_done.size(), r.times.band_readback.size());
    for (size_t k = 0; k < r.times.band_done.size(); ++k) {
      EXPECT_GE(r.times.band_readback[k].start, r.times.band_done[k]) << "frame " << id << " band " << k;
      EXPECT_GT(r.times.band_readback[k].end, r.times.band_readback[k].start);
    }
    bands += r.times.band_done.size();
    EXPECT_GT(r.times.upload.seconds(), 0.0);
    EXPECT_GT(r.times.encode.seconds(), 0.0);
    EXPECT_GE(r.times.encode.start, r.times.upload.end) << "encode began before its upload ended";

  }
  std::printf("bands checked: %zu\n", bands);
  EXPECT_GT(bands, 2 * got.results.size()) << "too few bands to check their order";
  ExpectMatchesCpuEncoder(cases, got);
}

// Sampled stage timing (the daemon's): a run of consecutive frames is timed, and the
// frames after it, until the next run is due, carry no GPU times and cost no timing
// events. With one frame a launch, the run is the first frames issued.
TEST_P(WorkerTest, SampledStageTimingTimesOneRunOfFrames) {
  if (GetParam() == "cpu") GTEST_SKIP() << "the CPU worker keeps no GPU times";
  WorkerOptions options;
  options.stage_timing = {3, std::chrono::hours(1)};  // one run of three frames in this test
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(8);
  Collector got;
  SubmitAll(*worker, cases, got);
  if (HasFatalFailure()) return;
  int timed = 0;
  for (auto& [id, r] : got.results) {
    ASSERT_TRUE(r.status.ok()) << r.status.ToString();
    if (id < 3) {
      EXPECT_EQ(r.times.timing_run, 1u) << "frame " << id;
      EXPECT_FALSE(r.times.band_readback.empty()) << "frame " << id;
      EXPECT_GT(r.times.upload.seconds(), 0.0) << "frame " << id;
      timed += r.times.timing_run == 1;
    } else {
      EXPECT_EQ(r.times.timing_run, 0u) << "frame " << id;
      EXPECT_TRUE(r.times.band_done.empty()) << "frame " << id;
      EXPECT_EQ(r.times.upload.end, 0.0) << "frame " << id;
    }
  }
  EXPECT_EQ(timed, 3);
  ExpectMatchesCpuEncoder(cases, got);
}

// An injected runtime failure fails only the frame it touched, names the call and the
// slot, and leaves the worker serving.
TEST_P(WorkerTest, SurvivesAnInjectedRuntimeError) {
  const std::string call = GetParam() == "cpu" ? "cpu encode" : "hipMemcpyAsync(upload)";
  std::atomic<int> calls{0};
  WorkerOptions options;
  options.test_fault = [&](const std::string& what) {
    if (what == call && calls.fetch_add(1) == 4) return Internal("injected fault");
    return OkStatus();
  };
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(12);
  Collector got;
  SubmitAll(*worker, cases, got);
  if (HasFatalFailure()) return;
  ASSERT_EQ(got.results.size(), cases.size());
  const FrameResult& failed = got.results.at(4);
  EXPECT_EQ(failed.status.code(), StatusCode::kInternal);
  EXPECT_NE(failed.status.message().find(call), std::string::npos) << failed.status.ToString();
  EXPECT_NE(failed.status.message().find("slot"), std::string::npos) << failed.status.ToString();
  CpuJpegEncoder reference(0);
  for (size_t i = 0; i < cases.size(); ++i) {
    if (i == 4) continue;
    const FrameResult& r = got.results.at(i);
    ASSERT_TRUE(r.status.ok()) << "frame " << i << ": " << r.status.ToString();
    EXPECT_EQ(r.jpeg[0].ToVector(), *reference.Encode(cases[i].frame.view, cases[i].params)) << "frame " << i;
  }
  const WorkerStats st = worker->Stats();
  EXPECT_EQ(st.frames_failed, 1u);
  EXPECT_EQ(st.frames_done, cases.size() - 1);
  if (GetParam() == "gpu") {
    EXPECT_EQ(st.restarts, 1u);
  }
}

// Submit() pushes back: with two slots and callbacks that hold the hand-over, the CPU
// worker takes two frames and the GPU worker four (it frees a slot once the frame is
// read back, and holds at most twice its slots in frames); the next Submit() waits until
// a frame is handed over.
TEST_P(WorkerTest, SubmitBlocksWhenTheWorkerIsFull) {
  WorkerOptions options;
  options.slots = 2;
  MAKE_OR_SKIP(worker, options);
  const int held = GetParam() == "cpu" ? 2 : 4;
  const auto frame = testing::MakeSyntheticFrame(64, 64, PixelFormat::kYuv420p, 1);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> delivered{0};
  auto submit = [&](uint64_t id) {
    FrameRequest req;
    req.id = id;
    req.frame = frame.view;
    req.renditions = {Rendition{}};
    req.on_done = [&, released](FrameResult&&) {
      released.wait();
      delivered.fetch_add(1);
    };
    return worker->Submit(std::move(req));
  };
  for (int i = 0; i < held; ++i) ASSERT_TRUE(submit(i).ok());
  auto next = std::async(std::launch::async, [&] { return submit(held); });
  EXPECT_EQ(next.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout)
      << "Submit() returned while the worker held " << held << " frames";
  release.set_value();
  EXPECT_TRUE(next.get().ok());
  worker->Flush();
  EXPECT_EQ(delivered.load(), held + 1);
}

TEST_P(WorkerTest, RefusesBadRequestsUpFront) {
  WorkerOptions options;
  options.max_width = 1920;
  options.max_height = 1080;
  MAKE_OR_SKIP(worker, options);
  const auto frame = testing::MakeSyntheticFrame(64, 64, PixelFormat::kYuv420p, 1);
  FrameRequest req;
  req.frame = frame.view;
  req.on_done = [](FrameResult&&) { ADD_FAILURE() << "a refused frame was delivered"; };
  EXPECT_EQ(worker->Submit(req).code(), StatusCode::kInvalidArgument);  // no renditions
  req.renditions = {Rendition{}};
  req.renditions[0].params.quality = 0;
  const Status q = worker->Submit(req);
  EXPECT_EQ(q.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.message().find("renditions[0]"), std::string::npos) << q.ToString();
  const auto big = testing::MakeSyntheticFrame(3840, 2160, PixelFormat::kYuv420p, 1);
  req.frame = big.view;
  req.renditions[0].params.quality = 85;
  EXPECT_EQ(worker->Submit(req).code(), StatusCode::kInvalidArgument);  // over the limit
  worker->Flush();
  EXPECT_EQ(worker->Stats().frames_done, 0u);
}

// Where each case's packed frame starts in one buffer when each starts on a 4 KiB page;
// `total` gets the buffer's size.
std::vector<size_t> PageAlignedOffsets(const std::vector<Case>& cases, size_t* total) {
  std::vector<size_t> offset;
  *total = 0;
  for (const auto& c : cases) {
    offset.push_back(*total);
    *total += (c.frame.bytes.size() + 4095) / 4096 * 4096;
  }
  return offset;
}

// Submits 15 mixed frames from one registered arena, each page-aligned; `hand_back`
// gives the request its way of telling the caller that the frame's memory is free again,
// and poisons the frame then, so a worker that says so before its upload has read the
// frame shows it in the bytes. Returns how many frames were handed back.
int SubmitFromRegisteredArena(Worker& worker,
                              const std::function<void(FrameRequest&, uint8_t*, size_t, std::atomic<int>*)>& hand_back) {
  const auto cases = MixedCases(15);
  size_t total = 0;
  const std::vector<size_t> offset = PageAlignedOffsets(cases, &total);
  std::vector<uint8_t> arena(total);
  auto registration = worker.RegisterHostMemory(arena.data(), arena.size());
  EXPECT_TRUE(registration.ok()) << registration.status().ToString();
  if (!registration.ok()) return -1;
  Collector got;
  std::atomic<int> handed_back{0};
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& frame = cases[i].frame;
    uint8_t* mine = arena.data() + offset[i];
    std::memcpy(mine, frame.bytes.data(), frame.bytes.size());
    FrameRequest req;
    req.id = i;
    req.frame = MakePackedFrameView(mine, frame.bytes.size(), frame.view.width, frame.view.height, frame.view.format,
                                    frame.view.matrix, frame.view.range)
                    .value();
    req.renditions = {Rendition{0, 0, cases[i].params}};
    req.on_done = got.Callback(worker);
    hand_back(req, mine, frame.bytes.size(), &handed_back);
    EXPECT_TRUE(worker.Submit(std::move(req)).ok());
  }
  worker.Flush();
  ExpectMatchesCpuEncoder(cases, got);
  EXPECT_EQ(handed_back.load(), static_cast<int>(cases.size()));
  return handed_back.load();
}

// Frames in registered caller memory are uploaded from where they are; the caller is
// told when it may write there again (on_input_released).
TEST_P(WorkerTest, RegisteredMemoryIsReleasedOnlyAfterItsUpload) {
  WorkerOptions options;
  MAKE_OR_SKIP(worker, options);
  SubmitFromRegisteredArena(*worker, [](FrameRequest& req, uint8_t* mine, size_t size, std::atomic<int>* count) {
    req.on_input_released = [mine, size, count] {
      std::memset(mine, 0x5A, size);
      count->fetch_add(1);
    };
  });
}

// Frames assembled from messages lie in registered memory and are owned by their
// request (frame_assembly_ring.h): dropping the owner gives the buffer back to the
// session's ring, which writes the next frame there, so it must not go before the upload.
TEST_P(WorkerTest, RegisteredFramesKeepTheirOwnerUntilTheirUpload) {
  WorkerOptions options;
  MAKE_OR_SKIP(worker, options);
  SubmitFromRegisteredArena(*worker, [](FrameRequest& req, uint8_t* mine, size_t size, std::atomic<int>* count) {
    req.owner = std::shared_ptr<void>(mine, [size, count](void* p) {
      std::memset(p, 0x5A, size);
      count->fetch_add(1);
    });
  });
}

// A frame whose request owns its memory, as a decoded AVFrame's does: rows padded to a
// 64-byte stride beyond their width. The CPU worker encodes it where it is, the GPU worker
// copies it; either way each owner is dropped exactly once, by the time the frame is
// delivered, and the memory is poisoned as it goes, so a read after that shows in the bytes.
TEST_P(WorkerTest, OwnedFramesAreReadBeforeTheirOwnerIsDropped) {
  WorkerOptions options;
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(15);
  Collector got;
  std::atomic<int> dropped{0};
  std::vector<int> dropped_before_delivery(cases.size(), -1);
  for (size_t i = 0; i < cases.size(); ++i) {
    const FrameView& packed = cases[i].frame.view;
    const PlaneGeometry g = PackedPlaneGeometry(packed.format, packed.width, packed.height);
    const int planes = LayoutOf(packed.format).num_planes;
    int stride[3] = {0, 0, 0};
    size_t offset[3] = {0, 0, 0}, total = 0;
    for (int p = 0; p < planes; ++p) {
      stride[p] = (g.row_bytes[p] + 64 + 63) / 64 * 64;
      offset[p] = total;
      total += static_cast<size_t>(stride[p]) * g.rows[p];
    }
    auto* memory = new std::vector<uint8_t>(total, 0xEE);
    FrameView view = packed;
    for (int p = 0; p < planes; ++p) {
      uint8_t* dst = memory->data() + offset[p];
      for (int y = 0; y < g.rows[p]; ++y) {
        std::memcpy(dst + static_cast<size_t>(y) * stride[p], packed.plane[p] + static_cast<size_t>(y) * packed.stride[p],
                    g.row_bytes[p]);
      }
      view.plane[p] = dst;
      view.stride[p] = stride[p];
    }
    FrameRequest req;
    req.id = i;
    req.frame = view;
    req.renditions = {Rendition{0, 0, cases[i].params}};
    req.owner = std::shared_ptr<const void>(memory, [&dropped](const std::vector<uint8_t>* m) {
      std::memset(const_cast<uint8_t*>(m->data()), 0x5A, m->size());
      dropped.fetch_add(1);
      delete m;
    });
    auto deliver = got.Callback(*worker);
    req.on_done = [&, deliver, i](FrameResult&& r) {
      dropped_before_delivery[i] = dropped.load();
      deliver(std::move(r));
    };
    ASSERT_TRUE(worker->Submit(std::move(req)).ok()) << "frame " << i;
  }
  worker->Flush();
  EXPECT_EQ(dropped.load(), static_cast<int>(cases.size())) << "every owner dropped, once";
  // Frames are delivered in order and each owner goes before its frame is handed over.
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_GE(dropped_before_delivery[i], static_cast<int>(i) + 1) << "frame " << i << "'s owner outlived its delivery";
  }
  ExpectMatchesCpuEncoder(cases, got);
}

// Frames in memory mapped read-only, as a client's sealed shared-memory slots are in the
// daemon (shared_frames.cpp): the worker must take the registration (the GPU worker needs
// the read-only flag for it where the GPU cannot use the host's page tables, as on the
// H200) and read the frames in place, releasing each after its upload or encode.
TEST_P(WorkerTest, ReadOnlyMappedMemoryIsRegisteredAndReadInPlace) {
  WorkerOptions options;
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(10);
  size_t total = 0;
  const std::vector<size_t> offset = PageAlignedOffsets(cases, &total);
  const int fd = memfd_create("worker_test frames", MFD_CLOEXEC);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(total)), 0) << std::strerror(errno);
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& bytes = cases[i].frame.bytes;
    ASSERT_EQ(pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset[i])), static_cast<ssize_t>(bytes.size()));
  }
  void* mapped = mmap(nullptr, total, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(mapped, MAP_FAILED) << std::strerror(errno);
  const auto* base = static_cast<const uint8_t*>(mapped);
  {
    auto registration = worker->RegisterHostMemory(const_cast<uint8_t*>(base), total);
    ASSERT_TRUE(registration.ok()) << "read-only memory was not registered: " << registration.status().ToString();
    Collector got;
    std::atomic<int> released{0};
    for (size_t i = 0; i < cases.size(); ++i) {
      const FrameView& v = cases[i].frame.view;
      FrameRequest req;
      req.id = i;
      req.frame = MakePackedFrameView(base + offset[i], cases[i].frame.bytes.size(), v.width, v.height, v.format,
                                      v.matrix, v.range)
                      .value();
      req.renditions = {Rendition{0, 0, cases[i].params}};
      req.on_done = got.Callback(*worker);
      req.on_input_released = [&released] { released.fetch_add(1); };
      ASSERT_TRUE(worker->Submit(std::move(req)).ok()) << "frame " << i;
    }
    worker->Flush();
    EXPECT_EQ(released.load(), static_cast<int>(cases.size()));
    ExpectMatchesCpuEncoder(cases, got);
  }  // unregistered before the unmap
  munmap(mapped, total);
}

struct Job {
  testing::SyntheticFrame frame;
  std::vector<Rendition> renditions;
  Orientation orientation;  // the frame is turned before its renditions
  // Deinterlacing, first of all: the frames before and after, and the kept field.
  std::shared_ptr<testing::SyntheticFrame> prev, next;
  bool top_field_first = true;
};

Rendition MakeRendition(int w, int h, int q, Subsampling ss) {
  Rendition r{w, h, EncodeParams{}};
  r.params.quality = q;
  r.params.subsampling = ss;
  return r;
}

// Submits jobs [begin, end), or every job (id = index), without waiting.
void SubmitJobs(Worker& worker, const std::vector<Job>& jobs, Collector& got, size_t begin = 0,
                size_t end = SIZE_MAX) {
  for (size_t i = begin; i < std::min(end, jobs.size()); ++i) {
    FrameRequest req;
    req.id = i;
    req.frame = jobs[i].frame.view;
    req.renditions = jobs[i].renditions;
    req.orientation = jobs[i].orientation;
    if (jobs[i].prev) {
      req.deinterlace.enabled = true;
      req.deinterlace.top_field_first = jobs[i].top_field_first;
      req.deinterlace.prev = jobs[i].prev->view;
      req.deinterlace.next = jobs[i].next->view;
    }
    req.on_done = got.Callback(worker);
    ASSERT_TRUE(worker.Submit(std::move(req)).ok()) << "job " << i;
  }
}

// Every rendition of every job equals turning (where the job asks) and scaling on the CPU
// and encoding that, and passes libjpeg-turbo's check against the scaled frame; returns
// how many were checked.
int ExpectRenditionsMatchCpu(const std::vector<Job>& jobs, Collector& got) {
  CpuJpegEncoder reference(0);
  int checked = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const FrameResult& r = got.results.at(i);
    EXPECT_TRUE(r.status.ok()) << "job " << i << ": " << r.status.ToString();
    if (!r.status.ok() || r.jpeg.size() != jobs[i].renditions.size()) {
      ADD_FAILURE() << "job " << i << ": " << r.jpeg.size() << " outputs";
      continue;
    }
    DeinterlacedFrame whole;
    if (jobs[i].prev) {
      auto w = DeinterlaceFrameToOwned(jobs[i].prev->view, jobs[i].frame.view, jobs[i].next->view,
                                       jobs[i].top_field_first);
      EXPECT_TRUE(w.ok()) << w.status().ToString();
      if (!w.ok()) continue;
      whole = std::move(w).value();
    }
    const FrameView& made_whole = jobs[i].prev ? whole.view : jobs[i].frame.view;
    OrientedFrame turned;
    if (!jobs[i].orientation.identity()) {
      auto t = OrientFrameToOwned(made_whole, jobs[i].orientation);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      if (!t.ok()) continue;
      turned = std::move(t).value();
    }
    const FrameView& src = jobs[i].orientation.identity() ? made_whole : turned.view;
    for (size_t k = 0; k < jobs[i].renditions.size(); ++k) {
      const Rendition& rd = jobs[i].renditions[k];
      const int w = rd.width ? rd.width : src.width, h = rd.height ? rd.height : src.height;
      auto plan = MakeScalePlan(src.format, src.width, src.height, w, h);
      EXPECT_TRUE(plan.ok()) << plan.status().ToString();
      if (!plan.ok()) continue;
      auto scaled = ScaleFrameToOwned(src, *plan);
      EXPECT_TRUE(scaled.ok()) << scaled.status().ToString();
      if (!scaled.ok()) continue;
      auto want = reference.Encode(scaled->view, rd.params);
      EXPECT_TRUE(want.ok());
      if (!want.ok()) continue;
      const std::vector<uint8_t> jpeg = r.jpeg[k].ToVector();
      EXPECT_EQ(jpeg, *want) << "job " << i << " rendition " << k << " (" << w << "x" << h << ")";
      const Status decoded = testing::CheckAgainstLibjpegTurbo(scaled->view, rd.params, jpeg);
      EXPECT_TRUE(decoded.ok()) << "job " << i << " rendition " << k << ": " << decoded.ToString();
      ++checked;
    }
  }
  return checked;
}

// One upload, many renditions: every output equals scaling on the CPU and encoding that.
TEST_P(WorkerTest, RenditionsMatchCpuScaledReferences) {
  WorkerOptions options;
  MAKE_OR_SKIP(worker, options);
  std::vector<Job> jobs;
  const auto rendition = MakeRendition;
  jobs.push_back({testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kYuv420p, 7),
                  {rendition(0, 0, 85, Subsampling::k420), rendition(1280, 720, 80, Subsampling::k420),
                   rendition(640, 360, 75, Subsampling::k444)}});
  jobs.push_back({testing::MakeSyntheticFrame(1280, 720, PixelFormat::kNv12, 8),
                  {rendition(854, 480, 85, Subsampling::k420), rendition(1920, 1080, 90, Subsampling::k422)}});
  jobs.push_back({testing::MakeSyntheticFrame(17, 9, PixelFormat::kRgb24, 9),
                  {rendition(33, 21, 85, Subsampling::k420), rendition(1, 1, 50, Subsampling::k444)}});
  jobs.push_back({testing::MakeSyntheticFrame(640, 360, PixelFormat::kBgra, 10),
                  {rendition(320, 180, 85, Subsampling::k420), rendition(0, 0, 85, Subsampling::k420)}});
  Collector got;
  SubmitJobs(*worker, jobs, got);
  if (HasFatalFailure()) return;
  worker->Flush();
  const int checked = ExpectRenditionsMatchCpu(jobs, got);
  std::printf("renditions checked: %d\n", checked);
}

// Frames turned before their renditions (a phone's rotated video under autorotate): every
// orientation, a 4:2:2 frame that a transpose makes 4:4:4, a portrait 1080p and a ladder
// from a turned 1080p; neighbours of one shape but different turns never share a launch.
TEST_P(WorkerTest, TurnedFramesMatchTheHostTurnAndTheCpuEncoder) {
  WorkerOptions options;
  options.max_launch_frames = 4;
  MAKE_OR_SKIP(worker, options);
  std::vector<Job> jobs;
  const PixelFormat formats[] = {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kYuv422p,
                                 PixelFormat::kRgb24, PixelFormat::kBgra};
  for (int e = 1; e <= 8; ++e) {
    for (int f = 0; f < 5; ++f) {
      Job j{testing::MakeSyntheticFrame(161, 93, formats[f], 40 + e * 5 + f), {MakeRendition(0, 0, 85, Subsampling::k420)}};
      j.orientation = OrientationFromExif(e);
      jobs.push_back(std::move(j));
    }
  }
  Job portrait{testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kYuv420p, 90),
               {MakeRendition(0, 0, 85, Subsampling::k420), MakeRendition(360, 640, 80, Subsampling::k444)}};
  portrait.orientation = OrientationFromExif(6);
  jobs.push_back(std::move(portrait));
  Job upside{testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kNv12, 91),
             {MakeRendition(0, 0, 85, Subsampling::k422), MakeRendition(1280, 720, 80, Subsampling::k420)}};
  upside.orientation = OrientationFromExif(3);
  jobs.push_back(std::move(upside));
  Collector got;
  SubmitJobs(*worker, jobs, got);
  if (HasFatalFailure()) return;
  worker->Flush();
  const int checked = ExpectRenditionsMatchCpu(jobs, got);
  EXPECT_EQ(checked, 8 * 5 + 4);
  std::printf("turned renditions checked: %d\n", checked);
}

// Frames deinterlaced before their renditions (interlaced broadcast input): every YUV
// format, both field orders, a stream's first and last frames (the frame itself as its
// neighbour), a 1080p one turned and scaled after; three frames too big for a slot are
// refused up front.
TEST_P(WorkerTest, DeinterlacedFramesMatchTheHostStageAndTheCpuEncoder) {
  WorkerOptions options;
  options.max_launch_frames = 4;
  MAKE_OR_SKIP(worker, options);
  std::vector<Job> jobs;
  const PixelFormat formats[] = {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kYuv422p,
                                 PixelFormat::kYuv444p, PixelFormat::kYuvj420p};
  auto frame = [](int w, int h, PixelFormat f, uint32_t seed) {
    return std::make_shared<testing::SyntheticFrame>(testing::MakeSyntheticFrame(w, h, f, seed));
  };
  for (int f = 0; f < 5; ++f) {
    for (bool tff : {true, false}) {
      const uint32_t seed = 200 + f * 10 + tff;
      Job j{testing::MakeSyntheticFrame(161, 93, formats[f], seed), {MakeRendition(0, 0, 85, Subsampling::k420)}};
      j.prev = frame(161, 93, formats[f], seed + 1);
      j.next = f == 4 ? std::make_shared<testing::SyntheticFrame>(j.frame) : frame(161, 93, formats[f], seed + 2);
      j.top_field_first = tff;
      jobs.push_back(std::move(j));
    }
  }
  Job hd{testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kYuv420p, 300),
         {MakeRendition(0, 0, 85, Subsampling::k420), MakeRendition(360, 640, 80, Subsampling::k444)}};
  hd.prev = frame(1920, 1080, PixelFormat::kYuv420p, 301);
  hd.next = frame(1920, 1080, PixelFormat::kYuv420p, 302);
  hd.orientation = OrientationFromExif(6);
  jobs.push_back(std::move(hd));
  Collector got;
  SubmitJobs(*worker, jobs, got);
  if (HasFatalFailure()) return;
  worker->Flush();
  const int checked = ExpectRenditionsMatchCpu(jobs, got);
  EXPECT_EQ(checked, 5 * 2 + 2);
  std::printf("deinterlaced renditions checked: %d\n", checked);

  const auto big = testing::MakeSyntheticFrame(3840, 2160, PixelFormat::kYuv444p, 9);
  FrameRequest req;
  req.frame = big.view;
  req.renditions = {MakeRendition(0, 0, 85, Subsampling::k420)};
  req.deinterlace.enabled = true;
  req.deinterlace.prev = req.deinterlace.next = big.view;
  req.on_done = [](FrameResult&&) {};
  const Status refused = worker->Submit(std::move(req));
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused.ToString();
  EXPECT_NE(refused.message().find("more than this worker's slot holds"), std::string::npos) << refused.ToString();
}

// `n` 1080p yuv420p frames, each encoded at its size, 1280x720 and 640x360 (4:4:4).
std::vector<Job> LadderJobs(int n, uint32_t first_seed) {
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) {
    jobs.push_back({testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kYuv420p, first_seed + i),
                    {MakeRendition(0, 0, 85, Subsampling::k420), MakeRendition(1280, 720, 80, Subsampling::k420),
                     MakeRendition(640, 360, 75, Subsampling::k444)}});
  }
  return jobs;
}

// Three readback threads on each encode stream finish frames out of order; the worker
// still hands them over in submission order, every rendition whole.
TEST_P(WorkerTest, SeveralDeliveryThreadsKeepSubmissionOrder) {
  WorkerOptions options;
  options.delivery_threads_per_stream = 3;
  MAKE_OR_SKIP(worker, options);
  const auto cases = MixedCases(24);
  Collector got;
  SubmitAll(*worker, cases, got);
  if (HasFatalFailure()) return;
  ASSERT_EQ(got.results.size(), cases.size());
  for (size_t i = 0; i < got.order.size(); ++i) EXPECT_EQ(got.order[i], i);
  ExpectMatchesCpuEncoder(cases, got);
  const std::vector<Job> jobs = LadderJobs(6, 20);
  Collector ladder;
  SubmitJobs(*worker, jobs, ladder);
  if (HasFatalFailure()) return;
  worker->Flush();
  EXPECT_EQ(ExpectRenditionsMatchCpu(jobs, ladder), 18);
}

// Results lend their bytes from the pinned readback ring. A ring of 2 MiB holds under
// two ladder frames, and the collector keeps every result, so later frames find it full,
// some in the middle of a frame, and take the fallback path; bytes stay identical either
// way, and with no ring at all, also when the fallback's two band buffers hold 4 KiB
// each, so that every band goes through them in many pieces, each buffer refilled only
// after its previous copy's event. Once the results are dropped, the ring is used again.
TEST_P(WorkerTest, ResultsLendFromTheReadbackRingAndFallBackWhenItIsFull) {
  for (auto [ring_bytes, band_buffer] : {std::pair<size_t, size_t>{size_t{2} << 20, 0}, {0, 0}, {0, 4096}}) {
    SCOPED_TRACE("ring " + std::to_string(ring_bytes) + " bytes, band buffers " + std::to_string(band_buffer));
    WorkerOptions options;
    options.readback_ring_bytes = ring_bytes;
    options.test_band_buffer_bytes = band_buffer;
    MAKE_OR_SKIP(worker, options);
    const std::vector<Job> jobs = LadderJobs(5, 40);
    {
      Collector held;
      SubmitJobs(*worker, jobs, held);
      if (HasFatalFailure()) return;
      worker->Flush();
      EXPECT_EQ(ExpectRenditionsMatchCpu(jobs, held), 15);
    }
    const uint64_t fallbacks = worker->Stats().readback_ring_fallbacks;
    if (GetParam() == "gpu") {
      EXPECT_GT(fallbacks, 0u) << "the ring never filled";
    }
    Collector again;  // the first results are gone: one frame at a time fits the ring
    for (size_t i = 0; i < 2; ++i) {
      SubmitJobs(*worker, jobs, again, i, i + 1);
      if (HasFatalFailure()) return;
      worker->Flush();
      again.results.clear();
    }
    if (GetParam() == "gpu" && ring_bytes > 0) {
      EXPECT_EQ(worker->Stats().readback_ring_fallbacks, fallbacks) << "the ring was not given back";
    }
  }
}

// Holds the issue thread on the first group it takes until Release(), and records the
// size of every group, so that the frames submitted meanwhile queue behind it.
class IssueGate {
 public:
  std::function<void(int)> Hook() {
    return [this](int frames) {
      bool first;
      {
        std::lock_guard<std::mutex> lock(mu_);
        groups_.push_back(frames);
        first = groups_.size() == 1;
      }
      if (first) {
        entered_.set_value();
        released_.wait();
      }
    };
  }
  bool WaitEntered() { return entered_.get_future().wait_for(std::chrono::seconds(60)) == std::future_status::ready; }
  void Release() { release_.set_value(); }
  std::vector<int> groups() {
    std::lock_guard<std::mutex> lock(mu_);
    return groups_;
  }

 private:
  std::promise<void> release_, entered_;
  std::shared_future<void> released_ = release_.get_future().share();
  std::mutex mu_;
  std::vector<int> groups_;
};

// Eight slots, four frames a launch at most, and the gate on the issue thread.
WorkerOptions BatchingOptions(IssueGate& gate) {
  WorkerOptions options;
  options.slots = 8;
  options.max_launch_frames = 4;
  options.test_on_issue = gate.Hook();
  return options;
}

// Submits the first job, waits until the issue thread holds it, then submits the rest,
// releases the gate and waits for every frame.
void SubmitBehindGate(Worker& worker, IssueGate& gate, const std::vector<Job>& jobs, Collector& got) {
  SubmitJobs(worker, jobs, got, 0, 1);
  const bool held = gate.WaitEntered();
  if (held) SubmitJobs(worker, jobs, got, 1, jobs.size());
  gate.Release();
  ASSERT_TRUE(held) << "the issue thread never took the first frame";
  worker.Flush();
}

// Frames of one shape that are already queued share launches, with their renditions;
// a frame of another shape starts the next group. The first frame goes in alone, and
// the issue thread is held on it while the rest are submitted, which makes the groups
// certain: {A}, {A A}, {B}, {A A A A} with four frames a launch at most.
TEST_P(WorkerTest, QueuedFramesOfOneShapeShareLaunches) {
  if (GetParam() == "cpu") GTEST_SKIP() << "the CPU worker encodes each frame on its own: launches are a GPU matter";
  IssueGate gate;
  MAKE_OR_SKIP(worker, BatchingOptions(gate));
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) {
    if (i == 3) {
      jobs.push_back({testing::MakeSyntheticFrame(640, 360, PixelFormat::kNv12, 40 + i),
                      {MakeRendition(0, 0, 75, Subsampling::k444)}});
    } else {
      jobs.push_back({testing::MakeSyntheticFrame(1280, 720, PixelFormat::kYuv420p, 40 + i),
                      {MakeRendition(0, 0, 85, Subsampling::k420), MakeRendition(640, 360, 80, Subsampling::k422)}});
    }
  }
  Collector got;
  SubmitBehindGate(*worker, gate, jobs, got);
  if (HasFatalFailure()) return;
  EXPECT_EQ(gate.groups(), (std::vector<int>{1, 2, 1, 4}));
  const WorkerStats st = worker->Stats();
  EXPECT_EQ(st.launch_groups, 4u);
  EXPECT_EQ(st.launch_group_frames, 8u);
  ASSERT_EQ(got.results.size(), jobs.size());
  for (size_t i = 0; i < got.order.size(); ++i) EXPECT_EQ(got.order[i], i);
  EXPECT_EQ(ExpectRenditionsMatchCpu(jobs, got), 15);
}

// More bands than one launch carries: four frames of five renditions each (20 bands of
// five encodes in their last wave, past kMaxLaunchItems and kMaxLaunchPlans) split into
// several launches, with mixed qualities and subsamplings, and still match the CPU.
TEST_P(WorkerTest, RenditionLaddersPastALaunchsBoundsSplit) {
  if (GetParam() == "cpu") GTEST_SKIP() << "the CPU worker encodes each frame on its own: launches are a GPU matter";
  IssueGate gate;
  MAKE_OR_SKIP(worker, BatchingOptions(gate));
  std::vector<Job> jobs;
  for (int i = 0; i < 5; ++i) {
    jobs.push_back({testing::MakeSyntheticFrame(1280, 720, PixelFormat::kNv12, 60 + i),
                    {MakeRendition(0, 0, 85, Subsampling::k420), MakeRendition(960, 540, 70, Subsampling::k444),
                     MakeRendition(640, 360, 90, Subsampling::k420), MakeRendition(482, 270, 60, Subsampling::k422),
                     MakeRendition(318, 178, 95, Subsampling::k420)}});
  }
  Collector got;
  SubmitBehindGate(*worker, gate, jobs, got);
  if (HasFatalFailure()) return;
  EXPECT_EQ(gate.groups(), (std::vector<int>{1, 4}));
  for (size_t i = 0; i < got.order.size(); ++i) EXPECT_EQ(got.order[i], i);
  EXPECT_EQ(ExpectRenditionsMatchCpu(jobs, got), 25);
}

// A soak of faults: 160 jobs of mixed sizes, formats and renditions from four streams,
// while one of the worker's runtime calls fails every 17th time one is made. Each job
// comes back exactly once: failed by the fault that touched it (its status naming the
// call), or with every rendition byte-identical to the CPU reference. Each stream keeps
// its order, the GPU worker re-creates its streams after the faults, and once they stop
// no slot stays in use and the next jobs are all correct.
TEST_P(WorkerTest, AFaultSoakFailsOnlyTheFramesItTouched) {
  const std::vector<std::string> calls =
      GetParam() == "cpu" ? std::vector<std::string>{"cpu encode"}
                          : std::vector<std::string>{"hipMemcpyAsync(upload)", "launch band stages", "launch scale",
                                                     "hipMemcpyAsync(readback)"};
  std::atomic<bool> faulting{true};
  std::atomic<int> made{0}, fired{0};
  WorkerOptions options;
  options.test_fault = [&](const std::string& what) {
    if (!faulting.load() || std::find(calls.begin(), calls.end(), what) == calls.end()) return OkStatus();
    if (made.fetch_add(1) % 17 != 11) return OkStatus();
    fired.fetch_add(1);
    return Internal("injected fault");
  };
  MAKE_OR_SKIP(worker, options);
  const int sizes[][2] = {{640, 360}, {320, 240}, {17, 9}, {1280, 720}};
  const PixelFormat formats[] = {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kRgb24, PixelFormat::kBgra};
  std::vector<Job> jobs;
  for (int i = 0; i < 160; ++i) {
    const auto& sz = sizes[i % 4];
    Job job{testing::MakeSyntheticFrame(sz[0], sz[1], formats[(i / 4) % 4], 300 + i),
            {MakeRendition(0, 0, 60 + i % 40, static_cast<Subsampling>(i % 3))}};
    if (i % 3 == 0) job.renditions.push_back(MakeRendition(sz[0] / 2 + 1, sz[1] / 2 + 1, 80, Subsampling::k420));
    jobs.push_back(std::move(job));
  }
  const auto stream_of = [](size_t i) { return static_cast<uint64_t>(i % 4); };
  Collector got;
  for (size_t i = 0; i < jobs.size(); ++i) {
    FrameRequest req;
    req.id = i;
    req.frame = jobs[i].frame.view;
    req.renditions = jobs[i].renditions;
    req.stream = stream_of(i);
    req.on_done = got.Callback(*worker);
    ASSERT_TRUE(worker->Submit(std::move(req)).ok()) << "job " << i;
  }
  worker->Flush();
  faulting = false;
  ASSERT_EQ(got.order.size(), jobs.size()) << "every job comes back exactly once";
  ASSERT_EQ(got.results.size(), jobs.size());
  std::map<uint64_t, std::vector<uint64_t>> per_stream;
  for (uint64_t id : got.order) per_stream[stream_of(id)].push_back(id);
  for (const auto& [stream, ids] : per_stream) {
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << "stream " << stream << " out of order";
  }
  // The failed jobs: each names the injected fault and a call the hook fails.
  std::vector<Job> good_jobs;
  Collector good;
  int failed = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    FrameResult& r = got.results.at(i);
    if (r.status.ok()) {
      good.results[good_jobs.size()] = std::move(r);
      good_jobs.push_back(std::move(jobs[i]));
      continue;
    }
    ++failed;
    EXPECT_NE(r.status.message().find("injected fault"), std::string::npos) << "job " << i << ": " << r.status.ToString();
    const bool names_call = std::any_of(calls.begin(), calls.end(), [&](const std::string& c) {
      return r.status.message().find(c) != std::string::npos;
    });
    EXPECT_TRUE(names_call) << "job " << i << ": " << r.status.ToString();
  }
  std::printf("fault soak: %zu jobs, %d calls made, %d faults, %d jobs failed, %zu correct\n", jobs.size(),
              made.load(), fired.load(), failed, good_jobs.size());
  EXPECT_GE(fired.load(), 5);
  EXPECT_EQ(failed, fired.load()) << "a fault fails the one job it touched";
  int renditions = 0;
  for (const Job& j : good_jobs) renditions += static_cast<int>(j.renditions.size());
  EXPECT_EQ(ExpectRenditionsMatchCpu(good_jobs, good), renditions);
  got.results.clear();  // drops the results' leases on the readback ring
  good.results.clear();
  const WorkerStats st = worker->Stats();
  EXPECT_EQ(st.frames_failed, static_cast<uint64_t>(failed));
  EXPECT_EQ(st.pinned_in_use_bytes, 0u) << "a slot is still held";
  if (GetParam() == "gpu") {
    EXPECT_GE(st.restarts, 1u);
    std::printf("fault soak: %llu restarts of the GPU worker\n", static_cast<unsigned long long>(st.restarts));
  }
  // Afterwards: the worker serves as before.
  const auto after = MixedCases(10);
  Collector clean;
  SubmitAll(*worker, after, clean);
  if (HasFatalFailure()) return;
  ExpectMatchesCpuEncoder(after, clean);
}

INSTANTIATE_TEST_SUITE_P(Workers, WorkerTest, ::testing::Values("cpu", "gpu"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace conveyor

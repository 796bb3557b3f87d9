// The worker contract, run against the CPU worker everywhere and the GPU worker where a
// GPU is present (skipping with the runtime's reason elsewhere): output identical to
// the CPU encoder, no slot reused before its copy completed (poison), band readback
// ordered after its band, survival of an injected runtime error, backpressure, and
// refusal of bad input. The outputs of the order and rendition tests are also decoded by
// libjpeg-turbo and measured against the source (libjpeg_turbo_check.h). Free of FFmpeg
// and gRPC so it runs on the GPU host as built.
#include "worker_test_util.h"

namespace conveyor::worker_testing {
namespace {

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

INSTANTIATE_TEST_SUITE_P(Workers, WorkerTest, ::testing::Values("cpu", "gpu"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace conveyor::worker_testing

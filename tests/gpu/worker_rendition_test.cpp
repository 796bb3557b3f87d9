// The worker contract, continued (worker_test.cpp instantiates it for the CPU and the
// GPU worker): renditions, turned and deinterlaced frames against the CPU path, several
// delivery threads, the readback ring, shared launches, and a fault soak.
#include "worker_test_util.h"

namespace conveyor::worker_testing {
namespace {

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

}  // namespace
}  // namespace conveyor::worker_testing

// What the session stream tests share (session_test.cpp, session_buffers_test.cpp): the
// H.264 clip for container input (ClipEnvironment, registered once, in session_test.cpp),
// the job specs a client sends, the engine of one CPU worker under a scheduler and the
// session manager, the producers of raw and container input, whole streams with their
// checks, and the SessionTest fixture.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cpu_encoder.h"
#include "daemon_metrics.h"
#include "fake_reactor.h"
#include "job.h"
#include "metrics_registry.h"
#include "registration_counting_worker.h"
#include "scheduler.h"
#include "session_manager.h"
#include "stream_output.h"
#include "synthetic_frame.h"
#include "test_process.h"

namespace conveyor::session_test {

using std::chrono::milliseconds;

// Generous: TSan runs this 5 to 15 times slower, on two shared cores.
inline constexpr milliseconds kStreamTimeout{180000};

// ---------------------------------------------------------------------------------------
// The H.264 clip for container input: rendered once per process by /usr/bin/ffmpeg, as
// the media tests do, before any test starts threads (no fork under running threads).

inline constexpr int kClipWidth = 160, kClipHeight = 120, kClipFrames = 30;

class ClipEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_ = testing::MakeTempDir("conveyor-session-test");
    ASSERT_FALSE(dir_.empty());
    const std::string path = dir_ + "/clip.mkv";
    // B-frames (-bf 2) so the decoder reorders and pts are not in decode order.
    const std::string cmd = "/usr/bin/ffmpeg -nostdin -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=" +
                            std::to_string(kClipWidth) + "x" + std::to_string(kClipHeight) +
                            ":rate=25 -frames:v " + std::to_string(kClipFrames) +
                            " -c:v libx264 -preset ultrafast -bf 2 -g 12 -pix_fmt yuv420p -f matroska " + path;
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(path, std::ios::binary);
    clip_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ASSERT_GT(clip_.size(), 1000u);
  }
  void TearDown() override {
    if (dir_.empty()) return;
    std::remove((dir_ + "/clip.mkv").c_str());
    rmdir(dir_.c_str());
  }
  static const std::vector<uint8_t>& clip() { return clip_; }

 private:
  std::string dir_;
  inline static std::vector<uint8_t> clip_;
};

// ---------------------------------------------------------------------------------------
// Job specs, as a client sends them; the sessions parse them with ParseJobSpec.

// Raw yuv420p at w x h; rendition 0 the source size, rendition 1 half the width (the
// height follows the aspect ratio), which takes the worker's scaling path.
inline v1::JobSpec RawSpec(int width, int height) {
  v1::JobSpec spec;
  v1::RawInput* raw = spec.mutable_raw();
  raw->set_pixel_format(v1::PIXEL_FORMAT_YUV420P);
  raw->set_width(width);
  raw->set_height(height);
  raw->mutable_frame_rate()->set_num(25);
  raw->mutable_frame_rate()->set_den(1);
  spec.add_renditions()->set_name("source");
  v1::RenditionSpec* half = spec.add_renditions();
  half->set_name("half");
  half->set_width(width / 2);
  half->set_quality(70);
  spec.set_client_label("session_test " + std::to_string(width) + "x" + std::to_string(height));
  return spec;
}

inline v1::JobSpec ContainerSpec() {
  v1::JobSpec spec;
  spec.mutable_container()->set_format_hint("matroska");
  spec.add_renditions()->set_name("source");
  return spec;
}

// ---------------------------------------------------------------------------------------
// The engine: one CPU worker under a scheduler and the session manager, with metrics on
// as in conveyord, so the session meter's counting runs under TSan too.

struct EngineOptions {
  int worker_slots = 4;
  SessionOptions session;
  std::function<Status(const std::string& call)> worker_fault;  // the CPU worker's test hook
  // The CPU worker behind a RegistrationCountingWorker, which says it is the CPU worker or,
  // with `as_gpu`, a GPU worker (to which the manager lends registered memory for
  // assembling frames).
  bool count_registrations = false;
  bool as_gpu = false;
};

inline SessionOptions TestSessionOptions() {
  SessionOptions o;
  o.queue_frames = 4;
  o.message_bytes = 256;  // every JPEG travels in several packets
  o.input_bytes = 8 << 10;  // smaller than the clip: the byte queue fills and resumes
  return o;
}

class Engine {
 public:
  explicit Engine(EngineOptions options) {
    WorkerOptions wo;
    wo.slots = options.worker_slots;
    wo.cpu_threads = 2;
    wo.max_width = 640;
    wo.max_height = 480;
    wo.test_fault = options.worker_fault;
    std::vector<std::unique_ptr<Worker>> workers;
    std::unique_ptr<Worker> worker = MakeCpuWorker(wo);
    if (options.count_registrations) {
      const WorkerInfo gpu{WorkerKind::kGpu, "hip-nvidia", 0, "test gpu", 0};
      auto counting = options.as_gpu ? std::make_unique<RegistrationCountingWorker>(std::move(worker), gpu)
                                     : std::make_unique<RegistrationCountingWorker>(std::move(worker));
      counting_ = counting.get();
      worker = std::move(counting);
    }
    workers.push_back(std::move(worker));
    scheduler_ = std::make_unique<Scheduler>(std::move(workers));
    StatusOr<metrics::DaemonMetrics> dm = metrics::DaemonMetrics::Create(registry_, {"test", "none"});
    EXPECT_TRUE(dm.ok()) << dm.status().ToString();
    if (dm.ok()) {
      daemon_metrics_ = std::make_unique<metrics::DaemonMetrics>(std::move(dm).value());
      StatusOr<metrics::DeviceMetrics> device = daemon_metrics_->ForDevice("cpu");
      EXPECT_TRUE(device.ok()) << device.status().ToString();
      context_.daemon = daemon_metrics_.get();
      if (device.ok()) context_.devices.push_back(*device);
      context_.device_labels.push_back("cpu");
    }
    manager_ = std::make_unique<SessionManager>(scheduler_.get(), options.session, SessionLimits{64, 600});
    manager_->SetMetrics(&context_);
  }

  SessionManager& manager() { return *manager_; }
  RegistrationCountingWorker* counting() { return counting_; }

  // Every lane detached and empty, and the worker holds no frame: what a session that
  // ended leaves behind once its last reference is gone.
  void ExpectNothingHeld() {
    scheduler_->worker(0).worker->Flush();
    // A weak_ptr expires before the object's destructor has run, so the last session's
    // lane may be released a moment after ExpectReleased saw the session gone.
    Scheduler::WorkerLoad load = scheduler_->Load(0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (load.lanes > 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      load = scheduler_->Load(0);
    }
    EXPECT_EQ(load.lanes, 0);
    EXPECT_EQ(load.queued, 0);
    const WorkerStats stats = scheduler_->worker(0).worker->Stats();
    EXPECT_EQ(stats.in_flight, 0);
    EXPECT_EQ(manager_->active(), 0);
  }

 private:
  metrics::Registry registry_;  // before what holds handles into it
  std::unique_ptr<metrics::DaemonMetrics> daemon_metrics_;
  SessionMetricsContext context_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<SessionManager> manager_;
  RegistrationCountingWorker* counting_ = nullptr;  // the scheduler owns it
};

inline std::shared_ptr<Session> CreateSession(Engine& engine, const v1::JobSpec& spec) {
  StatusOr<std::shared_ptr<Session>> s = engine.manager().Create(spec, "");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// The session object is gone: the pipeline thread ended and the worker delivered (or
// dropped) every frame that held a reference. That releases its lane.
inline void ExpectReleased(std::weak_ptr<Session> weak) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!weak.expired() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_TRUE(weak.expired()) << "the session is still referenced after its end";
}

// ---------------------------------------------------------------------------------------
// Producers: the client's side of the input, run on their own threads.

struct RawInput {
  int width = 0, height = 0;
  int frames = 0;
  int chunks_per_frame = 3;
  int64_t first_pts = 7, pts_step = 2;  // not 0, 1, 2...: the output must echo them
  std::vector<testing::SyntheticFrame> content;  // distinct frames, used in turn

  int64_t Pts(int i) const { return first_pts + pts_step * i; }
  const testing::SyntheticFrame& Frame(int i) const { return content[i % content.size()]; }
};

inline RawInput MakeRawInput(int width, int height, int frames) {
  RawInput in;
  in.width = width;
  in.height = height;
  in.frames = frames;
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    in.content.push_back(testing::MakeSyntheticFrame(width, height, PixelFormat::kYuv420p, seed, ColorMatrix::kBt601,
                                                     ColorRange::kLimited));
  }
  return in;
}

// Sends the frames chunk by chunk, then half-closes. Returns the frames the stream took
// whole (fewer when it ended early, e.g. after a cancel).
inline int FeedRaw(FakeReactor& reactor, const RawInput& in) {
  for (int i = 0; i < in.frames; ++i) {
    const std::vector<uint8_t>& bytes = in.Frame(i).bytes;
    const size_t chunk = (bytes.size() + in.chunks_per_frame - 1) / in.chunks_per_frame;
    for (size_t offset = 0; offset < bytes.size(); offset += chunk) {
      const size_t n = std::min(chunk, bytes.size() - offset);
      v1::TranscodeRequest request;
      v1::RawFrameChunk* c = request.mutable_frame_chunk();
      c->set_pts(in.Pts(i));
      c->set_data(bytes.data() + offset, n);
      c->set_end_of_frame(offset + n == bytes.size());
      if (!reactor.Read(std::move(request))) return i;
    }
  }
  reactor.HalfClose();
  return in.frames;
}

inline void FeedContainer(FakeReactor& reactor, const std::vector<uint8_t>& data, size_t chunk = 4096) {
  for (size_t offset = 0; offset < data.size(); offset += chunk) {
    v1::TranscodeRequest request;
    request.set_container_chunk(data.data() + offset, std::min(chunk, data.size() - offset));
    if (!reactor.Read(std::move(request))) return;
  }
  reactor.HalfClose();
}

// ---------------------------------------------------------------------------------------
// Whole streams with their checks; the tests run several at once.

// A raw stream to its end: every frame of every rendition comes back once, in pts order;
// rendition 0 holds exactly the CPU encoder's bytes for that frame and rendition 1
// decodes at half the size.
inline void RunRawStream(Engine& engine, int width, int height, int frames) {
  SCOPED_TRACE(std::to_string(width) + "x" + std::to_string(height));
  const v1::JobSpec spec = RawSpec(width, height);
  StatusOr<Job> job = ParseJobSpec(spec, JobLimits{});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const RawInput input = MakeRawInput(width, height, frames);
  std::shared_ptr<Session> session = CreateSession(engine, spec);
  ASSERT_NE(session, nullptr);
  std::weak_ptr<Session> weak = session;

  std::vector<v1::TranscodeResponse> written;
  {
    FakeReactor reactor(session, &engine.manager());
    reactor.Start();
    int fed = 0;
    std::thread producer([&] { fed = FeedRaw(reactor, input); });
    const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
    producer.join();
    ASSERT_TRUE(closed.has_value()) << "the stream did not end";
    ASSERT_TRUE(closed->ok()) << closed->ToString();
    EXPECT_EQ(fed, frames);
    written = reactor.Written();
    EXPECT_EQ(session->queue_depth(), 0);
  }
  session.reset();
  ExpectReleased(weak);

  const StreamOutput out = Reassemble(written, 2);
  EXPECT_EQ(out.problems, "");
  EXPECT_FALSE(out.ends_inside_frame);
  EXPECT_TRUE(out.started_first);
  EXPECT_EQ(out.source_codec, "rawvideo");
  ASSERT_TRUE(out.has_summary);
  EXPECT_EQ(out.summary.frames_in(), static_cast<uint64_t>(frames));
  EXPECT_EQ(out.summary.frames_out(), static_cast<uint64_t>(frames));

  CpuJpegEncoder reference(1);
  std::vector<std::vector<uint8_t>> expected;  // rendition 0 of each distinct frame
  for (const testing::SyntheticFrame& f : input.content) {
    StatusOr<std::vector<uint8_t>> jpeg = reference.Encode(f.view, job->renditions[0].params);
    ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
    expected.push_back(std::move(jpeg).value());
  }
  for (size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE("rendition " + std::to_string(k));
    const std::vector<OutputFrame>& got = out.renditions[k];
    ASSERT_EQ(got.size(), static_cast<size_t>(frames));
    for (int i = 0; i < frames; ++i) {
      EXPECT_EQ(got[i].index, static_cast<uint64_t>(i));
      EXPECT_EQ(got[i].pts, input.Pts(i));
      if (k == 0) {
        EXPECT_TRUE(got[i].jpeg == expected[i % expected.size()]) << "frame " << i << " differs from the CPU encoder";
      } else {
        const Decoded d = DecodeJpeg(got[i].jpeg);
        EXPECT_TRUE(d.ok) << "frame " << i;
        EXPECT_EQ(d.width, width / 2);
        EXPECT_EQ(d.height, height / 2);
      }
    }
  }
}

// The H.264 clip to its end: every frame comes back, decodes at the clip's size, in
// increasing pts order.
inline void RunContainerStream(Engine& engine) {
  std::shared_ptr<Session> session = CreateSession(engine, ContainerSpec());
  ASSERT_NE(session, nullptr);
  std::weak_ptr<Session> weak = session;
  std::vector<v1::TranscodeResponse> written;
  {
    FakeReactor reactor(session, &engine.manager());
    reactor.Start();
    std::thread producer([&] { FeedContainer(reactor, ClipEnvironment::clip()); });
    const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
    producer.join();
    ASSERT_TRUE(closed.has_value()) << "the stream did not end";
    ASSERT_TRUE(closed->ok()) << closed->ToString();
    written = reactor.Written();
  }
  session.reset();
  ExpectReleased(weak);

  const StreamOutput out = Reassemble(written, 1);
  EXPECT_EQ(out.problems, "");
  EXPECT_FALSE(out.ends_inside_frame);
  EXPECT_TRUE(out.started_first);
  EXPECT_EQ(out.source_codec, "h264");
  ASSERT_TRUE(out.has_summary);
  EXPECT_EQ(out.summary.frames_in(), static_cast<uint64_t>(kClipFrames));
  EXPECT_EQ(out.summary.bytes_in(), ClipEnvironment::clip().size());
  const std::vector<OutputFrame>& got = out.renditions[0];
  ASSERT_EQ(got.size(), static_cast<size_t>(kClipFrames));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].index, i);
    if (i > 0) {
      EXPECT_GT(got[i].pts, got[i - 1].pts) << "frame " << i;
    }
    const Decoded d = DecodeJpeg(got[i].jpeg);
    EXPECT_TRUE(d.ok) << "frame " << i;
    EXPECT_EQ(d.width, kClipWidth);
    EXPECT_EQ(d.height, kClipHeight);
  }
}

// ---------------------------------------------------------------------------------------
// The fixture: one engine per test, which holds nothing once the test ends.

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() : engine_(EngineOptions{4, TestSessionOptions()}) {}
  void TearDown() override { engine_.ExpectNothingHeld(); }
  Engine engine_;
};

}  // namespace conveyor::session_test

// Sessions driven directly, several at once, through the rpc reactor's call pattern
// (FakeReactor) over a real scheduler, CPU worker and session manager: raw and container
// input, Cancel from another thread mid-stream, output backpressure from a client that
// stops reading, and sessions sharing one worker. No gRPC server or client, so the tsan
// stage runs these and TSan sees the session layer's own threads (pipeline, dispatcher,
// delivery, writer).
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
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

namespace conveyor {
namespace {

using session_test::Decoded;
using session_test::DecodeJpeg;
using session_test::FakeReactor;
using session_test::OutputFrame;
using session_test::Reassemble;
using session_test::RegistrationCountingWorker;
using session_test::StreamOutput;
using std::chrono::milliseconds;

// Generous: TSan runs this 5 to 15 times slower, on two shared cores.
constexpr milliseconds kStreamTimeout{180000};

// ---------------------------------------------------------------------------------------
// The H.264 clip for container input: rendered once per process by /usr/bin/ffmpeg, as
// the media tests do, before any test starts threads (no fork under running threads).

constexpr int kClipWidth = 160, kClipHeight = 120, kClipFrames = 30;

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
  static std::vector<uint8_t> clip_;
};
std::vector<uint8_t> ClipEnvironment::clip_;
[[maybe_unused]] ::testing::Environment* const clip_environment =
    ::testing::AddGlobalTestEnvironment(new ClipEnvironment);

// ---------------------------------------------------------------------------------------
// Job specs, as a client sends them; the sessions parse them with ParseJobSpec.

// Raw yuv420p at w x h; rendition 0 the source size, rendition 1 half the width (the
// height follows the aspect ratio), which takes the worker's scaling path.
v1::JobSpec RawSpec(int width, int height) {
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

v1::JobSpec ContainerSpec() {
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

SessionOptions TestSessionOptions() {
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

std::shared_ptr<Session> CreateSession(Engine& engine, const v1::JobSpec& spec) {
  StatusOr<std::shared_ptr<Session>> s = engine.manager().Create(spec, "");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

// The session object is gone: the pipeline thread ended and the worker delivered (or
// dropped) every frame that held a reference. That releases its lane.
void ExpectReleased(std::weak_ptr<Session> weak) {
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

RawInput MakeRawInput(int width, int height, int frames) {
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
int FeedRaw(FakeReactor& reactor, const RawInput& in) {
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

void FeedContainer(FakeReactor& reactor, const std::vector<uint8_t>& data, size_t chunk = 4096) {
  for (size_t offset = 0; offset < data.size(); offset += chunk) {
    v1::TranscodeRequest request;
    request.set_container_chunk(data.data() + offset, std::min(chunk, data.size() - offset));
    if (!reactor.Read(std::move(request))) return;
  }
  reactor.HalfClose();
}

// ---------------------------------------------------------------------------------------
// Whole streams with their checks; the tests below run several at once.

// A raw stream to its end: every frame of every rendition comes back once, in pts order;
// rendition 0 holds exactly the CPU encoder's bytes for that frame and rendition 1
// decodes at half the size.
void RunRawStream(Engine& engine, int width, int height, int frames) {
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
void RunContainerStream(Engine& engine) {
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

class SessionTest : public ::testing::Test {
 protected:
  SessionTest() : engine_(EngineOptions{4, TestSessionOptions()}) {}
  void TearDown() override { engine_.ExpectNothingHeld(); }
  Engine engine_;
};

TEST_F(SessionTest, RawFramesComeBackOnceInPtsOrder64x48) { RunRawStream(engine_, 64, 48, 24); }
TEST_F(SessionTest, RawFramesComeBackOnceInPtsOrder160x120) { RunRawStream(engine_, 160, 120, 24); }

TEST_F(SessionTest, ContainerInputGivesEveryFrame) { RunContainerStream(engine_); }

// Four raw sizes and the clip at once on the one CPU worker, each from its own producer.
TEST_F(SessionTest, SessionsShareOneWorker) {
  const std::pair<int, int> sizes[] = {{64, 48}, {96, 72}, {128, 96}, {160, 120}};
  std::vector<std::thread> streams;
  for (const auto& [w, h] : sizes) {
    streams.emplace_back([this, w = w, h = h] { RunRawStream(engine_, w, h, 20); });
  }
  streams.emplace_back([this] { RunContainerStream(engine_); });
  for (std::thread& t : streams) t.join();
}

// Cancel from a third thread while the producer still pushes and the writer still
// writes, at several points (before any output, after a few frames, later), on raw and
// container sessions at once. Each ends with the cancel status and leaves no frame in
// its lane, the scheduler or the worker.
TEST_F(SessionTest, CancelMidStreamEndsWithTheCancelStatus) {
  struct Case {
    bool container;
    uint64_t cancel_after_frames;  // frames out before the cancel
    bool via_manager;              // CancelSession's path, else the reactor's OnCancel
  };
  const Case cases[] = {{false, 0, true}, {false, 1, false}, {false, 6, true}, {false, 15, false}, {true, 3, true}};
  std::vector<std::thread> streams;
  for (const Case& c : cases) {
    streams.emplace_back([this, c] {
      SCOPED_TRACE(std::string(c.container ? "container" : "raw") + ", cancel after " +
                   std::to_string(c.cancel_after_frames) + " frames");
      const int frames = 400;  // far more than get through before the cancel
      std::shared_ptr<Session> session = CreateSession(engine_, c.container ? ContainerSpec() : RawSpec(160, 120));
      ASSERT_NE(session, nullptr);
      std::weak_ptr<Session> weak = session;
      const Status cancel = c.via_manager ? Status(StatusCode::kCancelled, "cancelled by CancelSession")
                                          : Status(StatusCode::kCancelled, "cancelled by the client");
      {
        FakeReactor reactor(session, &engine_.manager());
        reactor.Start();
        std::atomic<bool> input_done{false}, cancelled{false};
        std::thread producer([&] {
          if (c.container) {
            // The clip in small chunks, and no half-close before the cancel: the clip is
            // short, and the session must not be able to finish before the cancel.
            const std::vector<uint8_t>& clip = ClipEnvironment::clip();
            for (size_t offset = 0; offset < clip.size(); offset += 1024) {
              v1::TranscodeRequest request;
              request.set_container_chunk(clip.data() + offset, std::min<size_t>(1024, clip.size() - offset));
              if (!reactor.Read(std::move(request))) return;
            }
            while (!cancelled.load()) std::this_thread::sleep_for(milliseconds(1));
            reactor.HalfClose();
          } else {
            FeedRaw(reactor, MakeRawInput(160, 120, frames));
            input_done = true;
          }
        });
        std::thread canceller([&] {
          while (session->frames_out() < c.cancel_after_frames && !session->finished()) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
          }
          EXPECT_FALSE(input_done.load()) << "input ended before the cancel";
          if (c.via_manager) {
            EXPECT_TRUE(engine_.manager().Cancel(session->id()).ok());
          } else {
            session->Cancel(cancel);
          }
          cancelled = true;
        });
        const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
        canceller.join();
        producer.join();
        ASSERT_TRUE(closed.has_value()) << "the stream did not end";
        EXPECT_EQ(closed->code(), StatusCode::kCancelled) << closed->ToString();
        EXPECT_EQ(closed->message(), cancel.message());
        EXPECT_LT(session->frames_out(), static_cast<uint64_t>(frames));
        EXPECT_EQ(session->queue_depth(), 0);
        const StreamOutput out = Reassemble(reactor.Written(), c.container ? 1 : 2);
        // Well formed to the end: the close waits for a frame the worker is delivering.
        EXPECT_EQ(out.problems, "");
        EXPECT_FALSE(out.ends_inside_frame);
        EXPECT_FALSE(out.has_summary);
      }
      session.reset();
      ExpectReleased(weak);
    });
  }
  for (std::thread& t : streams) t.join();
}

// A session that fails while the worker holds its frames ends only once the worker has
// given them back, so that its end (the client's status, the session count) means its
// slots are free. The CPU worker's per-frame test hook holds the frames at a gate.
TEST(SessionEnd, AFailedSessionEndsOnlyOnceTheWorkerHasReturnedItsFrames) {
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    int held = 0;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  EngineOptions options{4, TestSessionOptions(), nullptr};
  options.worker_fault = [gate](const std::string&) {
    std::unique_lock<std::mutex> lock(gate->mu);
    ++gate->held;
    gate->cv.notify_all();
    gate->cv.wait(lock, [&] { return gate->open; });
    return OkStatus();
  };
  Engine engine(options);
  std::shared_ptr<Session> session = CreateSession(engine, RawSpec(64, 48));
  ASSERT_NE(session, nullptr);
  std::weak_ptr<Session> weak = session;
  {
    FakeReactor reactor(session, &engine.manager());
    reactor.Start();
    std::thread producer([&] { FeedRaw(reactor, MakeRawInput(64, 48, 12)); });
    {
      std::unique_lock<std::mutex> lock(gate->mu);
      ASSERT_TRUE(gate->cv.wait_for(lock, kStreamTimeout, [&] { return gate->held > 0; }))
          << "no frame reached the worker";
    }
    session->Cancel(Status(StatusCode::kCancelled, "cancelled by the test"));
    EXPECT_FALSE(reactor.WaitClosed(milliseconds(300)).has_value())
        << "the stream ended while the worker held a frame of it";
    EXPECT_FALSE(session->finished());
    {
      std::lock_guard<std::mutex> lock(gate->mu);
      gate->open = true;
    }
    gate->cv.notify_all();
    const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
    producer.join();
    ASSERT_TRUE(closed.has_value()) << "the stream did not end once the worker let go";
    EXPECT_EQ(closed->code(), StatusCode::kCancelled) << closed->ToString();
    EXPECT_EQ(closed->message(), "cancelled by the test");
    const StreamOutput out = Reassemble(reactor.Written(), 2);
    EXPECT_EQ(out.problems, "");
    EXPECT_FALSE(out.ends_inside_frame);
  }
  session.reset();
  ExpectReleased(weak);
  engine.ExpectNothingHeld();
}

// A client that stops reading: with writes held, the session stops submitting once
// output waits unwritten, the worker drains, the raw queue fills and the reactor's reads
// pause. Once writes resume, every frame comes out in order and the stream ends OK.
// JPEGs into the session's shared-memory slots (JpegFramesOutput.shared_memory_slots),
// released by the client as it reads them while the worker's delivery thread writes the
// next ones: TSan runs this. The attach goes straight to the session here; the e2e
// tests take the attach socket.
TEST_F(SessionTest, JpegsInSharedSlotsAreTheEncodersAndEverySlotGoesBack) {
  constexpr int kWidth = 64, kHeight = 48, kFrames = 16;
  engine_.manager().SetSharedMemorySocket("/nonexistent/conveyord.frames.sock");  // only named in Started
  v1::JobSpec spec = RawSpec(kWidth, kHeight);
  spec.mutable_output()->mutable_frames()->set_shared_memory_slots(3);
  StatusOr<Job> job = ParseJobSpec(spec, JobLimits{});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  StatusOr<std::shared_ptr<Session>> created = engine_.manager().Create(spec, "", /*unix_peer=*/true);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::shared_ptr<Session> session = std::move(created).value();
  std::weak_ptr<Session> weak = session;
  const RawInput input = MakeRawInput(kWidth, kHeight, kFrames);

  std::vector<std::vector<uint8_t>> got[2];
  std::string client_error;
  {
    FakeReactor reactor(session, &engine_.manager());
    reactor.Start();
    std::thread client([&] {
      // Waits for `n` responses written; false after the stream's timeout.
      auto wait_written = [&](size_t n) {
        const auto deadline = std::chrono::steady_clock::now() + kStreamTimeout;
        while (reactor.Written().size() < n && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(milliseconds(1));
        }
        return reactor.Written().size() >= n;
      };
      if (!wait_written(1) || !reactor.Written()[0].has_started()) {
        client_error = "no Started";
        return;
      }
      const v1::SharedMemoryOutput shm = reactor.Written()[0].started().shared_memory_output();
      StatusOr<UniqueFd> fd = session->AttachSharedMemory(-1);
      if (!fd.ok() || !fd->valid()) {
        client_error = "attach: " + (fd.ok() ? std::string("no descriptor") : fd.status().ToString());
        return;
      }
      const size_t length = static_cast<size_t>(shm.slots()) * shm.slot_bytes();
      void* mapped = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd->get(), 0);
      if (mapped == MAP_FAILED) {
        client_error = "mmap failed";
        return;
      }
      const auto* base = static_cast<const uint8_t*>(mapped);
      size_t seen = 1;
      for (int i = 0; i < kFrames && client_error.empty(); ++i) {
        v1::TranscodeRequest frame;
        v1::RawFrameChunk* c = frame.mutable_frame_chunk();
        c->set_pts(input.Pts(i));
        c->set_data(input.Frame(i).bytes.data(), input.Frame(i).bytes.size());
        c->set_end_of_frame(true);
        if (!reactor.Read(std::move(frame))) break;
        // This frame's two JPEGs, each read out of its slot and released.
        for (int packets = 0; packets < 2 && client_error.empty();) {
          if (!wait_written(seen + 1)) {
            client_error = "frame " + std::to_string(i) + ": no output";
            break;
          }
          const v1::TranscodeResponse r = reactor.Written()[seen++];
          if (!r.has_packet()) continue;
          const v1::OutputPacket& p = r.packet();
          if (!p.has_shared() || p.rendition() > 1 || p.shared().size() > shm.slot_bytes()) {
            client_error = "frame " + std::to_string(i) + ": a packet not in a slot";
            break;
          }
          const uint8_t* jpeg = base + static_cast<size_t>(p.shared().slot()) * shm.slot_bytes();
          got[p.rendition()].emplace_back(jpeg, jpeg + p.shared().size());
          v1::TranscodeRequest release;
          release.mutable_output_slot_released()->set_slot(p.shared().slot());
          if (!reactor.Read(std::move(release))) client_error = "release refused";
          ++packets;
        }
      }
      munmap(mapped, length);
      reactor.HalfClose();
    });
    const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
    client.join();
    ASSERT_TRUE(closed.has_value()) << "the stream did not end";
    ASSERT_TRUE(closed->ok()) << closed->ToString();
  }
  session.reset();
  ExpectReleased(weak);
  ASSERT_EQ(client_error, "");
  ASSERT_EQ(got[0].size(), static_cast<size_t>(kFrames));
  ASSERT_EQ(got[1].size(), static_cast<size_t>(kFrames));
  CpuJpegEncoder reference(1);
  for (int i = 0; i < kFrames; ++i) {
    StatusOr<std::vector<uint8_t>> want = reference.Encode(input.Frame(i).view, job->renditions[0].params);
    ASSERT_TRUE(want.ok());
    EXPECT_TRUE(got[0][i] == *want) << "frame " << i << " differs from the CPU encoder";
    const Decoded d = DecodeJpeg(got[1][i]);
    EXPECT_TRUE(d.ok) << "frame " << i;
    EXPECT_EQ(d.width, kWidth / 2);
  }
}

// Raw frames that come in messages are assembled in buffers registered with a GPU
// worker, which uploads them from there; here a CPU worker posing as a GPU counts the
// frames that arrive in registered memory. The JPEGs are the encoder's bytes as before
// (RunRawStream). The second session of the same size takes the first one's ring,
// registered once; the pool lets it go when it has been idle long enough.
TEST(SessionAssembly, FramesInMessagesAreAssembledInRegisteredBuffers) {
  EngineOptions options{4, TestSessionOptions()};
  options.count_registrations = true;
  options.as_gpu = true;
  Engine engine(options);
  RegistrationCountingWorker& w = *engine.counting();
  uint64_t ring_bytes = 0;
  for (int round = 0; round < 2; ++round) {
    RunRawStream(engine, 160, 120, 24);
    engine.ExpectNothingHeld();
    EXPECT_EQ(w.registrations(), 1) << "one ring for both sessions";
    EXPECT_EQ(w.live_registrations(), 1) << "kept for the next session";
    EXPECT_EQ(engine.manager().assembly_rings().idle_rings(), 1);
    if (round == 0) ring_bytes = engine.manager().assembly_rings().idle_bytes();
    EXPECT_GT(ring_bytes, 0u);
    EXPECT_EQ(engine.manager().assembly_rings().idle_bytes(), ring_bytes);
    EXPECT_EQ(engine.manager().assembly_rings().in_use_bytes(), 0u) << "no session holds it";
    // The ring is made when the session's thread starts, so up to queue_frames + 1
    // frames may come before it and be assembled in the heap, and a producer faster than
    // the worker can find every buffer in use; but the first ring-full after it is made
    // (10 buffers) all come from it.
    EXPECT_GE(w.frames_in_registered(), 10 * (round + 1)) << w.frames() << " frames";
  }
  EXPECT_EQ(engine.manager().assembly_rings().Trim(AssemblyRingPool::Clock::now() + std::chrono::seconds(1)), 1);
  EXPECT_EQ(w.live_registrations(), 0);
  EXPECT_EQ(engine.manager().assembly_rings().idle_bytes(), 0u);
}

TEST(SessionAssembly, NoRegisteredBuffersOnTheCpuWorkerOrPastTheBudget) {
  for (const bool cpu : {true, false}) {
    SCOPED_TRACE(cpu ? "cpu worker" : "a budget too small for one ring");
    EngineOptions options{4, TestSessionOptions()};
    options.count_registrations = true;
    options.as_gpu = !cpu;
    if (!cpu) options.session.pinned_input_bytes = 160 * 120 * 3 / 2;
    Engine engine(options);
    RunRawStream(engine, 160, 120, 12);
    engine.ExpectNothingHeld();
    EXPECT_EQ(engine.counting()->registrations(), 0);
    EXPECT_EQ(engine.counting()->frames_in_registered(), 0);
    EXPECT_EQ(engine.manager().assembly_rings().in_use_bytes(), 0u);
  }
}

TEST_F(SessionTest, OutputBackpressureHoldsThenResumes) {
  constexpr int kFrames = 48, kSlots = 4;
  SessionOptions options = TestSessionOptions();
  options.output_bytes = 1;  // any unwritten payload stops new frames
  Engine engine(EngineOptions{kSlots, options});
  const RawInput input = MakeRawInput(160, 120, kFrames);
  std::shared_ptr<Session> session = CreateSession(engine, RawSpec(160, 120));
  ASSERT_NE(session, nullptr);
  std::weak_ptr<Session> weak = session;
  {
    FakeReactor reactor(session, &engine.manager());
    reactor.HoldWrites(true);
    reactor.Start();
    std::thread producer([&] { FeedRaw(reactor, input); });

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!(reactor.ReadingPaused() && session->frames_out() > 0) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    // Time enough for the worker to encode every frame, were the session not holding back.
    std::this_thread::sleep_for(milliseconds(1500));
    EXPECT_TRUE(reactor.ReadingPaused()) << "input never backed up";
    EXPECT_TRUE(reactor.Written().empty());
    EXPECT_GT(reactor.Unwritten(), 0u);
    // Frames that passed the output check before the first output: the lane's queue, the
    // worker's slots, the one the dispatcher holds in Worker::Submit and the one the
    // pipeline thread holds in Lane::Submit.
    const uint64_t bound = options.queue_frames + kSlots + 2;
    EXPECT_GE(session->frames_out(), 1u);
    EXPECT_LE(session->frames_out(), bound);
    // ...plus at most the raw queue and one frame being assembled on the input side.
    EXPECT_LE(session->frames_in(), bound + 1);

    reactor.HoldWrites(false);
    const std::optional<Status> closed = reactor.WaitClosed(kStreamTimeout);
    producer.join();
    ASSERT_TRUE(closed.has_value()) << "the stream did not end after writes resumed";
    ASSERT_TRUE(closed->ok()) << closed->ToString();
    const StreamOutput out = Reassemble(reactor.Written(), 2);
    EXPECT_EQ(out.problems, "");
    EXPECT_FALSE(out.ends_inside_frame);
    for (size_t k = 0; k < 2; ++k) {
      ASSERT_EQ(out.renditions[k].size(), static_cast<size_t>(kFrames));
      for (int i = 0; i < kFrames; ++i) {
        EXPECT_EQ(out.renditions[k][i].index, static_cast<uint64_t>(i));
        EXPECT_EQ(out.renditions[k][i].pts, input.Pts(i));
      }
    }
  }
  session.reset();
  ExpectReleased(weak);
  engine.ExpectNothingHeld();
}

}  // namespace
}  // namespace conveyor

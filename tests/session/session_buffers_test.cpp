// Sessions' buffers, driven as in session_test.cpp (helpers in session_test_util.h):
// JPEGs in the session's shared-memory slots, raw frames assembled in buffers registered
// with the worker, and output back-pressure from a client that stops reading.
#include <sys/mman.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "session_test_util.h"

namespace conveyor::session_test {
namespace {

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
// A client that stops reading: with writes held, the session stops submitting once
// output waits unwritten, the worker drains, the raw queue fills and the reactor's reads
// pause. Once writes resume, every frame comes out in order and the stream ends OK.
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
}  // namespace conveyor::session_test

// End-to-end: JPEGs written into the daemon's shared-memory slots
// (JpegFramesOutput.shared_memory_slots) on the real conveyord, read by the client side
// written from the proto (shared_frames_client.h). Output is checked against the CPU
// encoder's bytes, as for JPEGs sent in messages.
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "cpu_encoder.h"
#include "daemon_suite.h"
#include "shared_frames_client.h"
#include "synthetic_frame.h"
#include "transcode_client.h"

namespace conveyor::e2e {
namespace {

constexpr int kWidth = 96, kHeight = 64;
constexpr int kQualities[] = {90, 60};

// Raw yuv420p frames, in shared memory when `input_slots` > 0, and two renditions of
// the source size (qualities 90 and 60) into `output_slots` JPEG slots.
v1::JobSpec Spec(uint32_t input_slots, uint32_t output_slots) {
  v1::JobSpec spec = RawYuv420pSpec(kWidth, kHeight, input_slots);
  for (int q : kQualities) spec.add_renditions()->set_quality(static_cast<uint32_t>(q));
  spec.mutable_output()->mutable_frames()->set_shared_memory_slots(output_slots);
  return spec;
}

std::vector<testing::SyntheticFrame> Frames(int n) {
  std::vector<testing::SyntheticFrame> frames;
  for (int i = 0; i < n; ++i) {
    frames.push_back(testing::MakeSyntheticFrame(kWidth, kHeight, PixelFormat::kYuv420p, 500 + i, ColorMatrix::kBt709));
  }
  return frames;
}

bool SendFrame(TranscodeStream* s, const testing::SyntheticFrame& f, int64_t pts) {
  v1::TranscodeRequest r;
  v1::RawFrameChunk* chunk = r.mutable_frame_chunk();
  chunk->set_pts(pts);
  chunk->set_data(f.bytes.data(), f.bytes.size());
  chunk->set_end_of_frame(true);
  return s->Write(r);
}

// Every rendition of every frame, byte for byte the CPU encoder's, in order.
void ExpectReferenceOutput(const TranscodeOutcome& out, const std::vector<testing::SyntheticFrame>& frames) {
  CpuJpegEncoder reference(1);
  for (size_t r = 0; r < std::size(kQualities); ++r) {
    ASSERT_EQ(out.frames.count(static_cast<uint32_t>(r)), 1u) << "rendition " << r;
    const auto& got = out.frames.at(static_cast<uint32_t>(r));
    ASSERT_EQ(got.size(), frames.size()) << "rendition " << r;
    EncodeParams params;
    params.quality = kQualities[r];
    for (size_t i = 0; i < frames.size(); ++i) {
      StatusOr<std::vector<uint8_t>> want = reference.Encode(frames[i].view, params);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(got[i], *want) << "rendition " << r << ", frame " << i;
    }
  }
}

using SharedOutputTest = DaemonSuite;

// Frames in and JPEGs out through shared memory, one attach swapping both memfds; the
// client releases each frame's slots before it sends the next frame, so every JPEG
// comes in a slot.
TEST_F(SharedOutputTest, JpegsInSlotsAreByteIdenticalToTheCpuEncoderWithOneAttachForBothWays) {
  const std::vector<testing::SyntheticFrame> frames = Frames(10);
  SharedSlotTracker tracker;
  std::unique_ptr<SharedJpegSlotsView> jpegs;
  std::string answer;
  int writable_map_errno = 0, truncate_errno = 0;
  TranscodeCall call;
  call.spec = Spec(2, 3);
  call.read_shared = [&](const v1::SharedJpeg& j) { return jpegs ? jpegs->Read(j) : std::vector<uint8_t>(); };
  call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) { tracker.OnResponse(r); };
  call.send_input = [&](TranscodeStream* s) {
    const std::optional<v1::Started> started = tracker.WaitStartedMessage(10);
    if (!started) return false;
    const v1::SharedMemoryInput& in = started->shared_memory();
    const v1::SharedMemoryOutput& out = started->shared_memory_output();
    std::string error;
    std::unique_ptr<SharedFrameSlots> memory = SharedFrameSlots::Create(in.slots(), in.slot_bytes(), &error);
    if (!memory) return false;
    int received = -1;
    answer = AttachSharedFrames(in.attach_socket(), in.attach_key(), memory->fd(), &received);
    if (answer != "OK" || received < 0) return false;
    // The daemon's memory reads, and nothing more: no writable shared map, no resize.
    void* w = mmap(nullptr, out.slot_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, received, 0);
    writable_map_errno = w == MAP_FAILED ? errno : 0;
    if (w != MAP_FAILED) munmap(w, out.slot_bytes());
    truncate_errno = ftruncate(received, 0) != 0 ? errno : 0;
    jpegs = SharedJpegSlotsView::Map(received, out.slots(), out.slot_bytes(), &error);
    if (!jpegs) return false;
    for (size_t i = 0; i < frames.size(); ++i) {
      const int slot = tracker.TakeFreeSlot(10);
      if (slot < 0) return false;
      std::memcpy(memory->slot(slot), frames[i].bytes.data(), frames[i].bytes.size());
      v1::TranscodeRequest r;
      r.mutable_shared_frame()->set_slot(static_cast<uint32_t>(slot));
      r.mutable_shared_frame()->set_pts(static_cast<int64_t>(i));
      if (!s->Write(r)) return false;
      // Both renditions' JPEGs of this frame, read (read_shared), then released.
      const std::vector<uint32_t> filled = tracker.TakeFilledOutputSlots(std::size(kQualities), 10);
      if (filled.size() != std::size(kQualities) || !ReleaseOutputSlots(s, filled)) return false;
    }
    return true;
  };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message() << " (attach: " << answer << ")";
  const v1::SharedMemoryOutput& shm = out.started_msg.shared_memory_output();
  EXPECT_EQ(shm.slots(), 3u);
  EXPECT_EQ(shm.attach_key(), out.started_msg.shared_memory().attach_key());
  EXPECT_EQ(shm.attach_socket(), daemon_->dir() + "/conveyord.frames.sock");
  // A slot holds the source size's yuv420p and a page more, page-rounded.
  EXPECT_GE(shm.slot_bytes(), static_cast<uint64_t>(kWidth * kHeight * 3 / 2));
  EXPECT_EQ(shm.slot_bytes() % static_cast<uint64_t>(sysconf(_SC_PAGESIZE)), 0u);
  EXPECT_EQ(writable_map_errno, EPERM) << "the client could map the daemon's JPEG slots writable";
  EXPECT_NE(truncate_errno, 0) << "the client could resize the daemon's JPEG slots";
  EXPECT_EQ(out.shared_packets, static_cast<int>(frames.size() * std::size(kQualities)));
  ExpectReferenceOutput(out, frames);
  EXPECT_EQ(out.summary.frames_out(), frames.size());
}

// The daemon never waits for a release: with its one slot held by the client, the other
// JPEGs come in OutputPacket.data, and output is complete either way. Frames come in
// messages here, and the attach carries no memfd of the client's.
TEST_F(SharedOutputTest, WithNoSlotFreeJpegsComeInMessages) {
  const std::vector<testing::SyntheticFrame> frames = Frames(6);
  SharedSlotTracker tracker;
  std::unique_ptr<SharedJpegSlotsView> jpegs;
  std::string answer;
  TranscodeCall call;
  call.spec = Spec(0, 1);
  call.read_shared = [&](const v1::SharedJpeg& j) { return jpegs ? jpegs->Read(j) : std::vector<uint8_t>(); };
  call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) { tracker.OnResponse(r); };
  call.send_input = [&](TranscodeStream* s) {
    const std::optional<v1::Started> started = tracker.WaitStartedMessage(10);
    if (!started || started->has_shared_memory()) return false;
    const v1::SharedMemoryOutput& out = started->shared_memory_output();
    int received = -1;
    answer = AttachSharedFrames(out.attach_socket(), out.attach_key(), -1, &received);
    if (answer != "OK" || received < 0) return false;
    std::string error;
    jpegs = SharedJpegSlotsView::Map(received, out.slots(), out.slot_bytes(), &error);
    if (!jpegs) return false;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (!SendFrame(s, frames[i], static_cast<int64_t>(i))) return false;
    }
    return true;  // and never a release
  };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message() << " (attach: " << answer << ")";
  EXPECT_EQ(out.shared_packets, 1);
  ExpectReferenceOutput(out, frames);
}

bool SendEndOfInput(TranscodeStream* s) {
  v1::TranscodeRequest r;
  r.mutable_end_of_input();
  return s->Write(r);
}

// EndOfInput ends the input but leaves the stream open, so a client can go on releasing
// slots after its last frame (what a container input client needs): the releases that
// follow it are taken (a refused one would end the session with INVALID_ARGUMENT), and
// the session ends OK with every frame. The daemon ends the stream once its output is
// out, so releases written after that fail on the client's side; that is no error.
TEST_F(SharedOutputTest, EndOfInputLeavesTheStreamOpenForReleases) {
  const std::vector<testing::SyntheticFrame> frames = Frames(4);
  SharedSlotTracker tracker;
  std::unique_ptr<SharedJpegSlotsView> jpegs;
  std::atomic<int> jpegs_in{0};
  int released_after_end = 0;  // written before the daemon ended the stream
  TranscodeCall call;
  call.spec = Spec(0, 2);
  call.read_shared = [&](const v1::SharedJpeg& j) { return jpegs ? jpegs->Read(j) : std::vector<uint8_t>(); };
  call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) {
    tracker.OnResponse(r);
    if (r.has_packet() && r.packet().end_of_frame()) ++jpegs_in;
  };
  call.send_input = [&](TranscodeStream* s) {
    const std::optional<v1::Started> started = tracker.WaitStartedMessage(10);
    if (!started) return false;
    const v1::SharedMemoryOutput& out = started->shared_memory_output();
    int received = -1;
    if (AttachSharedFrames(out.attach_socket(), out.attach_key(), -1, &received) != "OK" || received < 0) return false;
    std::string error;
    jpegs = SharedJpegSlotsView::Map(received, out.slots(), out.slot_bytes(), &error);
    if (!jpegs) return false;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (!SendFrame(s, frames[i], static_cast<int64_t>(i))) return false;
    }
    if (!SendEndOfInput(s)) return false;
    // Every release from here on follows EndOfInput on the stream.
    const int all = static_cast<int>(frames.size() * std::size(kQualities));
    while (jpegs_in.load() < all) {
      const std::vector<uint32_t> filled = tracker.TakeFilledOutputSlots(1, 10);
      if (filled.empty() || !ReleaseOutputSlots(s, filled)) return true;
      released_after_end += static_cast<int>(filled.size());
    }
    return true;  // then the half-close
  };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_GE(out.shared_packets, 2);  // the first frame's two JPEGs found both slots free
  EXPECT_LE(released_after_end, out.shared_packets);
  ExpectReferenceOutput(out, frames);
}

// The daemon ends the stream once the last frame's output is out and reads nothing after
// that, so a message that breaks the rule is refused only if it arrives first. It
// follows a 720p frame, whose encode (milliseconds) nearly always keeps the session open
// while it arrives (microseconds); a run may still lose that race on a loaded machine and
// end OK, so each case gets up to five runs and must be refused in one, and every run
// must end either OK or refused with the message.
void ExpectRefusedAfterEndOfInput(v1::Transcoder::Stub* stub, const std::string& late_field,
                                  const std::function<bool(TranscodeStream*)>& late) {
  const testing::SyntheticFrame frame =
      testing::MakeSyntheticFrame(1280, 720, PixelFormat::kYuv420p, 77, ColorMatrix::kBt709);
  TranscodeCall call;
  call.spec = RawYuv420pSpec(1280, 720);
  call.spec.add_renditions()->set_quality(90);
  call.send_input = [&](TranscodeStream* s) { return SendFrame(s, frame, 0) && SendEndOfInput(s) && late(s); };
  bool refused = false;
  for (int run = 0; run < 5 && !refused; ++run) {
    const TranscodeOutcome out = RunTranscode(stub, call);
    refused = out.status.error_code() == grpc::StatusCode::INVALID_ARGUMENT;
    if (refused) {
      EXPECT_NE(out.status.error_message().find(late_field + ": after end_of_input"), std::string::npos)
          << out.status.error_message();
    } else {
      EXPECT_TRUE(out.status.ok()) << out.status.error_message();
    }
  }
  EXPECT_TRUE(refused) << late_field << " after end_of_input was never refused";
}

TEST_F(SharedOutputTest, InputAfterEndOfInputIsInvalidArgument) {
  ExpectRefusedAfterEndOfInput(stub_.get(), "frame_chunk", [](TranscodeStream* s) {
    v1::TranscodeRequest late;
    late.mutable_frame_chunk()->set_data("x");
    return s->Write(late);
  });
  ExpectRefusedAfterEndOfInput(stub_.get(), "end_of_input", [](TranscodeStream* s) { return SendEndOfInput(s); });
}

TEST_F(SharedOutputTest, BadReleasesAndAttachesAreRefusedNamingTheField) {
  const std::vector<testing::SyntheticFrame> frames = Frames(1);
  // A slot out of range, and one that holds nothing sent.
  for (uint32_t slot : {4u, 1u}) {
    SharedSlotTracker tracker;
    TranscodeCall call;
    call.spec = Spec(0, 4);
    call.deadline_s = 20;
    call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) { tracker.OnResponse(r); };
    call.send_input = [&](TranscodeStream* s) {
      if (!tracker.WaitStartedMessage(10)) return false;
      return ReleaseOutputSlots(s, {slot});
    };
    const TranscodeOutcome out = RunTranscode(stub_.get(), call);
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << out.status.error_message();
    const std::string want = slot == 4 ? "output_slot_released.slot: 4 is out of range (4 slots)"
                                       : "output_slot_released.slot: slot 1 holds no JPEG sent";
    EXPECT_NE(out.status.error_message().find(want), std::string::npos) << out.status.error_message();
  }
  // A release on a session whose JPEGs come in messages.
  {
    TranscodeCall call;
    call.spec = Spec(0, 0);
    call.send_input = [&](TranscodeStream* s) { return SendFrame(s, frames[0], 0) && ReleaseOutputSlots(s, {0}); };
    const TranscodeOutcome out = RunTranscode(stub_.get(), call);
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << out.status.error_message();
    EXPECT_NE(out.status.error_message().find("output_slot_released: this job's JPEGs come in OutputPacket.data"),
              std::string::npos)
        << out.status.error_message();
  }
  // Too many slots.
  {
    TranscodeCall call;
    call.spec = Spec(0, 17);
    const TranscodeOutcome out = RunTranscode(stub_.get(), call);
    EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << out.status.error_message();
    EXPECT_NE(out.status.error_message().find("spec.output.frames.shared_memory_slots: 17 is above 16"),
              std::string::npos)
        << out.status.error_message();
  }
  // An output-only session given a frame memfd on attach, then attached right, once.
  {
    SharedSlotTracker tracker;
    std::vector<std::string> answers;
    TranscodeCall call;
    call.spec = Spec(0, 2);
    call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) { tracker.OnResponse(r); };
    call.send_input = [&](TranscodeStream*) {
      const std::optional<v1::Started> started = tracker.WaitStartedMessage(10);
      if (!started) return false;
      const v1::SharedMemoryOutput& out = started->shared_memory_output();
      std::string error;
      std::unique_ptr<SharedFrameSlots> stray = SharedFrameSlots::Create(1, 4096, &error);
      if (!stray) return false;
      int received = -1;
      answers.push_back(AttachSharedFrames(out.attach_socket(), out.attach_key(), stray->fd(), &received));
      answers.push_back(received < 0 ? "no fd" : "fd");
      if (received >= 0) close(received);
      answers.push_back(AttachSharedFrames(out.attach_socket(), out.attach_key(), -1, &received));
      answers.push_back(received < 0 ? "no fd" : "fd");
      if (received >= 0) close(received);
      answers.push_back(AttachSharedFrames(out.attach_socket(), out.attach_key(), -1, &received));
      if (received >= 0) close(received);
      return true;
    };
    const TranscodeOutcome out = RunTranscode(stub_.get(), call);
    ASSERT_TRUE(out.status.ok()) << out.status.error_message();
    ASSERT_EQ(answers.size(), 5u);
    EXPECT_NE(answers[0].find("ERROR this session takes no frame memfd"), std::string::npos) << answers[0];
    EXPECT_EQ(answers[1], "no fd");
    EXPECT_EQ(answers[2], "OK");
    EXPECT_EQ(answers[3], "fd");
    EXPECT_EQ(answers[4], "ERROR this session has its shared memory already");
  }
}

}  // namespace
}  // namespace conveyor::e2e

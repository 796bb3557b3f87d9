// End-to-end: raw frames through shared memory (RawInput.shared_memory_slots) on the
// real conveyord, with the client side written from the proto (shared_frames_client.h).
// Output is checked against the CPU encoder's bytes, as for frames sent in messages.
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "cpu_encoder.h"
#include "daemon_process.h"
#include "daemon_suite.h"
#include "shared_frames_client.h"
#include "synthetic_frame.h"
#include "transcode_client.h"

namespace conveyor::e2e {
namespace {

constexpr int kWidth = 96, kHeight = 64;

v1::JobSpec SharedSpec(uint32_t slots, int quality = 90) {
  v1::JobSpec spec = RawYuv420pSpec(kWidth, kHeight, slots);
  spec.add_renditions()->set_quality(quality);
  return spec;
}

bool WriteSharedFrame(TranscodeStream* s, uint32_t slot, int64_t pts) {
  v1::TranscodeRequest r;
  r.mutable_shared_frame()->set_slot(slot);
  r.mutable_shared_frame()->set_pts(pts);
  return s->Write(r);
}

using SharedMemoryTest = DaemonSuite;

TEST_F(SharedMemoryTest, FramesInSlotsAreByteIdenticalToTheCpuEncoderAndEverySlotIsReleased) {
  std::vector<testing::SyntheticFrame> frames;
  for (uint32_t i = 0; i < 12; ++i) {
    frames.push_back(testing::MakeSyntheticFrame(kWidth, kHeight, PixelFormat::kYuv420p, 300 + i, ColorMatrix::kBt709));
  }
  SharedSlotTracker slots;
  std::string attach_answer;
  TranscodeCall call;
  call.spec = SharedSpec(3);  // fewer slots than frames: each is reused after its release
  call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) { slots.OnResponse(r); };
  call.send_input = [&](TranscodeStream* s) {
    const std::optional<v1::SharedMemoryInput> shm = slots.WaitStarted(10);
    if (!shm) return false;
    std::string error;
    std::unique_ptr<SharedFrameSlots> memory = SharedFrameSlots::Create(shm->slots(), shm->slot_bytes(), &error);
    if (!memory) {
      attach_answer = "CLIENT " + error;
      return false;
    }
    attach_answer = AttachSharedFrames(shm->attach_socket(), shm->attach_key(), memory->fd());
    if (attach_answer != "OK") return false;
    for (size_t i = 0; i < frames.size(); ++i) {
      const int slot = slots.TakeFreeSlot(10);
      if (slot < 0) return false;
      std::memcpy(memory->slot(slot), frames[i].bytes.data(), frames[i].bytes.size());
      if (!WriteSharedFrame(s, static_cast<uint32_t>(slot), static_cast<int64_t>(i) * 3)) return false;
    }
    return true;
  };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message() << " (attach: " << attach_answer << ")";
  EXPECT_EQ(attach_answer, "OK");
  const v1::SharedMemoryInput& shm = out.started_msg.shared_memory();
  EXPECT_EQ(shm.slots(), 3u);
  EXPECT_EQ(shm.slot_bytes(), frames[0].bytes.size());
  EXPECT_EQ(shm.attach_key().size(), 32u);
  EXPECT_EQ(shm.attach_socket(), daemon_->dir() + "/conveyord.frames.sock");
  ASSERT_EQ(out.frames.at(0).size(), frames.size());
  CpuJpegEncoder reference(1);
  EncodeParams params;
  params.quality = 90;
  for (size_t i = 0; i < frames.size(); ++i) {
    StatusOr<std::vector<uint8_t>> want = reference.Encode(frames[i].view, params);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(out.frames.at(0)[i], *want) << "frame " << i;
    EXPECT_EQ(out.pts.at(0)[i], static_cast<int64_t>(i) * 3);
  }
  EXPECT_EQ(slots.released(), static_cast<int>(frames.size()));
  EXPECT_EQ(out.summary.frames_in(), frames.size());
}

// Runs a shared-memory session whose writer does `send` once Started has come.
TranscodeOutcome RunShared(v1::Transcoder::Stub* stub, uint32_t slots,
                           const std::function<bool(TranscodeStream*, const v1::SharedMemoryInput&)>& send) {
  SharedSlotTracker tracker;
  TranscodeCall call;
  call.spec = SharedSpec(slots);
  call.deadline_s = 20;
  call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) { tracker.OnResponse(r); };
  call.send_input = [&](TranscodeStream* s) {
    const std::optional<v1::SharedMemoryInput> shm = tracker.WaitStarted(10);
    return shm && send(s, *shm);
  };
  return RunTranscode(stub, call);
}

TEST_F(SharedMemoryTest, AFrameBeforeTheMemoryIsAttachedIsFailedPrecondition) {
  const TranscodeOutcome out =
      RunShared(stub_.get(), 2, [](TranscodeStream* s, const v1::SharedMemoryInput&) {
        return WriteSharedFrame(s, 0, 0);
      });
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("no shared memory attached"), std::string::npos)
      << out.status.error_message();
}

TEST_F(SharedMemoryTest, ASlotOutOfRangeIsInvalidArgumentNamingTheField) {
  std::unique_ptr<SharedFrameSlots> memory;
  std::string answer;
  const TranscodeOutcome out = RunShared(stub_.get(), 2, [&](TranscodeStream* s, const v1::SharedMemoryInput& shm) {
    std::string error;
    memory = SharedFrameSlots::Create(shm.slots(), shm.slot_bytes(), &error);
    if (!memory) return false;
    answer = AttachSharedFrames(shm.attach_socket(), shm.attach_key(), memory->fd());
    return WriteSharedFrame(s, 2, 0);
  });
  EXPECT_EQ(answer, "OK");
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("shared_frame (frame 0).slot: 2 is out of range (2 slots)"),
            std::string::npos)
      << out.status.error_message();
}

TEST_F(SharedMemoryTest, TheAttachSocketRefusesUnsealedShortAndUnknownMemory) {
  std::vector<std::string> answers;
  const TranscodeOutcome out = RunShared(stub_.get(), 2, [&](TranscodeStream*, const v1::SharedMemoryInput& shm) {
    std::string error;
    // Not sealed against shrinking: the client could truncate it under a read.
    std::unique_ptr<SharedFrameSlots> unsealed =
        SharedFrameSlots::Create(shm.slots(), shm.slot_bytes(), &error, /*seal=*/false);
    answers.push_back(unsealed ? AttachSharedFrames(shm.attach_socket(), shm.attach_key(), unsealed->fd()) : error);
    // One slot too short.
    std::unique_ptr<SharedFrameSlots> short_one = SharedFrameSlots::Create(shm.slots() - 1, shm.slot_bytes(), &error);
    answers.push_back(short_one ? AttachSharedFrames(shm.attach_socket(), shm.attach_key(), short_one->fd()) : error);
    // A key no session has, and the key without a descriptor.
    std::unique_ptr<SharedFrameSlots> good = SharedFrameSlots::Create(shm.slots(), shm.slot_bytes(), &error);
    if (!good) return false;
    answers.push_back(AttachSharedFrames(shm.attach_socket(), std::string(32, '0'), good->fd()));
    answers.push_back(AttachSharedFrames(shm.attach_socket(), shm.attach_key(), -1));
    // After all that, the right memory is still taken, once.
    answers.push_back(AttachSharedFrames(shm.attach_socket(), shm.attach_key(), good->fd()));
    answers.push_back(AttachSharedFrames(shm.attach_socket(), shm.attach_key(), good->fd()));
    return true;
  });
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();  // no frame sent: an empty, finished session
  ASSERT_EQ(answers.size(), 6u);
  EXPECT_NE(answers[0].find("ERROR the memfd is not sealed against shrinking"), std::string::npos) << answers[0];
  EXPECT_NE(answers[1].find("ERROR the memfd holds"), std::string::npos) << answers[1];
  EXPECT_EQ(answers[2], "ERROR no session has this attach key");
  EXPECT_NE(answers[3].find("ERROR no memfd came with the key"), std::string::npos) << answers[3];
  EXPECT_EQ(answers[4], "OK");
  EXPECT_EQ(answers[5], "ERROR this session has its shared memory already");
}

TEST_F(SharedMemoryTest, FrameChunksOnASharedMemoryJobAndTooManySlotsAreInvalidArgument) {
  TranscodeCall call;
  call.spec = SharedSpec(2);
  call.send_input = [](TranscodeStream* s) {
    return SendRawFrame(s, std::vector<uint8_t>(kWidth * kHeight * 3 / 2, 0), 0);
  };
  TranscodeOutcome out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("frame_chunk: this job's frames come through shared memory"),
            std::string::npos)
      << out.status.error_message();

  call.spec = SharedSpec(17);
  call.send_input = nullptr;
  out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("spec.raw.shared_memory_slots: 17 is above 16"), std::string::npos)
      << out.status.error_message();
}

TEST(SharedMemoryOverTcp, IsRefusedWithFailedPrecondition) {
  DaemonProcess daemon({"--listen", "127.0.0.1:0"});
  ASSERT_TRUE(daemon.ready()) << "conveyord did not start on 127.0.0.1:0";
  ASSERT_GT(daemon.tcp_port(), 0);
  const std::string tcp = "127.0.0.1:" + std::to_string(daemon.tcp_port());
  auto stub = v1::Transcoder::NewStub(grpc::CreateChannel(tcp, grpc::InsecureChannelCredentials()));
  TranscodeCall call;
  call.spec = SharedSpec(2);
  const TranscodeOutcome out = RunTranscode(stub.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("spec.raw.shared_memory_slots: shared memory needs a client on this "
                                            "host"),
            std::string::npos)
      << out.status.error_message();
  EXPECT_EQ(daemon.Stop(), 0);
}

// An operator who wants no client memory mapped into the daemon turns the path off: no
// attach socket is made, and a session asking for slots is told what to send instead.
TEST(SharedMemoryTurnedOff, HasNoAttachSocketAndRefusesSessionsWithFailedPrecondition) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/conveyord.toml") << "[server]\nshared_memory = false\n";
  DaemonProcess daemon({"--config", dir + "/conveyord.toml"});
  ASSERT_TRUE(daemon.ready());
  struct stat st {};
  EXPECT_NE(stat((daemon.dir() + "/conveyord.frames.sock").c_str(), &st), 0) << "the attach socket exists";
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  TranscodeCall call;
  call.spec = SharedSpec(2);
  const TranscodeOutcome out = RunTranscode(stub.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("server.shared_memory is false"), std::string::npos)
      << out.status.error_message();
  // Frames in messages still work on that daemon.
  TranscodeCall plain;
  plain.spec = SharedSpec(0);
  const testing::SyntheticFrame frame =
      testing::MakeSyntheticFrame(kWidth, kHeight, PixelFormat::kYuv420p, 7, ColorMatrix::kBt709);
  plain.send_input = [&](TranscodeStream* s) {
    v1::TranscodeRequest r;
    v1::RawFrameChunk* chunk = r.mutable_frame_chunk();
    chunk->set_pts(0);
    chunk->set_data(frame.bytes.data(), frame.bytes.size());
    chunk->set_end_of_frame(true);
    return s->Write(r);
  };
  const TranscodeOutcome ok = RunTranscode(stub.get(), plain);
  EXPECT_TRUE(ok.status.ok()) << ok.status.error_message();
  ASSERT_EQ(ok.frames.count(0), 1u);
  EXPECT_EQ(ok.frames.at(0).size(), 1u);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace conveyor::e2e

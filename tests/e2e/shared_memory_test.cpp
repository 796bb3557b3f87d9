// End-to-end: raw frames through shared memory (RawInput.shared_memory_slots) on the
// real conveyord, with the client side written from the proto (shared_frames_client.h).
// Output is checked against the CPU encoder's bytes, as for frames sent in messages.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu_encoder.h"
#include "daemon_process.h"
#include "daemon_suite.h"
#include "shared_frames_client.h"
#include "synthetic_frame.h"
#include "transcode_client.h"
#include "unique_fd.h"

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

// The attach socket's deadline (FrameAttachServer::kConnectionTimeoutS) and its cap on
// attaches in progress (FrameAttachServer::kMaxUnfinishedAttaches), as a client sees them.
constexpr double kAttachDeadlineS = 2;
constexpr size_t kAttachCap = 64;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A connection to the attach socket that sends nothing until the test says so, as a
// stuck or hostile local client would hold it.
struct IdlePeer {
  UniqueFd fd;
  Clock::time_point connected;
  std::string answer;  // what the daemon wrote before it closed the connection
  std::optional<Clock::time_point> closed_at;

  bool closed() const { return closed_at.has_value(); }
  double closed_after_s() const { return std::chrono::duration<double>(*closed_at - connected).count(); }
};

// None when connect() fails. connect() waits at most 250 ms for room in the daemon's
// accept queue, so that a daemon which accepts slowly fails a test rather than hangs it.
std::optional<IdlePeer> ConnectIdle(const std::string& path) {
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return std::nullopt;
  timeval wait{0, 250000};
  setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &wait, sizeof(wait));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path.c_str());
  if (connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) return std::nullopt;
  return IdlePeer{std::move(fd), Clock::now()};
}

std::vector<IdlePeer> ConnectIdle(const std::string& path, size_t count) {
  std::vector<IdlePeer> peers;
  for (size_t i = 0; i < count; ++i) {
    std::optional<IdlePeer> peer = ConnectIdle(path);
    if (peer) peers.push_back(std::move(*peer));
  }
  return peers;
}

// Reads what is there on `peer` without waiting; notes when the daemon has closed it.
void ReadAvailable(IdlePeer& peer) {
  char buffer[256];
  for (;;) {
    const ssize_t n = recv(peer.fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
    if (n > 0) {
      peer.answer.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n < 0 && errno == EINTR) continue;
    peer.closed_at = Clock::now();  // EOF, or reset
    return;
  }
}

// Whether the daemon has closed none of `peers` yet.
bool NoneClosed(std::vector<IdlePeer>& peers) {
  for (IdlePeer& p : peers) {
    ReadAvailable(p);
    if (p.closed()) return false;
  }
  return true;
}

// Waits until the daemon has closed every one of `peers`, or `limit_s` has passed.
void WaitAllClosed(std::vector<IdlePeer>& peers, double limit_s) {
  const Clock::time_point until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                     std::chrono::duration<double>(limit_s));
  for (;;) {
    std::vector<pollfd> open;
    std::vector<IdlePeer*> which;
    for (IdlePeer& p : peers) {
      if (p.closed()) continue;
      open.push_back({p.fd.get(), POLLIN, 0});
      which.push_back(&p);
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (open.empty() || left <= 0) return;
    if (poll(open.data(), open.size(), static_cast<int>(left)) < 0 && errno != EINTR) return;
    for (size_t i = 0; i < open.size(); ++i) {
      if (open[i].revents != 0) ReadAvailable(*which[i]);
    }
  }
}

// How `peers` ended, against the deadline: each must be closed no sooner than its
// deadline, no later than `slack_s` past it, with the key's error line.
std::string CheckClosedAtDeadline(const std::vector<IdlePeer>& peers, double slack_s) {
  int early = 0, late = 0, open = 0, wrong = 0;
  double first = 1e9, last = 0;
  std::string wrong_answer;
  for (const IdlePeer& p : peers) {
    if (!p.closed()) {
      ++open;
      continue;
    }
    const double after = p.closed_after_s();
    first = std::min(first, after);
    last = std::max(last, after);
    if (after < kAttachDeadlineS - 0.05) ++early;
    if (after > kAttachDeadlineS + slack_s) ++late;
    if (p.answer != "ERROR expected a 32-byte attach key\n") {
      ++wrong;
      wrong_answer = p.answer;
    }
  }
  if (early + late + open + wrong == 0) return "";
  return std::to_string(early) + " closed before the deadline, " + std::to_string(late) + " more than " +
         std::to_string(slack_s) + " s after it, " + std::to_string(open) + " still open, " + std::to_string(wrong) +
         " with another answer (\"" + wrong_answer + "\"); closed between " + std::to_string(first) + " s and " +
         std::to_string(last) + " s after connecting";
}

// A client that connects and sends nothing holds no one else up: an attach made behind
// 32 such connections is answered at once, and each of them is closed at its own
// deadline, counted from its connect, with the error line a short key gets.
TEST_F(SharedMemoryTest, IdleConnectionsDoNotDelayAnAttachAndAreClosedAtTheirDeadline) {
  std::vector<IdlePeer> idle = ConnectIdle(daemon_->dir() + "/conveyord.frames.sock", 32);
  EXPECT_EQ(idle.size(), 32u) << "connect() to the attach socket waited for room in its accept queue";
  std::string answer;
  double attach_s = -1;
  bool idle_still_open = false;
  const TranscodeOutcome out = RunShared(stub_.get(), 2, [&](TranscodeStream*, const v1::SharedMemoryInput& shm) {
    std::string error;
    std::unique_ptr<SharedFrameSlots> memory = SharedFrameSlots::Create(shm.slots(), shm.slot_bytes(), &error);
    if (!memory) return false;
    const Clock::time_point start = Clock::now();
    answer = AttachSharedFrames(shm.attach_socket(), shm.attach_key(), memory->fd());
    attach_s = SecondsSince(start);
    idle_still_open = NoneClosed(idle);
    return true;
  });
  EXPECT_LT(attach_s, 0.5) << "the attach waited behind " << idle.size() << " idle connections";
  EXPECT_EQ(answer, "OK");
  EXPECT_TRUE(out.status.ok()) << out.status.error_message();
  // Else the attach did not in fact come while the idle connections were held.
  EXPECT_TRUE(idle_still_open) << "an idle connection was closed before the attach was answered";
  WaitAllClosed(idle, kAttachDeadlineS + 4);
  EXPECT_EQ(CheckClosedAtDeadline(idle, 1.0), "");
}

// The deadline is over the whole key, not each read: a client that trickles a byte
// every 100 ms, never a whole key, is cut off 2 s after it connected.
TEST_F(SharedMemoryTest, AConnectionThatTricklesItsKeyIsClosedAtItsDeadline) {
  std::vector<IdlePeer> peers = ConnectIdle(daemon_->dir() + "/conveyord.frames.sock", 1);
  ASSERT_EQ(peers.size(), 1u);
  IdlePeer& peer = peers[0];
  for (int sent = 0; sent < 31 && !peer.closed(); ++sent) {
    pollfd p{peer.fd.get(), POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      ReadAvailable(peer);
    } else {
      (void)send(peer.fd.get(), "k", 1, MSG_NOSIGNAL);
    }
  }
  WaitAllClosed(peers, kAttachDeadlineS + 4);
  EXPECT_EQ(CheckClosedAtDeadline(peers, 1.0), "");
}

// Attaches in progress are capped: with the cap taken by idle connections, one more is
// answered and closed at once, and once their deadline has closed them an attach works.
TEST_F(SharedMemoryTest, AConnectionPastTheCapIsClosedAtOnceAndTheCapFreesAtTheDeadline) {
  const std::string path = daemon_->dir() + "/conveyord.frames.sock";
  std::vector<IdlePeer> idle = ConnectIdle(path, kAttachCap);
  EXPECT_EQ(idle.size(), kAttachCap) << "connect() to the attach socket waited for room in its accept queue";
  std::vector<IdlePeer> over = ConnectIdle(path, 1);
  ASSERT_EQ(over.size(), 1u);
  WaitAllClosed(over, 0.5);
  EXPECT_TRUE(over[0].closed()) << "the connection past the cap is still open after 0.5 s";
  EXPECT_NE(over[0].answer.find("ERROR too many attaches in progress"), std::string::npos) << over[0].answer;
  EXPECT_TRUE(NoneClosed(idle)) << "an idle connection was closed before its deadline";

  WaitAllClosed(idle, kAttachDeadlineS + 4);
  EXPECT_EQ(CheckClosedAtDeadline(idle, 1.0), "");
  std::string answer;
  const TranscodeOutcome out = RunShared(stub_.get(), 2, [&](TranscodeStream*, const v1::SharedMemoryInput& shm) {
    std::string error;
    std::unique_ptr<SharedFrameSlots> memory = SharedFrameSlots::Create(shm.slots(), shm.slot_bytes(), &error);
    if (!memory) return false;
    answer = AttachSharedFrames(shm.attach_socket(), shm.attach_key(), memory->fd());
    return true;
  });
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(answer, "OK");
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

// Stopping the daemon does not wait out the deadlines of attach connections that sent
// nothing: they are shut down as soon as it stops serving, well before the process
// exits (which takes over a second of its own).
TEST(SharedMemoryAttachSocket, StoppingTheDaemonShutsIdleConnectionsDownAtOnce) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  std::vector<IdlePeer> idle = ConnectIdle(daemon.dir() + "/conveyord.frames.sock", 8);
  ASSERT_EQ(idle.size(), 8u);
  const Clock::time_point sigterm = Clock::now();
  std::future<int> stopped = std::async(std::launch::async, [&] { return daemon.Stop(); });
  WaitAllClosed(idle, kAttachDeadlineS + 4);
  double slowest = 0;
  for (const IdlePeer& p : idle) {
    ASSERT_TRUE(p.closed()) << "an idle connection outlived the daemon";
    slowest = std::max(slowest, std::chrono::duration<double>(*p.closed_at - sigterm).count());
  }
  EXPECT_LT(slowest, 0.5) << "the last idle connection was closed this long after SIGTERM";
  EXPECT_EQ(stopped.get(), 0);
}

}  // namespace
}  // namespace conveyor::e2e

// The input side of a Transcode stream, between the stream's reads and its Session: a
// message is offered to the session, and one it refuses for lack of room is kept and
// offered again on ResumeReading, so the stream reads its next message only once the
// session has taken the last one (gRPC flow control then pushes back on a fast client).
// No gRPC in it: the rpc reactor and the session tests' stand-in drive the same code.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "conveyor/v1/transcoder.pb.h"
#include "session.h"
#include "status.h"

namespace conveyor {

class SessionInput {
 public:
  explicit SessionInput(std::shared_ptr<Session> session) : session_(std::move(session)) {}

  // The message just read (after the first, which carried the JobSpec). Returns true when
  // the stream should read the next one now; false while the session has no room (a later
  // Resume() says when) or after a bad message, which cancels the session with a status
  // naming the field.
  bool Offer(v1::TranscodeRequest& request);

  // The session has room again (SessionSink::ResumeReading). Returns true when the kept
  // message was taken and the stream should read the next one.
  bool Resume();

  // A message is kept, waiting for room.
  bool Paused() const;

 private:
  StatusOr<bool> PushPendingLocked();  // offers the kept input; true once taken
  // Cancels the session on `failure`, outside mu_: cancelling wakes ResumeReading, which
  // takes mu_. Returns whether to read on.
  bool Settle(const Status& failure, bool read_next);

  const std::shared_ptr<Session> session_;
  mutable std::mutex mu_;
  bool paused_ = false;
  std::vector<uint8_t> pending_bytes_;
  std::optional<v1::RawFrameChunk> pending_frame_;
  std::optional<v1::SharedFrame> pending_shared_;
  std::optional<v1::ContainerRange> pending_range_;  // its data is in pending_bytes_
  bool ended_ = false;  // EndOfInput came: only releases may follow
};

}  // namespace conveyor

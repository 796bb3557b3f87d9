// A stand-in for the gRPC Transcode reactor (daemon/rpc/transcode_reactor.cpp) that
// drives a Session with the same call pattern, minus gRPC: one read at a time through
// the reactor's own SessionInput (a refused push parks the message until
// ResumeReading, which only schedules the retry on the reactor's own thread, as the
// reactor schedules it on a gRPC thread), one write at a time with OnSent after it, the close status only once
// every sent message is written, DetachSink and Remove at the end (OnDone). Writes can
// be held, which is a client that stopped reading.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "conveyor/v1/transcoder.pb.h"
#include "session.h"
#include "session_input.h"
#include "session_manager.h"
#include "status.h"

namespace conveyor::session_test {

class FakeReactor : public SessionSink {
 public:
  // `manager`: where the session came from; the reactor removes it there at the end.
  FakeReactor(std::shared_ptr<Session> session, SessionManager* manager);
  // OnDone: cancels a session still running (a failed test), detaches the sink, removes
  // the session from its manager and stops the writer.
  ~FakeReactor() override;
  FakeReactor(const FakeReactor&) = delete;
  FakeReactor& operator=(const FakeReactor&) = delete;

  // Session::Start(this) and the first read, as after the reactor's JobSpec read.
  void Start();

  // The client's next message, handed over as OnReadDone would: waits until the reactor
  // has started a read (it took the previous message). False once the stream is ending,
  // when no read comes any more; the message is then not delivered.
  bool Read(v1::TranscodeRequest request);
  // The client half-closes (OnReadDone(false) on a pending read). False as for Read.
  bool HalfClose();

  // While held, nothing is written, so the session gets no OnSent.
  void HoldWrites(bool hold);

  // The stream's status once it has ended: Close was called and everything sent before it
  // was written. nullopt when that takes longer than `timeout`.
  std::optional<Status> WaitClosed(std::chrono::milliseconds timeout);

  std::vector<v1::TranscodeResponse> Written() const;
  size_t Unwritten() const;
  // A push was refused and its message waits for ResumeReading.
  bool ReadingPaused() const;

  // SessionSink. Called by the session's threads; none blocks.
  void Send(v1::TranscodeResponse response) override;
  void Close(Status status) override;
  void ResumeReading() override;
  void Abort() override;

 private:
  void ReadNext();
  bool WaitForRead();
  void WriteLoop();

  const std::shared_ptr<Session> session_;
  SessionManager* const manager_;

  SessionInput input_;  // the reactor's input side itself

  // Stream state and output, as the reactor's mu_.
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool read_started_ = false;  // a StartRead is outstanding: the client may deliver
  bool reads_ended_ = false;
  std::deque<v1::TranscodeResponse> outbox_;
  std::vector<v1::TranscodeResponse> written_;
  std::optional<Status> close_status_;
  bool finished_ = false;  // Finish: the close status went out after the outbox
  bool hold_writes_ = false;
  bool stopping_ = false;
  bool resume_scheduled_ = false;  // ResumeReading came; the writer thread retries
  std::thread writer_;  // gRPC's completion of each StartWrite, then OnWriteDone; and the
                        // scheduled retries of ResumeReading
};

}  // namespace conveyor::session_test

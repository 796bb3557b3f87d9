// The Transcode stream's reactor (gRPC callback API): reads requests into the session
// only while the session has room, so gRPC flow control pushes back on a fast client;
// writes the session's responses one at a time, chaining the next from OnWriteDone. No
// callback blocks, and a call from the session (ResumeReading) only schedules work on a
// gRPC thread, so nothing here re-enters the session on the session's own thread.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "audit_log.h"
#include "auth.h"
#include "conveyor/v1/transcoder.grpc.pb.h"
#include "session_input.h"
#include "session_manager.h"

namespace conveyor {

class TranscodeReactor final : public grpc::ServerBidiReactor<v1::TranscodeRequest, v1::TranscodeResponse>,
                               public SessionSink {
 public:
  // An authenticated call: its sessions are owned by `caller`; a refusal by the session
  // manager (the cap, a drain) and the session's start go to `audit`.
  TranscodeReactor(grpc::CallbackServerContext* context, SessionManager* manager, AuditLog* audit, Caller caller);
  // A refused call: finishes with `refusal` before reading anything.
  TranscodeReactor(grpc::CallbackServerContext* context, SessionManager* manager, const Status& refusal);

  // grpc::ServerBidiReactor
  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

  // SessionSink (called by the session's threads)
  void Send(v1::TranscodeResponse response) override;
  void Close(Status status) override;
  void ResumeReading() override;
  void Abort() override;

 private:
  void ReadNext();                       // StartRead, unless the stream is ending
  void MaybeWriteLocked();
  // The stream's final status: conveyor_sessions_ended_total (and the session's duration)
  // and conveyor_rpc_requests_total, at the same moment, so the two agree.
  void CountFinish(StatusCode code, std::optional<double> session_seconds) const;
  // The scheduled half of ResumeReading, on a gRPC thread: offers the kept message again.
  void OnResume();
  // OnDone has run and no resume is scheduled: the reactor may go.
  bool DoneLocked() const { return done_ && resumes_scheduled_ == 0; }

  grpc::CallbackServerContext* const context_;
  SessionManager* const manager_;
  AuditLog* const audit_ = nullptr;  // null for a refused call
  const Caller caller_;
  std::shared_ptr<Session> session_;
  // When the session was accepted (set before it starts, so before any Close): its
  // duration at the final status.
  std::optional<std::chrono::steady_clock::time_point> accepted_;

  v1::TranscodeRequest request_;         // the read buffer
  std::unique_ptr<SessionInput> input_;  // with the session: what it refused for lack of room

  std::mutex mu_;                        // the write side
  std::deque<v1::TranscodeResponse> outbox_;
  v1::TranscodeResponse writing_;
  bool write_in_flight_ = false;
  std::optional<Status> close_status_;
  bool finished_ = false;
  bool reads_ended_ = false;             // a read failed: half-close or a broken stream

  // ResumeReading's alarm (due at once; its callback runs OnResume). A new one each time, as
  // an alarm cannot be set again while its callback may still run.
  std::unique_ptr<grpc::Alarm> resume_alarm_;
  bool resume_scheduled_ = false;        // an OnResume is due that has not started yet
  int resumes_scheduled_ = 0;            // OnResume calls due or running
  bool done_ = false;                    // OnDone ran; the last OnResume deletes the reactor
};

}  // namespace conveyor

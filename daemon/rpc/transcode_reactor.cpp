// The Transcode reactor (see transcode_reactor.h).
#include "transcode_reactor.h"

#include "grpc_status.h"

namespace conveyor {

TranscodeReactor::TranscodeReactor(grpc::CallbackServerContext* context, SessionManager* manager, AuditLog* audit,
                                   Caller caller)
    : context_(context), manager_(manager), audit_(audit), caller_(std::move(caller)) {
  StartRead(&request_);
}

TranscodeReactor::TranscodeReactor(grpc::CallbackServerContext* context, SessionManager* manager,
                                   const Status& refusal)
    : context_(context), manager_(manager) {
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  CountFinish(refusal.code(), std::nullopt);
  Finish(ToGrpcStatus(refusal));
}

void TranscodeReactor::CountFinish(StatusCode code, std::optional<double> session_seconds) const {
  manager_->CountEnd(code, session_seconds);
  const SessionMetricsContext* m = manager_->metrics();
  if (m != nullptr && m->daemon != nullptr) m->daemon->RpcRequests(metrics::RpcMethod::kTranscode, code).Inc();
}

void TranscodeReactor::OnReadDone(bool ok) {
  if (!ok) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      reads_ended_ = true;
    }
    // Half-close (end of input), or the stream broke (OnCancel follows).
    if (session_ && context_->IsCancelled()) {
      session_->Cancel(Status(StatusCode::kCancelled, "cancelled by the client"));
    } else if (session_) {
      session_->EndOfInput();
    } else {
      Close(InvalidArgument("spec: the stream ended before a JobSpec"));
    }
    return;
  }
  if (!session_) {
    if (!request_.has_spec()) {
      Close(InvalidArgument("spec: the first request must carry a JobSpec"));
      return;
    }
    // gRPC names a unix socket peer "unix:PATH" (or "unix-abstract:"): a client on this host.
    const bool unix_peer = context_->peer().rfind("unix", 0) == 0;
    StatusOr<std::shared_ptr<Session>> created = manager_->Create(request_.spec(), caller_.owner, unix_peer);
    if (!created.ok()) {
      audit_->SessionRefused(AuditPeer::Of(*context_), caller_, created.status());
      Close(created.status());
      return;
    }
    session_ = std::move(created).value();
    audit_->SessionStarted(AuditPeer::Of(*context_), caller_, *session_);
    accepted_ = std::chrono::steady_clock::now();
    input_ = std::make_unique<SessionInput>(session_);
    session_->Start(this);
    ReadNext();
    return;
  }
  if (input_->Offer(request_)) ReadNext();
}

void TranscodeReactor::ResumeReading() {
  // Called on the session's thread (its decoder's read callback, or its raw queue freeing
  // room), often with the session's locks held: only schedule the retry. One due retry
  // covers any number of calls, since it offers whatever is kept when it runs.
  std::lock_guard<std::mutex> lock(mu_);
  if (done_ || resume_scheduled_) return;
  resume_scheduled_ = true;
  ++resumes_scheduled_;
  resume_alarm_ = std::make_unique<grpc::Alarm>();
  resume_alarm_->Set(gpr_now(GPR_CLOCK_MONOTONIC), [this](bool) { OnResume(); });
}

void TranscodeReactor::OnResume() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    resume_scheduled_ = false;  // a ResumeReading from now on schedules another
  }
  if (input_->Resume()) ReadNext();
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    --resumes_scheduled_;
    last = DoneLocked();
  }
  if (last) delete this;
}

void TranscodeReactor::ReadNext() {
  // Never a read once the stream is ending: a StartRead after Finish is not allowed (it
  // can run OnDone twice).
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || close_status_ || reads_ended_) return;
  StartRead(&request_);
}

void TranscodeReactor::Send(v1::TranscodeResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || close_status_) return;
  outbox_.push_back(std::move(response));
  MaybeWriteLocked();
}

void TranscodeReactor::Close(Status status) {
  // What was sent before the end is still written, then the status. A client that has
  // stopped reading is let go by the session reaper (Abort) after the idle timeout.
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || close_status_) return;
  close_status_ = std::move(status);
  MaybeWriteLocked();
}

void TranscodeReactor::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!finished_) context_->TryCancel();
}

void TranscodeReactor::MaybeWriteLocked() {
  if (finished_ || write_in_flight_) return;
  if (!outbox_.empty()) {
    writing_ = std::move(outbox_.front());
    outbox_.pop_front();
    write_in_flight_ = true;
    StartWrite(&writing_);
    return;
  }
  if (close_status_) {
    finished_ = true;
    std::optional<double> seconds;
    if (accepted_) seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - *accepted_).count();
    CountFinish(close_status_->code(), seconds);
    Finish(ToGrpcStatus(*close_status_));
  }
}

void TranscodeReactor::OnWriteDone(bool ok) {
  const size_t payload = PayloadBytes(writing_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    write_in_flight_ = false;
    if (!ok) {
      // The stream is broken; OnCancel tells the session. Finish still has to be called.
      outbox_.clear();
      if (!close_status_) close_status_ = Status(StatusCode::kCancelled, "client went away");
    }
    MaybeWriteLocked();
  }
  if (ok && session_) session_->OnSent(payload);
}

void TranscodeReactor::OnCancel() {
  if (session_) {
    session_->Cancel(Status(StatusCode::kCancelled, "cancelled by the client"));
  } else {
    Close(Status(StatusCode::kCancelled, "cancelled by the client"));
  }
}

void TranscodeReactor::OnDone() {
  if (session_) {
    session_->DetachSink();
    manager_->Remove(session_->id());
  }
  bool last;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    last = DoneLocked();
  }
  if (last) delete this;
}

}  // namespace conveyor

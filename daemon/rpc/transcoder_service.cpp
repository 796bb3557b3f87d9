// The Transcoder service's handlers (see transcoder_service.h).
#include "transcoder_service.h"

#include "grpc_status.h"
#include "transcode_reactor.h"

namespace conveyor {

void TranscoderService::set_authenticator(Authenticator auth) {
  auto next = std::make_shared<const Authenticator>(std::move(auth));
  std::lock_guard<std::mutex> lock(auth_mu_);
  auth_ = std::move(next);
}

std::shared_ptr<const Authenticator> TranscoderService::authenticator() const {
  std::lock_guard<std::mutex> lock(auth_mu_);
  return auth_;
}

metrics::DaemonMetrics* TranscoderService::metrics() const {
  const SessionMetricsContext* m = manager_->metrics();
  return m != nullptr ? m->daemon : nullptr;
}

StatusOr<Caller> TranscoderService::Authenticate(const grpc::CallbackServerContext& context,
                                                 metrics::RpcMethod method) {
  metrics::AuthFailure failure{};
  StatusOr<Caller> caller = authenticator()->Check(context, &failure);
  if (caller.ok()) return caller;
  if (metrics() != nullptr) metrics()->AuthFailures(failure).Inc();
  audit_.AuthFailure(AuditPeer::Of(context), method, failure);
  return caller;
}

void TranscoderService::Finish(grpc::ServerUnaryReactor* reactor, metrics::RpcMethod method,
                               const Status& status) const {
  if (metrics() != nullptr) metrics()->RpcRequests(method, status.code()).Inc();
  reactor->Finish(ToGrpcStatus(status));
}

grpc::ServerBidiReactor<v1::TranscodeRequest, v1::TranscodeResponse>* TranscoderService::Transcode(
    grpc::CallbackServerContext* context) {
  StatusOr<Caller> caller = Authenticate(*context, metrics::RpcMethod::kTranscode);
  if (!caller.ok()) return new TranscodeReactor(context, manager_, caller.status());
  return new TranscodeReactor(context, manager_, &audit_, std::move(caller).value());
}

grpc::ServerUnaryReactor* TranscoderService::GetServerStatus(grpc::CallbackServerContext* context,
                                                             const v1::GetServerStatusRequest*,
                                                             v1::ServerStatus* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  constexpr metrics::RpcMethod kMethod = metrics::RpcMethod::kGetServerStatus;
  if (StatusOr<Caller> caller = Authenticate(*context, kMethod); !caller.ok()) {
    Finish(reactor, kMethod, caller.status());
    return reactor;
  }
  response->set_version(version_);
  Scheduler& scheduler = manager_->scheduler();
  for (int i = 0; i < scheduler.num_workers(); ++i) {
    const WorkerSlot& w = scheduler.worker(i);
    const WorkerStats st = w.worker->Stats();
    const Scheduler::WorkerLoad load = scheduler.Load(i);
    v1::WorkerStatus* out = response->add_workers();
    out->set_name(w.worker->Describe());
    out->set_backend(w.info.backend);
    out->set_device(w.info.device_name);
    out->set_device_memory_bytes(w.info.device_memory_bytes);
    out->set_device_memory_used_bytes(st.device_bytes);
    out->set_pinned_bytes(st.pinned_bytes);
    out->set_sessions(load.lanes);
    out->set_queue_depth(load.queued + st.in_flight);
    out->set_frames_done(st.frames_done);
    out->set_frames_failed(st.frames_failed);
    out->set_restarts(st.restarts);
  }
  response->set_sessions_active(manager_->active());
  response->set_max_sessions(manager_->max_sessions());
  response->set_draining(manager_->draining());
  Finish(reactor, kMethod, OkStatus());
  return reactor;
}

grpc::ServerUnaryReactor* TranscoderService::ListSessions(grpc::CallbackServerContext* context,
                                                          const v1::ListSessionsRequest*,
                                                          v1::ListSessionsResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  constexpr metrics::RpcMethod kMethod = metrics::RpcMethod::kListSessions;
  StatusOr<Caller> caller = Authenticate(*context, kMethod);
  if (!caller.ok()) {
    Finish(reactor, kMethod, caller.status());
    return reactor;
  }
  for (const auto& s : manager_->List()) {
    if (!MaySee(*caller, s->owner())) continue;
    v1::SessionInfo* info = response->add_sessions();
    info->set_session_id(s->id());
    info->set_client_label(s->label());
    info->set_worker(s->worker_name());
    const auto since_epoch = s->started_at().time_since_epoch();
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
    info->mutable_started_at()->set_seconds(seconds.count());
    info->mutable_started_at()->set_nanos(
        static_cast<int32_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(since_epoch - seconds).count()));
    info->set_frames_in(s->frames_in());
    info->set_frames_out(s->frames_out());
    info->set_queue_depth(s->queue_depth());
  }
  Finish(reactor, kMethod, OkStatus());
  return reactor;
}

grpc::ServerUnaryReactor* TranscoderService::CancelSession(grpc::CallbackServerContext* context,
                                                           const v1::CancelSessionRequest* request,
                                                           v1::CancelSessionResponse*) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  constexpr metrics::RpcMethod kMethod = metrics::RpcMethod::kCancelSession;
  StatusOr<Caller> caller = Authenticate(*context, kMethod);
  if (!caller.ok()) {
    Finish(reactor, kMethod, caller.status());
    return reactor;
  }
  const std::string& id = request->session_id();
  std::optional<std::string> owner;  // none: no such session
  for (const auto& s : manager_->List()) {
    if (!id.empty() && s->id() == id) owner = s->owner();
  }
  // Who asked to cancel whose session, and what came of it.
  auto finish = [&](const Status& outcome) {
    audit_.Cancel(AuditPeer::Of(*context), *caller, id, owner, outcome);
    Finish(reactor, kMethod, outcome);
    return reactor;
  };
  if (id.empty()) return finish(InvalidArgument("session_id: required"));
  // Another caller's session is answered as if it did not exist.
  if (!caller->admin && !(owner && MaySee(*caller, *owner))) return finish(NotFound("no session " + id));
  return finish(manager_->Cancel(id));
}

}  // namespace conveyor

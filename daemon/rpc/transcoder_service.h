// conveyor.v1.Transcoder on the gRPC callback API: Transcode streams get a
// TranscodeReactor each; the introspection calls answer from the session manager and
// the scheduler's workers. With token auth, each call is checked first, and a caller sees
// and cancels only the sessions it started (unless its token is admin). Every call counts
// into conveyor_rpc_requests_total when it finishes, and a refused token into
// conveyor_auth_failures_total; refusals, cancels and session starts go to the audit log.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "audit_log.h"
#include "auth.h"
#include "conveyor/v1/transcoder.grpc.pb.h"
#include "session_manager.h"

namespace conveyor {

class TranscoderService final : public v1::Transcoder::CallbackService {
 public:
  TranscoderService(SessionManager* manager, std::string version) : manager_(manager), version_(std::move(version)) {}

  // Token auth for every call (default: off). A reload may replace it while calls run:
  // each call is checked once, when it starts, so a stream goes on under the tokens it
  // started with and only new calls see the new ones.
  void set_authenticator(Authenticator auth);
  std::shared_ptr<const Authenticator> authenticator() const;

  grpc::ServerBidiReactor<v1::TranscodeRequest, v1::TranscodeResponse>* Transcode(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetServerStatus(grpc::CallbackServerContext* context,
                                            const v1::GetServerStatusRequest* request,
                                            v1::ServerStatus* response) override;
  grpc::ServerUnaryReactor* ListSessions(grpc::CallbackServerContext* context, const v1::ListSessionsRequest* request,
                                         v1::ListSessionsResponse* response) override;
  grpc::ServerUnaryReactor* CancelSession(grpc::CallbackServerContext* context,
                                          const v1::CancelSessionRequest* request,
                                          v1::CancelSessionResponse* response) override;

 private:
  // The caller, or UNAUTHENTICATED, counted by reason and audited.
  StatusOr<Caller> Authenticate(const grpc::CallbackServerContext& context, metrics::RpcMethod method);
  // Ends a unary call with `status`, counted under `method`.
  void Finish(grpc::ServerUnaryReactor* reactor, metrics::RpcMethod method, const Status& status) const;
  metrics::DaemonMetrics* metrics() const;  // null without metrics

  SessionManager* const manager_;
  const std::string version_;
  mutable std::mutex auth_mu_;
  std::shared_ptr<const Authenticator> auth_ = std::make_shared<const Authenticator>();
  AuditLog audit_;  // outlives the calls: the server is shut down before the service goes
};

}  // namespace conveyor

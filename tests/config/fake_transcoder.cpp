// The scripted fake Transcoder service and its server.
#include "fake_transcoder.h"

#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace conveyor::testing {

std::vector<v1::TranscodeRequest> FakeTranscoder::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::vector<std::string> FakeTranscoder::Cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool FakeTranscoder::saw_cancel() const {
  std::lock_guard<std::mutex> lock(mu_);
  return saw_cancel_;
}

grpc::Status FakeTranscoder::Transcode(
    grpc::ServerContext* context,
    grpc::ServerReaderWriter<v1::TranscodeResponse, v1::TranscodeRequest>* stream) {
  v1::TranscodeRequest request;
  bool fail = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    fail = calls_++ < failures;
  }
  if (fail) {
    if (stream->Read(&request)) {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    for (const v1::TranscodeResponse& r : failure_responses) {
      if (!stream->Write(r)) break;
    }
    return failure;
  }
  // A seekable client does not half-close before Summary: the end of its input is a range
  // with end_of_input, after which each of `read_requests` is sent and answered in turn.
  size_t next_request = 0;
  while (stream->Read(&request)) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    if (mode != Mode::kReadAllThenRespond) break;
    if (request.has_container_range() && request.container_range().end_of_input()) {
      if (next_request == read_requests.size()) break;
      v1::TranscodeResponse r;
      *r.mutable_read_request() = read_requests[next_request++];
      if (!stream->Write(r)) break;
    }
  }
  if (mode == Mode::kFailAfterSpec) return status;
  if (mode == Mode::kWaitForCancel) {
    while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return grpc::Status(grpc::StatusCode::CANCELLED, "client gone");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    saw_cancel_ = context->IsCancelled();
  }
  for (const v1::TranscodeResponse& r : responses) {
    if (!stream->Write(r)) break;
  }
  return status;
}

grpc::Status FakeTranscoder::GetServerStatus(grpc::ServerContext*,
                                             const v1::GetServerStatusRequest*,
                                             v1::ServerStatus* reply) {
  *reply = server_status;
  return status;
}

grpc::Status FakeTranscoder::ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                                          v1::ListSessionsResponse* reply) {
  *reply = sessions;
  return status;
}

grpc::Status FakeTranscoder::CancelSession(grpc::ServerContext*,
                                           const v1::CancelSessionRequest* request,
                                           v1::CancelSessionResponse*) {
  if (std::find(known_sessions.begin(), known_sessions.end(), request->session_id()) ==
      known_sessions.end()) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "no session " + request->session_id());
  }
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_.push_back(request->session_id());
  return grpc::Status::OK;
}

FakeServer::FakeServer(FakeTranscoder* service, const std::string& socket_path) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &tcp_port_);
  builder.RegisterService(service);
  server_ = builder.BuildAndStart();
  if (server_ != nullptr && server_->GetHealthCheckService() != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus("conveyor.v1.Transcoder", true);
  }
}

FakeServer::~FakeServer() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
}

}  // namespace conveyor::testing

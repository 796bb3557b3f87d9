// A scripted in-process conveyor.v1.Transcoder on a unix socket, for conveyorctl's tests:
// it records every request and answers with the responses and status a test sets.
#pragma once

#include <grpcpp/server.h>
#include <grpcpp/server_context.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "conveyor/v1/transcoder.grpc.pb.h"

namespace conveyor::testing {

class FakeTranscoder final : public v1::Transcoder::Service {
 public:
  enum class Mode {
    // read to the client's half-close (or, seekable, the end of its last range), then
    // write `responses`
    kReadAllThenRespond,
    kFailAfterSpec,       // return `status` right after the first request
    kWaitForCancel,       // read the spec, then wait until the client gives up
  };

  // Set before the call.
  Mode mode = Mode::kReadAllThenRespond;
  std::vector<v1::TranscodeResponse> responses;
  // kReadAllThenRespond with seekable input: sent one at a time, each after the client's
  // range with end_of_input, before `responses`.
  std::vector<v1::ReadRequest> read_requests;
  grpc::Status status = grpc::Status::OK;  // of Transcode and of the unary calls
  // The first `failures` Transcode calls write `failure_responses` after the spec and end
  // with `failure` (a daemon gone or refusing, with or without output first); later calls
  // go as `mode` says.
  int failures = 0;
  grpc::Status failure;
  std::vector<v1::TranscodeResponse> failure_responses;
  v1::ServerStatus server_status;
  v1::ListSessionsResponse sessions;
  std::vector<std::string> known_sessions;  // CancelSession: others are NOT_FOUND

  // Read after the call.
  std::vector<v1::TranscodeRequest> Requests() const;
  std::vector<std::string> Cancelled() const;
  bool saw_cancel() const;

  grpc::Status Transcode(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<v1::TranscodeResponse, v1::TranscodeRequest>* stream) override;
  grpc::Status GetServerStatus(grpc::ServerContext*, const v1::GetServerStatusRequest*,
                               v1::ServerStatus* reply) override;
  grpc::Status ListSessions(grpc::ServerContext*, const v1::ListSessionsRequest*,
                            v1::ListSessionsResponse* reply) override;
  grpc::Status CancelSession(grpc::ServerContext*, const v1::CancelSessionRequest* request,
                             v1::CancelSessionResponse*) override;

 private:
  mutable std::mutex mu_;
  std::vector<v1::TranscodeRequest> requests_;
  std::vector<std::string> cancelled_;
  bool saw_cancel_ = false;
  int calls_ = 0;
};

// Serves `service` on unix:`socket_path`, and on a TCP port of 127.0.0.1 (tcp_port()),
// until destroyed. Its grpc.health.v1 says SERVING for conveyor.v1.Transcoder, as the
// daemon's does, for clients that balance on it.
class FakeServer {
 public:
  FakeServer(FakeTranscoder* service, const std::string& socket_path);
  ~FakeServer();
  FakeServer(const FakeServer&) = delete;
  FakeServer& operator=(const FakeServer&) = delete;
  bool ok() const { return server_ != nullptr; }
  int tcp_port() const { return tcp_port_; }

 private:
  std::unique_ptr<grpc::Server> server_;
  int tcp_port_ = 0;
};

}  // namespace conveyor::testing

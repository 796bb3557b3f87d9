// Channel creation and status conversion for conveyorctl.
#include "channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <chrono>

namespace conveyor::ctl {

std::shared_ptr<grpc::Channel> MakeChannel(const config::ListenAddress& target) {
  return grpc::CreateChannel(target.GrpcTarget(), grpc::InsecureChannelCredentials());
}

void SetDeadline(grpc::ClientContext* context, double timeout_s) {
  if (timeout_s <= 0) return;
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(timeout_s)));
}

Status FromGrpcStatus(const grpc::Status& s) {
  if (s.ok()) return OkStatus();
  // Codes are gRPC's numbers by design (status.h); keep ones StatusCode has no name for.
  return Status(static_cast<StatusCode>(static_cast<int>(s.error_code())), s.error_message());
}

const char* GrpcCodeName(int code) {
  static const char* const kNames[] = {
      "OK",
      "CANCELLED",
      "UNKNOWN",
      "INVALID_ARGUMENT",
      "DEADLINE_EXCEEDED",
      "NOT_FOUND",
      "ALREADY_EXISTS",
      "PERMISSION_DENIED",
      "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION",
      "ABORTED",
      "OUT_OF_RANGE",
      "UNIMPLEMENTED",
      "INTERNAL",
      "UNAVAILABLE",
      "DATA_LOSS",
      "UNAUTHENTICATED",
  };
  if (code >= 0 && code < static_cast<int>(std::size(kNames))) return kNames[code];
  return "UNKNOWN";
}

std::string FormatError(const Status& s) {
  return std::string(GrpcCodeName(static_cast<int>(s.code()))) + ": " + s.message();
}

Status RpcError(const grpc::Status& s, const ClientOptions& client) {
  Status st = FromGrpcStatus(s);
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
    st = Status(st.code(),
                st.message() + " (is conveyord listening on " + client.target.ToString() + "?)");
  }
  return st;
}

}  // namespace conveyor::ctl

// conveyorctl's connection to conveyord: the channel for a listen address, call
// deadlines, and gRPC statuses carried as conveyor::Status with their code intact.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <string>

#include "listen_address.h"
#include "status.h"

namespace conveyor::ctl {

struct ClientOptions {
  config::ListenAddress target = config::DefaultListenAddress();  // where conveyord listens
  double timeout_s = 0;  // deadline of each call, in seconds; 0: none
};

// An insecure channel (the API has no TLS yet) with gRPC's default message limits.
std::shared_ptr<grpc::Channel> MakeChannel(const config::ListenAddress& target);

// Sets the deadline now + timeout_s on `context`; does nothing for timeout_s <= 0.
void SetDeadline(grpc::ClientContext* context, double timeout_s);

// The gRPC codes as status.h numbers them; codes StatusCode has no name for (ABORTED,
// PERMISSION_DENIED, ...) keep their number and are named by GrpcCodeName().
Status FromGrpcStatus(const grpc::Status& s);
const char* GrpcCodeName(int code);
// "UNAVAILABLE: message", the form conveyorctl prints after "conveyorctl: ".
std::string FormatError(const Status& s);
// FromGrpcStatus plus, for UNAVAILABLE, which target could not be reached.
Status RpcError(const grpc::Status& s, const ClientOptions& client);

}  // namespace conveyor::ctl

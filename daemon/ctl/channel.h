// conveyorctl's connection to conveyord: the channel for a listen address (plaintext or
// TLS, with a client certificate for mTLS), each call's deadline and bearer token, and
// gRPC statuses carried as conveyor::Status with their code intact.
#pragma once

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include <memory>
#include <string>

#include "default_target.h"
#include "listen_address.h"
#include "status.h"

namespace conveyor::ctl {

struct ClientOptions {
  config::ListenAddress target = DefaultTarget();  // where conveyord listens (default_target.h)
  // Several daemons as one service: a gRPC name-resolver target, "dns:///HOST:PORT" (every
  // address HOST resolves to) or "ipv4:A:P,B:P" / "ipv6:[A]:P,...". Calls then go round
  // robin over the daemons whose grpc.health.v1 says SERVING for conveyor.v1.Transcoder,
  // so one draining or at its cap drops out of the pick set. "": `target` alone.
  std::string balanced_target;
  bool balanced() const { return !balanced_target.empty(); }
  double timeout_s = 0;  // deadline of each call, in seconds; 0: none
  bool tls = false;             // TLS to a TCP target (--tls-ca)
  std::string tls_root_pem;     // CA certificates that verify the server
  std::string tls_cert_pem;     // client certificate for mTLS ("" = none)
  std::string tls_key_pem;
  std::string tls_server_name;  // name checked in the server's certificate ("" = the target's host)
  std::string token;            // bearer token sent with each call ("" = none)
};

// Reads --tls-ca, --tls-cert, --tls-key and --token-file into `client` (the token file's
// first non-blank line). Errors name the flag.
Status LoadClientSecurity(const std::string& ca_file, const std::string& cert_file, const std::string& key_file,
                          const std::string& token_file, ClientOptions* client);

// "dns:...", "ipv4:..." and "ipv6:..." go to client->balanced_target; anything else is a
// listen address (ParseListenAddress) for client->target. Errors name the text.
Status ParseTarget(const std::string& text, ClientOptions* client);
// What the target is called in messages.
std::string TargetText(const ClientOptions& client);

// A channel with gRPC's default message limits: TLS when client.tls, else plaintext;
// round robin with client-side health checking for a balanced target.
std::shared_ptr<grpc::Channel> MakeChannel(const ClientOptions& client);

// Sets the deadline now + timeout_s on `context`; does nothing for timeout_s <= 0.
void SetDeadline(grpc::ClientContext* context, double timeout_s);
// The deadline and, when there is a token, "authorization: Bearer TOKEN".
void PrepareCall(grpc::ClientContext* context, const ClientOptions& client);

// The gRPC codes as status.h numbers them; codes StatusCode has no name for (ABORTED,
// PERMISSION_DENIED, ...) keep their number and are named by GrpcCodeName().
Status FromGrpcStatus(const grpc::Status& s);
const char* GrpcCodeName(int code);
// "UNAVAILABLE: message", the form conveyorctl prints after "conveyorctl: ".
std::string FormatError(const Status& s);
// FromGrpcStatus plus, for UNAVAILABLE, which target could not be reached.
Status RpcError(const grpc::Status& s, const ClientOptions& client);

}  // namespace conveyor::ctl

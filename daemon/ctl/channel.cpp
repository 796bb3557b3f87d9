// Channel creation and status conversion for conveyorctl.
#include "channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <chrono>
#include <fstream>
#include <sstream>

namespace conveyor::ctl {

namespace {

Status ReadWhole(const std::string& flag, const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(flag + ": cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return OkStatus();
}

}  // namespace

Status LoadClientSecurity(const std::string& ca_file, const std::string& cert_file, const std::string& key_file,
                          const std::string& token_file, ClientOptions* client) {
  if (cert_file.empty() != key_file.empty()) return InvalidArgument("--tls-cert and --tls-key go together");
  if (!cert_file.empty() && ca_file.empty()) return InvalidArgument("--tls-cert needs --tls-ca (TLS)");
  if (!ca_file.empty()) {
    client->tls = true;
    RETURN_IF_ERROR(ReadWhole("--tls-ca", ca_file, &client->tls_root_pem));
  }
  if (!cert_file.empty()) {
    RETURN_IF_ERROR(ReadWhole("--tls-cert", cert_file, &client->tls_cert_pem));
    RETURN_IF_ERROR(ReadWhole("--tls-key", key_file, &client->tls_key_pem));
  }
  if (!token_file.empty()) {
    std::string text;
    RETURN_IF_ERROR(ReadWhole("--token-file", token_file, &text));
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream words(line);
      if (words >> client->token) break;
    }
    if (client->token.empty()) return InvalidArgument("--token-file: " + token_file + " holds no token");
  }
  return OkStatus();
}

Status ParseTarget(const std::string& text, ClientOptions* client) {
  for (const char* scheme : {"dns:", "ipv4:", "ipv6:"}) {
    if (text.rfind(scheme, 0) != 0) continue;
    const std::string rest = text.substr(std::string(scheme).size());
    if (rest.empty() || rest == "///") return InvalidArgument("'" + text + "': no address after " + scheme);
    client->balanced_target = text;
    return OkStatus();
  }
  ASSIGN_OR_RETURN(client->target, config::ParseListenAddress(text));
  client->balanced_target.clear();
  return OkStatus();
}

std::string TargetText(const ClientOptions& client) {
  return client.balanced() ? client.balanced_target : client.target.ToString();
}

// Round robin over the addresses the target resolves to, each in the pick set while its
// grpc.health.v1 Watch for the service says SERVING (gRPC's client-side health checking).
constexpr const char* kBalancedServiceConfig =
    R"({"loadBalancingConfig": [{"round_robin": {}}],)"
    R"( "healthCheckConfig": {"serviceName": "conveyor.v1.Transcoder"}})";

std::shared_ptr<grpc::Channel> MakeChannel(const ClientOptions& client) {
  grpc::ChannelArguments args;
  if (client.balanced()) args.SetServiceConfigJSON(kBalancedServiceConfig);
  const std::string target = client.balanced() ? client.balanced_target : client.target.GrpcTarget();
  const bool tcp = client.balanced() || client.target.kind == config::ListenAddress::Kind::kTcp;
  if (!client.tls || !tcp) return grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args);
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = client.tls_root_pem;
  ssl.pem_cert_chain = client.tls_cert_pem;
  ssl.pem_private_key = client.tls_key_pem;
  if (!client.tls_server_name.empty()) args.SetSslTargetNameOverride(client.tls_server_name);
  return grpc::CreateCustomChannel(target, grpc::SslCredentials(ssl), args);
}

void PrepareCall(grpc::ClientContext* context, const ClientOptions& client) {
  SetDeadline(context, client.timeout_s);
  if (!client.token.empty()) context->AddMetadata("authorization", "Bearer " + client.token);
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
  // The hint only where no connection was made: an UNAVAILABLE that the daemon itself
  // answered (draining, a drain timeout, a worker gone) has its own reason.
  if (s.error_code() != grpc::StatusCode::UNAVAILABLE || s.error_message().find("failed to connect") == std::string::npos) {
    return st;
  }
  // A server that ends the TLS handshake shows only "Socket closed" here: under mTLS that is
  // mostly a client certificate it did not accept (its own log has the reason).
  if (client.tls && s.error_message().find("Socket closed") != std::string::npos) {
    const std::string why = client.tls_cert_pem.empty()
                                ? "if it checks client certificates (server.tls_client_ca_file), give one it "
                                  "trusts with --tls-cert and --tls-key"
                                : "it may have refused the certificate in --tls-cert: is it signed by the CA in "
                                  "the server's server.tls_client_ca_file?";
    return Status(st.code(), st.message() + " (the server at " + TargetText(client) +
                                 " closed the connection during the TLS handshake; " + why + ")");
  }
  if (client.balanced()) {
    return Status(st.code(), st.message() + " (no conveyord of " + client.balanced_target +
                                 " is reachable and serving: each is gone, draining or at its session cap)");
  }
  return Status(st.code(), st.message() + " (is conveyord listening on " + client.target.ToString() + "?)");
}

}  // namespace conveyor::ctl

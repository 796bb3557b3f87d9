// The gRPC server's lifecycle: binds every listen address, serves conveyor.v1.Transcoder,
// the standard grpc.health.v1.Health (for "" and "conveyor.v1.Transcoder") and server
// reflection, and shuts down with a deadline. TCP listeners serve TLS (mTLS with a client
// CA) when the config names a certificate; unix sockets stay plaintext. Token auth
// guards conveyor.v1.Transcoder only: health and reflection stay open. A reload reads the
// token file and the TLS files again.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "daemon_config.h"
#include "frame_attach_server.h"
#include "listen_address.h"
#include "reloadable_server_tls.h"
#include "session_manager.h"
#include "tls_material.h"
#include "transcoder_service.h"

namespace conveyor {

class RpcServer {
 public:
  // Serves config.EffectiveListen() with config's TLS and token settings. Files that
  // cannot be read, do not parse, or a key that is not the certificate's give
  // INVALID_ARGUMENT naming the option.
  static StatusOr<std::unique_ptr<RpcServer>> Start(const config::DaemonConfig& config, SessionManager* manager,
                                                    const std::string& version);
  // Plaintext, no auth.
  static StatusOr<std::unique_ptr<RpcServer>> Start(const std::vector<config::ListenAddress>& listen,
                                                    SessionManager* manager, const std::string& version);
  ~RpcServer();

  // What clients can connect to, with the ports TCP port 0 resolved to.
  const std::vector<std::string>& endpoints() const { return endpoints_; }
  // Health for both service names: SERVING or NOT_SERVING.
  void SetServing(bool serving);
  // Stops accepting calls, cancels the ones still running after `deadline_s`.
  void Shutdown(double deadline_s);

  // Reads the token file and the TLS key pair and client CA again, from the paths the
  // server started with (a new path needs a restart), and checks them all before any
  // takes effect: an error refuses the whole reload and the running credentials stay.
  // Calls and connections already made keep what they started with; new calls are checked
  // against the new tokens, and new connections get the new certificate (within
  // ReloadableServerTls::kRefreshS, which this waits out). The settings whose files
  // changed.
  StatusOr<std::vector<std::string>> ReloadCredentials();
  // The TCP listeners' TLS material, reloads included; null without TLS.
  const ReloadableServerTls* tls() const { return tls_.get(); }

 private:
  RpcServer(SessionManager* manager, const std::string& version);

  TranscoderService service_;
  std::string token_file_;  // server.auth_token_file; "" without token auth
  TlsFiles tls_files_;
  // Before server_, so it outlives it: gRPC reads the TLS material from it.
  std::unique_ptr<ReloadableServerTls> tls_;  // null without TLS
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<FrameAttachServer> attach_;  // beside the first unix socket
  std::vector<std::string> endpoints_;
  bool shut_down_ = false;
};

}  // namespace conveyor

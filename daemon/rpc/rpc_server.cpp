// gRPC server lifecycle (see rpc_server.h).
#include "rpc_server.h"

#include <errno.h>
#include <grp.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>
#include <spdlog/spdlog.h>

#include "scoped_umask.h"

namespace conveyor {
namespace {

// Gives the unix socket at `path` to `group` (server.socket_group), owner unchanged, so
// that the group's members may connect. Nothing here stops the daemon: a host without
// the group (a developer's machine) is normal, and when chown fails the daemon's own
// user can still connect.
void GiveSocketToGroup(const std::string& path, const std::string& group) {
  if (group.empty()) return;
  // getgrnam_r, not getgrnam: gRPC's threads already run, and getgrnam's result is static.
  struct group entry {};
  struct group* found = nullptr;
  std::vector<char> buffer(16384);
  int err;
  while ((err = getgrnam_r(group.c_str(), &entry, buffer.data(), buffer.size(), &found)) == ERANGE &&
         buffer.size() < (1u << 24)) {
    buffer.resize(buffer.size() * 2);
  }
  // Not found is 0 with no entry, or ENOENT or ESRCH from some NSS modules.
  if (err != 0 && err != ENOENT && err != ESRCH) {
    spdlog::warn("server.socket_group: looking up group '{}': {}; {} keeps its group", group, std::strerror(err),
                 path);
    return;
  }
  if (found == nullptr) {
    spdlog::info("server.socket_group: no group '{}' on this host; {} keeps its group", group, path);
    return;
  }
  if (chown(path.c_str(), static_cast<uid_t>(-1), found->gr_gid) != 0) {
    spdlog::warn("server.socket_group: chown({}, group {}): {}", path, group, std::strerror(errno));
  }
}

// Why gRPC could not bind the TCP address `a` (it says only that it could not): the error
// a plain bind() of the same address gets, e.g. "Address already in use".
std::string WhyNotBound(const config::ListenAddress& a) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const int rc = getaddrinfo(a.host.empty() ? nullptr : a.host.c_str(), std::to_string(a.port).c_str(), &hints, &found);
  if (rc != 0) return gai_strerror(rc);
  std::string why = "gRPC did not say why";
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // as gRPC sets it
    const bool bound = bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
    const int err = errno;
    close(fd);
    if (!bound) {
      why = std::strerror(err);
      break;
    }
  }
  freeaddrinfo(found);
  return why;
}

// Bearer tokens sent in plaintext beyond this host (server.allow_insecure_tcp) can be read
// on the path and replayed: allowed, as the operator asked for it, but said at every start.
void WarnOfPlaintextTokens(const std::vector<config::ListenAddress>& listen, bool tls) {
  if (tls) return;
  for (const config::ListenAddress& a : listen) {
    if (a.kind != config::ListenAddress::Kind::kTcp || a.IsLoopback()) continue;
    spdlog::warn("server.auth_token_file: tokens reach {} in plaintext (server.allow_insecure_tcp), where "
                 "anyone on the network path can read and replay them; configure server.tls_cert_file and "
                 "server.tls_key_file",
                 a.ToString());
  }
}

}  // namespace

RpcServer::RpcServer(SessionManager* manager, const std::string& version) : service_(manager, version) {}

RpcServer::~RpcServer() { Shutdown(0); }

StatusOr<std::unique_ptr<RpcServer>> RpcServer::Start(const std::vector<config::ListenAddress>& listen,
                                                      SessionManager* manager, const std::string& version) {
  config::DaemonConfig c;
  c.listen = listen;
  if (listen.empty()) return InvalidArgument("listen: no address to serve on");
  return Start(c, manager, version);
}

StatusOr<std::unique_ptr<RpcServer>> RpcServer::Start(const config::DaemonConfig& config, SessionManager* manager,
                                                      const std::string& version) {
  const std::vector<config::ListenAddress> listen = config.EffectiveListen();
  if (listen.empty()) return InvalidArgument("listen: no address to serve on");
  const TlsFiles tls_files{config.tls_cert_file, config.tls_key_file, config.tls_client_ca_file};
  std::unique_ptr<ReloadableServerTls> tls;
  if (config.tls_enabled()) {
    ASSIGN_OR_RETURN(const TlsMaterial material, LoadTlsMaterial(tls_files));
    ASSIGN_OR_RETURN(tls, ReloadableServerTls::Create(material));
  }
  std::shared_ptr<grpc::ServerCredentials> tcp_credentials =
      tls ? tls->credentials() : grpc::InsecureServerCredentials();
  Authenticator auth;
  if (!config.auth_token_file.empty()) {
    ASSIGN_OR_RETURN(auth, Authenticator::LoadFile(config.auth_token_file));
    WarnOfPlaintextTokens(listen, config.tls_enabled());
  }
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::unique_ptr<RpcServer> rpc(new RpcServer(manager, version));
  rpc->service_.set_authenticator(std::move(auth));
  rpc->token_file_ = config.auth_token_file;
  rpc->tls_files_ = tls_files;
  rpc->tls_ = std::move(tls);
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, with which a second conveyord binds the same port and
  // the kernel splits new connections between the two: a daemon must own its address.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  std::vector<int> ports(listen.size(), 0);
  for (size_t i = 0; i < listen.size(); ++i) {
    RETURN_IF_ERROR(config::PrepareUnixSocket(listen[i]));
    // A unix socket is guarded by its file permissions; TCP gets TLS when configured.
    const bool tcp = listen[i].kind == config::ListenAddress::Kind::kTcp;
    builder.AddListeningPort(listen[i].GrpcTarget(), tcp ? tcp_credentials : grpc::InsecureServerCredentials(),
                             &ports[i]);
  }
  builder.RegisterService(&rpc->service_);
  {
    // Unix sockets are bound 0660 (owner and group, see the systemd unit), not chmodded after.
    const ScopedUmask socket_mode(kOwnerAndGroupSocketMask);
    rpc->server_ = builder.BuildAndStart();
  }
  // gRPC binds the addresses in order and stops at the first it cannot bind (no server
  // then): that one is the first whose port is still 0.
  for (size_t i = 0; i < listen.size(); ++i) {
    if (ports[i] != 0) continue;
    if (rpc->server_) rpc->server_->Shutdown();
    const bool tcp = listen[i].kind == config::ListenAddress::Kind::kTcp;
    return Unavailable("listen: could not bind " + listen[i].ToString() +
                       (tcp ? ": " + WhyNotBound(listen[i]) + " (another conveyord, or another server, on that port?)"
                            : std::string()));
  }
  if (!rpc->server_) return Unavailable("gRPC server failed to start (see the log)");
  for (size_t i = 0; i < listen.size(); ++i) {
    if (listen[i].kind == config::ListenAddress::Kind::kUnix) {
      GiveSocketToGroup(listen[i].path, config.socket_group);
      rpc->endpoints_.push_back(listen[i].GrpcTarget());
    } else {
      config::ListenAddress bound = listen[i];
      bound.port = ports[i];
      rpc->endpoints_.push_back(bound.GrpcTarget());
    }
  }
  // Shared memory (frames in, JPEGs out) beside the first unix socket: a client must share this host.
  const auto first_unix = std::find_if(listen.begin(), listen.end(), [](const config::ListenAddress& a) {
    return a.kind == config::ListenAddress::Kind::kUnix;
  });
  if (!config.shared_memory) {
    spdlog::info("shared memory is off (server.shared_memory = false)");
  } else if (first_unix == listen.end()) {
    spdlog::info("shared memory is off: it needs a unix listen address to sit beside");
  } else {
    const std::string path = FrameAttachSocketPath(first_unix->path);
    StatusOr<std::unique_ptr<FrameAttachServer>> attach = FrameAttachServer::Start(path, manager);
    if (attach.ok()) {
      GiveSocketToGroup(path, config.socket_group);
      rpc->attach_ = std::move(attach).value();
      manager->SetSharedMemorySocket(path);
    } else {
      spdlog::warn("shared memory is off: {}", attach.status().ToString());
    }
  }
  rpc->SetServing(true);
  return rpc;
}

void RpcServer::SetServing(bool serving) {
  if (!server_) return;
  grpc::HealthCheckServiceInterface* health = server_->GetHealthCheckService();
  if (health == nullptr) return;
  health->SetServingStatus(serving);
  health->SetServingStatus("conveyor.v1.Transcoder", serving);
}

StatusOr<std::vector<std::string>> RpcServer::ReloadCredentials() {
  // Everything is read and checked first; the TLS material, the one step that can still
  // fail, is replaced before the tokens.
  std::optional<Authenticator> tokens;
  if (!token_file_.empty()) {
    ASSIGN_OR_RETURN(Authenticator read, Authenticator::LoadFile(token_file_));
    if (!(read == *service_.authenticator())) tokens = std::move(read);
  }
  std::vector<std::string> changed;
  if (tls_) {
    ASSIGN_OR_RETURN(const TlsMaterial material, LoadTlsMaterial(tls_files_));
    const TlsMaterial before = tls_->material();
    ASSIGN_OR_RETURN(changed, tls_->Replace(material));
    if (material.cert_chain != before.cert_chain || material.private_key != before.private_key) {
      spdlog::info("reload: new TLS connections get the certificate in {} ({})", tls_files_.cert_file,
                   DescribeCertificate(material.cert_chain));
    }
    if (material.client_ca != before.client_ca) {
      spdlog::info("reload: new TLS connections' client certificates are checked against {}",
                   tls_files_.client_ca_file);
    }
  }
  if (tokens) {
    service_.set_authenticator(std::move(*tokens));
    changed.push_back("server.auth_token_file");
    spdlog::info("reload: new calls are checked against the tokens in {}", token_file_);
  }
  return changed;
}

void RpcServer::Shutdown(double deadline_s) {
  if (!server_ || shut_down_) return;
  shut_down_ = true;
  SetServing(false);
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                                           std::chrono::duration<double>(deadline_s)));
  server_->Wait();
  attach_.reset();
}

}  // namespace conveyor

// gRPC server lifecycle (see rpc_server.h).
#include "rpc_server.h"

#include <sys/stat.h>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

namespace conveyor {

RpcServer::RpcServer(SessionManager* manager, const std::string& version) : service_(manager, version) {}

RpcServer::~RpcServer() { Shutdown(0); }

StatusOr<std::unique_ptr<RpcServer>> RpcServer::Start(const std::vector<config::ListenAddress>& listen,
                                                      SessionManager* manager, const std::string& version) {
  if (listen.empty()) return InvalidArgument("listen: no address to serve on");
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  std::unique_ptr<RpcServer> rpc(new RpcServer(manager, version));
  grpc::ServerBuilder builder;
  std::vector<int> ports(listen.size(), 0);
  for (size_t i = 0; i < listen.size(); ++i) {
    RETURN_IF_ERROR(config::PrepareUnixSocket(listen[i]));
    // TLS arrives with the security work; until then every listener is plaintext.
    builder.AddListeningPort(listen[i].GrpcTarget(), grpc::InsecureServerCredentials(), &ports[i]);
  }
  builder.RegisterService(&rpc->service_);
  rpc->server_ = builder.BuildAndStart();
  if (!rpc->server_) return Unavailable("gRPC server failed to start (see the log for the address it could not bind)");
  for (size_t i = 0; i < listen.size(); ++i) {
    if (ports[i] == 0) {
      rpc->server_->Shutdown();
      return Unavailable("could not bind " + listen[i].ToString());
    }
    if (listen[i].kind == config::ListenAddress::Kind::kUnix) {
      chmod(listen[i].path.c_str(), 0660);  // owner and group (see the systemd unit)
      rpc->endpoints_.push_back(listen[i].GrpcTarget());
    } else {
      config::ListenAddress bound = listen[i];
      bound.port = ports[i];
      rpc->endpoints_.push_back(bound.GrpcTarget());
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

void RpcServer::Shutdown(double deadline_s) {
  if (!server_ || shut_down_) return;
  shut_down_ = true;
  SetServing(false);
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                                           std::chrono::duration<double>(deadline_s)));
  server_->Wait();
}

}  // namespace conveyor

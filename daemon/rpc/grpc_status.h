// conveyor::Status to grpc::Status: the codes are gRPC's by design (status.h).
#pragma once

#include <grpcpp/support/status.h>

#include "status.h"

namespace conveyor {

inline grpc::Status ToGrpcStatus(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code())), s.message());
}

}  // namespace conveyor

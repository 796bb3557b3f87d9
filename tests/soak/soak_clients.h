// The soak test's clients, one function per behaviour: a good stream, a client that
// cancels at a chosen point, one that stops reading (stalls), and one that sends garbage.
// Each runs one Transcode stream on its own connection and says whether the daemon
// answered as it should; none asserts, so that 64 of them can run on threads and the test
// reports every problem at the end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "stream_specs.h"

namespace conveyor::soak {

enum class Role { kGood, kCancel, kStall, kGarbage };
const char* RoleName(Role role);

// What one session did.
struct SessionRecord {
  Role role = Role::kGood;
  std::string what;  // the stream or the kind of garbage
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string message;
  bool faulted = false;        // ended by an injected worker fault
  size_t frames = 0;           // whole frames received, all renditions
  double released_after_s = 0; // stalled clients: from the stall until the daemon let go
  double released_after_idle_s = 0;  // stalls: from the daemon's last frame for it until then
  uint64_t frames_out_at_stall = 0, frames_out_at_release = 0;  // the daemon's count, stalls
  int refused = 0;             // RESOURCE_EXHAUSTED (session cap) answers retried first
  std::string problem;         // empty: the daemon answered as it should
};

struct ClientEnv {
  std::string target;       // the daemon's gRPC address
  double idle_timeout_s = 0;  // the daemon's limits.idle_timeout_s
};

// A stub on a connection of its own, as a separate client would have: with a shared one,
// a stalled stream would share flow-control windows with the others.
std::unique_ptr<v1::Transcoder::Stub> NewClientStub(const std::string& target);

// The whole stream; OK with every frame exactly as the solo run gave it, or an injected
// fault after a correct prefix.
SessionRecord RunGoodClient(const ClientEnv& env, const StreamSpec& spec, const Reference& want);

// Sends `spec` without half-closing and cancels once `cancel_after` whole frames have
// arrived (0: right after Started): CANCELLED, with a correct prefix before it.
SessionRecord RunCancellingClient(const ClientEnv& env, const StreamSpec& spec, const Reference& want,
                                  size_t cancel_after);

// Sends `spec` for ever and stops reading after `read_before_stall` frames; the daemon must
// let the session go after its idle timeout (DEADLINE_EXCEEDED, or CANCELLED when it had
// to abort the stream because the status itself could not be written).
SessionRecord RunStallingClient(const ClientEnv& env, const StreamSpec& spec, size_t read_before_stall);

// Garbage of kind `kind` (0 .. kGarbageKinds-1) on a raw `spec`: INVALID_ARGUMENT naming
// what was wrong.
constexpr int kGarbageKinds = 7;
SessionRecord RunGarbageClient(const ClientEnv& env, const StreamSpec& spec, int kind, uint32_t seed);

}  // namespace conveyor::soak

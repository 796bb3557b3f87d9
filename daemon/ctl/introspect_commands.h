// conveyorctl status, sessions and cancel: one unary call each, printed as a table or,
// with --json, as one JSON line.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "channel.h"
#include "conveyor/v1/transcoder.pb.h"
#include "status.h"

namespace conveyor::ctl {

Status RunStatusCommand(const ClientOptions& client, bool json, std::ostream& out);
Status RunSessionsCommand(const ClientOptions& client, bool json, std::ostream& out);
Status RunCancelCommand(const ClientOptions& client, const std::string& session_id,
                        std::ostream& out);

// The tables, apart from the calls so tests can check them. `now_unix_s` gives each
// session's age.
std::string FormatServerStatus(const v1::ServerStatus& status);
std::string FormatSessions(const v1::ListSessionsResponse& sessions, int64_t now_unix_s);
// One line of JSON with every field present (zeros included) and the proto field names.
StatusOr<std::string> ToJsonLine(const google::protobuf::Message& message);

// "1.5 GiB", "512 MiB", "0 B".
std::string FormatBytes(uint64_t bytes);

}  // namespace conveyor::ctl

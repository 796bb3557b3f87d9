// GetServerStatus, ListSessions and CancelSession for conveyorctl, and their tables.
#include "introspect_commands.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "conveyor/v1/transcoder.grpc.pb.h"

namespace conveyor::ctl {
namespace {

// Left-aligned columns, two spaces apart, no trailing blanks.
std::string RenderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (row.size() > width.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string FormatAge(int64_t seconds) {
  if (seconds < 0) seconds = 0;
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(seconds));
  } else if (seconds < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(seconds / 60),
                  static_cast<long long>(seconds % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(seconds / 3600),
                  static_cast<long long>(seconds / 60 % 60));
  }
  return buf;
}

std::unique_ptr<v1::Transcoder::Stub> NewStub(const ClientOptions& client) {
  return v1::Transcoder::NewStub(MakeChannel(client));
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  size_t unit = 0;
  while (v >= 1024 && unit + 1 < std::size(kUnits)) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || v >= 100 || v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof(buf), "%.0f %s", v, kUnits[unit]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[unit]);
  }
  return buf;
}

std::string FormatServerStatus(const v1::ServerStatus& s) {
  std::string out = "conveyord " + s.version() + ": " + std::to_string(s.sessions_active()) +
                    " of " + std::to_string(s.max_sessions()) + " sessions" +
                    (s.draining() ? ", draining" : "") + "\n";
  std::vector<std::vector<std::string>> rows = {{"WORKER", "BACKEND", "DEVICE", "MEMORY USED",
                                                 "PINNED", "SESSIONS", "QUEUE", "FRAMES", "FAILED",
                                                 "RESTARTS"}};
  for (const v1::WorkerStatus& w : s.workers()) {
    const std::string memory = w.device_memory_bytes() == 0
                                   ? "-"
                                   : FormatBytes(w.device_memory_used_bytes()) + " / " +
                                         FormatBytes(w.device_memory_bytes());
    rows.push_back({w.name(), w.backend(), w.device().empty() ? "-" : w.device(), memory,
                    FormatBytes(w.pinned_bytes()), std::to_string(w.sessions()),
                    std::to_string(w.queue_depth()), std::to_string(w.frames_done()),
                    std::to_string(w.frames_failed()), std::to_string(w.restarts())});
  }
  if (s.workers().empty()) return out + "no workers\n";
  return out + RenderTable(rows);
}

std::string FormatSessions(const v1::ListSessionsResponse& r, int64_t now_unix_s) {
  if (r.sessions().empty()) return "no sessions\n";
  std::vector<std::vector<std::string>> rows = {
      {"SESSION", "LABEL", "WORKER", "AGE", "FRAMES IN", "FRAMES OUT", "QUEUE"}};
  for (const v1::SessionInfo& s : r.sessions()) {
    const std::string age =
        s.has_started_at() ? FormatAge(now_unix_s - s.started_at().seconds()) : "-";
    rows.push_back({s.session_id(), s.client_label().empty() ? "-" : s.client_label(), s.worker(),
                    age, std::to_string(s.frames_in()), std::to_string(s.frames_out()),
                    std::to_string(s.queue_depth())});
  }
  return RenderTable(rows);
}

Status RunStatusCommand(const ClientOptions& client, bool json, std::ostream& out) {
  grpc::ClientContext context;
  PrepareCall(&context, client);
  v1::ServerStatus reply;
  const grpc::Status s = NewStub(client)->GetServerStatus(&context, {}, &reply);
  if (!s.ok()) return RpcError(s, client);
  if (json) {
    ASSIGN_OR_RETURN(const std::string line, ToJsonLine(reply));
    out << line << "\n";
  } else {
    out << FormatServerStatus(reply);
  }
  return OkStatus();
}

Status RunSessionsCommand(const ClientOptions& client, bool json, std::ostream& out) {
  grpc::ClientContext context;
  PrepareCall(&context, client);
  v1::ListSessionsResponse reply;
  const grpc::Status s = NewStub(client)->ListSessions(&context, {}, &reply);
  if (!s.ok()) return RpcError(s, client);
  if (json) {
    ASSIGN_OR_RETURN(const std::string line, ToJsonLine(reply));
    out << line << "\n";
  } else {
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
        std::chrono::system_clock::now().time_since_epoch());
    out << FormatSessions(reply, now.count());
  }
  return OkStatus();
}

Status RunCancelCommand(const ClientOptions& client, const std::string& session_id,
                        std::ostream& out) {
  grpc::ClientContext context;
  PrepareCall(&context, client);
  v1::CancelSessionRequest request;
  request.set_session_id(session_id);
  v1::CancelSessionResponse reply;
  const grpc::Status s = NewStub(client)->CancelSession(&context, request, &reply);
  if (!s.ok()) return RpcError(s, client);
  out << "cancelled " << session_id << "\n";
  return OkStatus();
}

StatusOr<std::string> ToJsonLine(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) return Internal("cannot print the reply as JSON: " + status.ToString());
  return json;
}

}  // namespace conveyor::ctl

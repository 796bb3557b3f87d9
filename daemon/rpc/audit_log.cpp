// The audit trail of Transcoder calls (see audit_log.h).
#include "audit_log.h"

#include <cstdio>

#include <grpc/grpc_security_constants.h>
#include <spdlog/spdlog.h>

namespace conveyor {
namespace {

using Clock = LogRateLimiter::Clock;

std::array<LogRateLimiter, AuditLog::kEventCount> MakeLimits() {
  const LogRateLimiter l(AuditLog::kLinesPerWindow, AuditLog::kWindow);
  return {l, l, l, l, l};
}

// A refused token is worth an operator's look; the rest is the record of normal work.
spdlog::level::level_enum LevelOf(AuditLog::Event event) {
  return event == AuditLog::Event::kAuthFailure ? spdlog::level::warn : spdlog::level::info;
}

// A caller's identity: with token auth off every caller is the anonymous owner "".
std::string Identity(const std::string& owner) { return owner.empty() ? "anonymous" : owner; }
std::string Identity(const Caller& caller) { return Identity(caller.owner); }

// "peer=... identity=..." and, under mutual TLS, "cert=...".
std::string Who(const AuditPeer& peer, const std::string& identity) {
  std::string who = "peer=" + AuditValue(peer.address) + " identity=" + AuditValue(identity);
  if (!peer.cert_subject.empty()) who += " cert=" + AuditValue(peer.cert_subject);
  return who;
}

}  // namespace

std::string AuditValue(const std::string& value) {
  bool plain = !value.empty();
  for (unsigned char c : value) {
    if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '=') plain = false;
  }
  if (plain) return value;
  std::string quoted = "\"";
  for (unsigned char c : value) {
    if (c == '"' || c == '\\') {
      quoted += '\\';
      quoted += static_cast<char>(c);
    } else if (c < ' ' || c >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      quoted += hex;
    } else {
      quoted += static_cast<char>(c);
    }
  }
  return quoted + "\"";
}

AuditPeer AuditPeer::Of(const grpc::ServerContextBase& context) {
  AuditPeer p;
  p.address = context.peer();
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth != nullptr) {
    for (const grpc::string_ref& v : auth->FindPropertyValues(GRPC_X509_SUBJECT_PROPERTY_NAME)) {
      p.cert_subject.assign(v.data(), v.size());
      break;
    }
  }
  return p;
}

const char* AuditLog::EventName(Event event) {
  switch (event) {
    case Event::kAuthFailure: return "auth_failure";
    case Event::kSessionCap: return "session_cap";
    case Event::kDraining: return "draining";
    case Event::kCancel: return "cancel";
    case Event::kSessionStart: return "session_start";
  }
  return "unknown";
}

AuditLog::AuditLog() : limits_(MakeLimits()) {
  summaries_ = std::thread([this] { SummaryLoop(); });
}

AuditLog::~AuditLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  summaries_.join();
  // What the last windows suppressed is written, whether or not they have passed.
  std::lock_guard<std::mutex> lock(mu_);
  WriteDueSummariesLocked(Clock::now() + kWindow);
}

void AuditLog::WriteSummary(Event event, uint64_t suppressed) {
  if (suppressed == 0) return;
  spdlog::log(LevelOf(event), "audit: suppressed {} similar {} lines (at most {} are written in {} s)", suppressed,
              EventName(event), kLinesPerWindow, kWindow.count());
}

std::optional<Clock::time_point> AuditLog::WriteDueSummariesLocked(Clock::time_point now) {
  std::optional<Clock::time_point> next;
  for (size_t i = 0; i < kEventCount; ++i) {
    const Event event = static_cast<Event>(i);
    WriteSummary(event, limits_[i].TakeSuppressed(now));
    const std::optional<Clock::time_point> due = limits_[i].SummaryDue();
    if (due && (!next || *due < *next)) next = due;
  }
  return next;
}

bool AuditLog::Admit(Event event) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = Clock::now();
  LogRateLimiter& limit = limits_[static_cast<size_t>(event)];
  const bool had_due = limit.SummaryDue().has_value();
  WriteSummary(event, limit.TakeSuppressed(now));
  const bool admitted = limit.Admit(now);
  // The first suppressed line of a window: the summary thread waits for its end.
  if (!had_due && limit.SummaryDue()) wake_.notify_all();
  return admitted;
}

void AuditLog::SummaryLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const std::optional<Clock::time_point> next = WriteDueSummariesLocked(Clock::now());
    if (next) {
      wake_.wait_until(lock, *next, [&] { return stopping_; });
    } else {
      wake_.wait(lock);
    }
  }
}

void AuditLog::AuthFailure(const AuditPeer& peer, metrics::RpcMethod method, metrics::AuthFailure reason) {
  if (!Admit(Event::kAuthFailure)) return;
  spdlog::warn("audit: auth_failure {} method={} reason={}", Who(peer, "-"), metrics::RpcMethodName(method),
               metrics::AuthFailureName(reason));
}

void AuditLog::SessionRefused(const AuditPeer& peer, const Caller& caller, const Status& refusal) {
  Event event;
  if (refusal.code() == StatusCode::kResourceExhausted) {
    event = Event::kSessionCap;
  } else if (refusal.code() == StatusCode::kUnavailable) {
    event = Event::kDraining;
  } else {
    return;
  }
  if (!Admit(event)) return;
  spdlog::info("audit: {} {} code={} message={}", EventName(event), Who(peer, Identity(caller)),
               StatusCodeName(refusal.code()), AuditValue(refusal.message()));
}

void AuditLog::Cancel(const AuditPeer& peer, const Caller& caller, const std::string& session_id,
                      const std::optional<std::string>& owner, const Status& outcome) {
  if (!Admit(Event::kCancel)) return;
  spdlog::info("audit: cancel {} session={} owner={} code={}", Who(peer, Identity(caller)), AuditValue(session_id),
               AuditValue(owner ? Identity(*owner) : "-"), StatusCodeName(outcome.code()));
}

void AuditLog::SessionStarted(const AuditPeer& peer, const Caller& caller, const Session& session) {
  if (!Admit(Event::kSessionStart)) return;
  spdlog::info("audit: session_start {} session={} worker={} label={}", Who(peer, Identity(caller)),
               AuditValue(session.id()), AuditValue(session.worker_name()), AuditValue(session.label()));
}

}  // namespace conveyor

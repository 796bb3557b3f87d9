// The audit trail of conveyor.v1.Transcoder, on the daemon's log: a line for each call
// refused for its token, each stream refused at the session cap or while draining, each
// CancelSession (who asked to cancel whose session, and the outcome) and each session
// started. Every line names the peer (gRPC's address of the client) and the caller's
// identity: the token's (Authenticator::Identity, never the token), "anonymous" without
// token auth, "-" when the token was refused, and under mutual TLS also the client
// certificate's subject. Lines start with "audit: " and the event, then key=value fields,
// so `journalctl -u conveyord -g ' audit: '` or grep picks them out.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "auth.h"
#include "daemon_metrics.h"
#include "log_rate_limiter.h"
#include "session.h"
#include "status.h"

namespace conveyor {

// The other end of a call, as the audit lines name it.
struct AuditPeer {
  std::string address;       // context.peer(): "ipv4:10.0.0.5:41234", "unix:..."
  std::string cert_subject;  // the client certificate's subject (mutual TLS), else ""
  static AuditPeer Of(const grpc::ServerContextBase& context);
};

class AuditLog {
 public:
  enum class Event { kAuthFailure, kSessionCap, kDraining, kCancel, kSessionStart };
  static constexpr size_t kEventCount = 5;
  static const char* EventName(Event event);

  // Each event gets at most kLinesPerWindow lines a kWindow; the rest are counted and
  // summed up in one line ("suppressed K similar ...") when the window has passed. A client
  // retrying a bad token in a loop makes thousands of calls a second; at 10 lines a
  // second per event the audit trail stays under 50 lines a second, well inside
  // journald's default rate limit (10000 messages in 30 s, about 330 a second, for the
  // whole service), so it never makes journald drop the daemon's other lines.
  static constexpr int kLinesPerWindow = 10;
  static constexpr std::chrono::seconds kWindow{1};

  AuditLog();
  ~AuditLog();  // writes the summaries still due
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  void AuthFailure(const AuditPeer& peer, metrics::RpcMethod method, metrics::AuthFailure reason);
  // A Transcode stream the session manager refused: RESOURCE_EXHAUSTED (the session cap)
  // and UNAVAILABLE (draining) are audited; a bad spec is the client's error, not an event.
  void SessionRefused(const AuditPeer& peer, const Caller& caller, const Status& refusal);
  // `owner`: the session's owner (Caller::owner), none when there is no such session.
  void Cancel(const AuditPeer& peer, const Caller& caller, const std::string& session_id,
              const std::optional<std::string>& owner, const Status& outcome);
  void SessionStarted(const AuditPeer& peer, const Caller& caller, const Session& session);

 private:
  // Whether a line of `event` may be written now; writes the summary of its lines
  // suppressed in a window that has passed first.
  bool Admit(Event event);
  // "suppressed K similar ... lines", unless `suppressed` is 0.
  static void WriteSummary(Event event, uint64_t suppressed);
  // Writes the summaries due, and returns when the next one is due (none: none waits).
  std::optional<LogRateLimiter::Clock::time_point> WriteDueSummariesLocked(LogRateLimiter::Clock::time_point now);
  void SummaryLoop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::array<LogRateLimiter, kEventCount> limits_;
  bool stopping_ = false;
  std::thread summaries_;  // writes a summary when its window passes, with no later line to carry it
};

// `value` as an audit field's value: as it is when it is plain printable ASCII without
// spaces, quotes, backslashes or '=', else in double quotes with \" \\ and \xNN escapes, so
// that a client's text (a label, a certificate subject) cannot forge a line or a field.
std::string AuditValue(const std::string& value);

}  // namespace conveyor

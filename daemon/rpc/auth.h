// Bearer-token authentication of conveyor.v1.Transcoder calls (server.auth_token_file):
// the token file's parser, the constant-time check of a call's "authorization" metadata,
// and the caller identity that owns sessions.
#pragma once

#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "daemon_metrics.h"
#include "status.h"

namespace conveyor {

// Who made a call. With auth off every caller is an anonymous admin.
struct Caller {
  std::string owner;  // a short hash of the token ("" with auth off); never the token
  bool admin = true;
};

class Authenticator {
 public:
  struct Token {
    std::string secret;
    bool admin = false;
    bool operator==(const Token& o) const { return secret == o.secret && admin == o.admin; }
  };

  Authenticator() = default;  // auth off: every call is let in
  explicit Authenticator(std::vector<Token> tokens) : tokens_(std::move(tokens)), enabled_(true) {}

  // Reads "TOKEN" or "TOKEN admin" per line; blank lines and lines starting with # are
  // skipped. Errors name the option (server.auth_token_file) and the line.
  static StatusOr<Authenticator> LoadFile(const std::string& path);

  bool enabled() const { return enabled_; }
  // The same tokens with the same roles, in the same order: a reload that reads this
  // changes nothing.
  bool operator==(const Authenticator& o) const { return enabled_ == o.enabled_ && tokens_ == o.tokens_; }

  // UNAUTHENTICATED unless the call carries "authorization: Bearer <a known token>";
  // then `failure`, when given, says why (conveyor_auth_failures_total's reason).
  StatusOr<Caller> Check(const grpc::ServerContextBase& context, metrics::AuthFailure* failure = nullptr) const;

  // Equal strings, in a time that depends on the lengths only.
  static bool ConstantTimeEquals(const std::string& a, const std::string& b);

  // "tok-" and 16 hex digits of a 64-bit FNV-1a hash: tells owners apart without
  // keeping the token with the session. (Not a secret: it only needs to be distinct.)
  static std::string Identity(const std::string& secret);

 private:
  std::vector<Token> tokens_;
  bool enabled_ = false;
};

// The caller may see and cancel a session owned by `owner`.
inline bool MaySee(const Caller& caller, const std::string& owner) { return caller.admin || caller.owner == owner; }

}  // namespace conveyor

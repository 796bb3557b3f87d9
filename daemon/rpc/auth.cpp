// Bearer-token authentication; see auth.h.
#include "auth.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace conveyor {

StatusOr<Authenticator> Authenticator::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("server.auth_token_file: cannot read " + path);
  std::vector<Token> tokens;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream words(line);
    std::string secret, role, extra;
    if (!(words >> secret) || secret[0] == '#') continue;
    words >> role >> extra;
    if ((!role.empty() && role != "admin") || !extra.empty()) {
      return InvalidArgument("server.auth_token_file: " + path + ":" + std::to_string(n) +
                             ": expected TOKEN or TOKEN admin");
    }
    tokens.push_back({secret, role == "admin"});
  }
  if (tokens.empty()) return InvalidArgument("server.auth_token_file: " + path + " holds no token");
  return Authenticator(std::move(tokens));
}

StatusOr<Caller> Authenticator::Check(const grpc::ServerContextBase& context, metrics::AuthFailure* failure) const {
  if (!enabled_) return Caller{};
  auto refuse = [failure](metrics::AuthFailure why, const char* message) {
    if (failure != nullptr) *failure = why;
    return Unauthenticated(message);
  };
  const auto& md = context.client_metadata();
  auto it = md.find("authorization");
  static const std::string kBearer = "Bearer ";
  if (it == md.end()) return refuse(metrics::AuthFailure::kMissing, "authorization: a bearer token is required");
  const std::string value(it->second.data(), it->second.size());
  if (value.compare(0, kBearer.size(), kBearer) != 0) {
    return refuse(metrics::AuthFailure::kMalformed, "authorization: expected 'Bearer TOKEN'");
  }
  const std::string presented = value.substr(kBearer.size());
  // Every token is compared in full, whatever matched: the time taken does not tell
  // which token or how much of one matched.
  const Token* match = nullptr;
  for (const Token& t : tokens_) {
    if (ConstantTimeEquals(t.secret, presented) && match == nullptr) match = &t;
  }
  if (match == nullptr) return refuse(metrics::AuthFailure::kUnknownToken, "authorization: unknown token");
  return Caller{Identity(match->secret), match->admin};
}

bool Authenticator::ConstantTimeEquals(const std::string& a, const std::string& b) {
  const size_t n = a.size() > b.size() ? a.size() : b.size();
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

std::string Authenticator::Identity(const std::string& secret) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : secret) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[24];
  std::snprintf(buf, sizeof(buf), "tok-%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace conveyor

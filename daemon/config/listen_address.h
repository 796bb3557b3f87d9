// Where conveyord listens and where conveyorctl connects: a unix socket or a TCP
// host:port, parsed from the one text syntax that --listen, --target and the config
// file share, plus conveyord's default socket path (conveyorctl's own default, which
// prefers the system daemon's socket, is in daemon/ctl/default_target.h).
#pragma once

#include <string>

#include "status.h"

namespace conveyor::config {

struct ListenAddress {
  enum class Kind { kUnix, kTcp };

  Kind kind = Kind::kUnix;
  std::string path;  // kUnix: absolute, lexically normalised
  std::string host;  // kTcp: a name or an IP literal, IPv6 without brackets
  int port = 0;      // kTcp: 0..65535; 0 lets the server pick a free port

  // What gRPC takes, as a server address or a channel target: "unix:/abs/path",
  // "host:port" or "[v6]:port".
  std::string GrpcTarget() const;
  // The canonical text form; ParseListenAddress(ToString()) gives this address back.
  // The same text as GrpcTarget() today; this one is for logs and the config file.
  std::string ToString() const;
  // True when only this machine can reach the address: a unix socket, or TCP on
  // localhost, 127.0.0.0/8 or ::1. Non-loopback TCP needs TLS (server.tls_*) or allow_insecure_tcp.
  bool IsLoopback() const;

  bool operator==(const ListenAddress& o) const {
    return kind == o.kind && path == o.path && host == o.host && port == o.port;
  }
  bool operator!=(const ListenAddress& o) const { return !(*this == o); }
};

// Accepts "unix:PATH" (also "unix:///abs/path"; a relative PATH is made absolute against
// the working directory), a bare absolute path "/run/x.sock", "HOST:PORT",
// "[IPv6]:PORT" and "localhost:PORT". Errors are INVALID_ARGUMENT naming the text.
StatusOr<ListenAddress> ParseListenAddress(const std::string& text);

// The longest unix socket path the kernel takes (sizeof(sockaddr_un::sun_path) - 1).
constexpr size_t kMaxUnixPathBytes = 107;

// The socket conveyord listens on when not told (and conveyorctl's fallback when the
// system daemon's socket is not there for it): /run/conveyor/conveyord.sock when /run/conveyor exists and we may write to it (the
// systemd unit's RuntimeDirectory), else $XDG_RUNTIME_DIR/conveyor/conveyord.sock when
// XDG_RUNTIME_DIR is set, else /tmp/conveyor-<uid>/conveyord.sock.
std::string DefaultSocketPath();
// The same choice with the system directory given, so tests need not touch /run.
std::string DefaultSocketPathIn(const std::string& system_dir);
ListenAddress DefaultListenAddress();

// For the server, before it binds a unix socket: creates the socket's directory when
// missing (mode 0700 for the per-user fallbacks) and refuses a directory that is
// group- or world-writable and not ours. Removes a stale socket file that nothing
// listens on; FAILED_PRECONDITION when something does. A no-op for TCP.
Status PrepareUnixSocket(const ListenAddress& address);

}  // namespace conveyor::config

// Listen address parsing and the default socket path shared by conveyord and conveyorctl.
#include "listen_address.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "unique_fd.h"

namespace conveyor::config {
namespace {

constexpr char kSocketName[] = "conveyord.sock";

Status Bad(const std::string& text, const std::string& why) {
  return InvalidArgument("bad listen address '" + text + "': " + why);
}

bool IsDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

StatusOr<int> ParsePort(const std::string& text, const std::string& port) {
  if (!IsDigits(port)) return Bad(text, "port '" + port + "' is not a number 0..65535");
  if (port.size() > 5 || std::stoi(port) > 65535) {
    return Bad(text, "port " + port + " is out of range 0..65535");
  }
  return std::stoi(port);
}

bool IsHostNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

bool IsIpv6Char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
         c == '.';
}

StatusOr<ListenAddress> ParseUnix(const std::string& text, std::string path) {
  // gRPC's own spelling of an absolute path is unix:///abs; accept it as well.
  if (path.rfind("//", 0) == 0) path = path.substr(2);
  if (path.empty()) return Bad(text, "empty socket path");
  if (path.find('\0') != std::string::npos) return Bad(text, "NUL in socket path");
  std::filesystem::path p(path);
  if (p.is_relative()) {
    std::error_code ec;
    const std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (ec) return Bad(text, "cannot make the path absolute: " + ec.message());
    p = cwd / p;
  }
  p = p.lexically_normal();
  ListenAddress a;
  a.kind = ListenAddress::Kind::kUnix;
  a.path = p.string();
  if (a.path.size() > 1 && a.path.back() == '/') return Bad(text, "socket path names a directory");
  if (a.path.size() > kMaxUnixPathBytes) {
    return Bad(text, "socket path is " + std::to_string(a.path.size()) + " bytes, more than the " +
                         std::to_string(kMaxUnixPathBytes) + " a unix socket allows");
  }
  return a;
}

}  // namespace

std::string ListenAddress::GrpcTarget() const {
  if (kind == Kind::kUnix) return "unix:" + path;
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

std::string ListenAddress::ToString() const { return GrpcTarget(); }

bool ListenAddress::IsLoopback() const {
  if (kind == Kind::kUnix) return true;
  if (host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1") return true;
  // 127.0.0.0/8, also as an IPv4-mapped IPv6 address.
  for (const char* prefix : {"127.", "::ffff:127."}) {
    const std::string pre(prefix);
    if (host.rfind(pre, 0) == 0) {
      const std::string rest = host.substr(pre.size());
      bool dotted = !rest.empty();
      for (char c : rest) dotted = dotted && ((c >= '0' && c <= '9') || c == '.');
      if (dotted) return true;
    }
  }
  return false;
}

StatusOr<ListenAddress> ParseListenAddress(const std::string& text) {
  if (text.empty()) return InvalidArgument("empty listen address");
  if (text.rfind("unix:", 0) == 0) return ParseUnix(text, text.substr(5));
  if (text[0] == '/') return ParseUnix(text, text);

  ListenAddress a;
  a.kind = ListenAddress::Kind::kTcp;
  std::string port;
  if (text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos) return Bad(text, "missing ']' after the IPv6 address");
    a.host = text.substr(1, close - 1);
    if (a.host.empty()) return Bad(text, "empty IPv6 address");
    for (char c : a.host) {
      if (!IsIpv6Char(c)) return Bad(text, "'" + a.host + "' is not an IPv6 address");
    }
    if (a.host.find(':') == std::string::npos) {
      return Bad(text, "'" + a.host + "' is not an IPv6 address");
    }
    if (close + 1 >= text.size() || text[close + 1] != ':') {
      return Bad(text, "expected ':PORT' after ']'");
    }
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      return Bad(text, "expected unix:PATH, HOST:PORT or [IPv6]:PORT");
    }
    a.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) {
      return Bad(text, "an IPv6 address needs brackets, as in [::1]:PORT");
    }
    if (a.host.empty()) return Bad(text, "missing host (0.0.0.0 or [::] for every interface)");
    for (char c : a.host) {
      if (!IsHostNameChar(c)) return Bad(text, "'" + a.host + "' is not a host name or address");
    }
  }
  ASSIGN_OR_RETURN(a.port, ParsePort(text, port));
  return a;
}

std::string DefaultSocketPathIn(const std::string& system_dir) {
  struct stat st;
  if (stat(system_dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
      access(system_dir.c_str(), W_OK | X_OK) == 0) {
    return system_dir + "/" + kSocketName;
  }
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && xdg[0] != '\0') {
    std::string dir(xdg);
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir + "/conveyor/" + kSocketName;
  }
  return "/tmp/conveyor-" + std::to_string(getuid()) + "/" + kSocketName;
}

std::string DefaultSocketPath() { return DefaultSocketPathIn("/run/conveyor"); }

ListenAddress DefaultListenAddress() {
  ListenAddress a;
  a.kind = ListenAddress::Kind::kUnix;
  a.path = DefaultSocketPath();
  return a;
}

Status PrepareUnixSocket(const ListenAddress& address) {
  if (address.kind != ListenAddress::Kind::kUnix) return OkStatus();
  const std::string dir = std::filesystem::path(address.path).parent_path().string();
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return FailedPrecondition("socket directory " + dir + ": " + std::strerror(errno));
    }
    // Only the last level is created: the per-user fallbacks sit in directories that
    // exist ($XDG_RUNTIME_DIR, /tmp), and a deeper missing path is more likely a typo.
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return FailedPrecondition("cannot create socket directory " + dir + ": " +
                                std::strerror(errno));
    }
    if (stat(dir.c_str(), &st) != 0) {
      return FailedPrecondition("socket directory " + dir + ": " + std::strerror(errno));
    }
  }
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(dir + " is not a directory");
  // Someone who may replace the socket could intercept every client: the directory
  // must be ours (or root's) and not writable by others unless it is sticky (/tmp).
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return FailedPrecondition("socket directory " + dir + " belongs to uid " +
                              std::to_string(st.st_uid) + ", not to us (uid " +
                              std::to_string(geteuid()) + ") or root");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
    return FailedPrecondition("socket directory " + dir +
                              " is writable by group or others and not sticky");
  }

  if (lstat(address.path.c_str(), &st) != 0) {
    if (errno == ENOENT) return OkStatus();
    return FailedPrecondition(address.path + ": " + std::strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return FailedPrecondition(address.path + " exists and is not a socket");
  }
  const UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Internal(std::string("socket(AF_UNIX): ") + std::strerror(errno));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, address.path.c_str(), address.path.size() + 1);
  const int rc = connect(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  const int err = errno;
  if (rc == 0) {
    return FailedPrecondition("another process is listening on " + address.path);
  }
  if (err != ECONNREFUSED && err != ENOENT) {
    return FailedPrecondition("cannot tell whether " + address.path +
                              " is in use: " + std::strerror(err));
  }
  if (unlink(address.path.c_str()) != 0 && errno != ENOENT) {
    return FailedPrecondition("cannot remove stale socket " + address.path + ": " +
                              std::strerror(errno));
  }
  return OkStatus();
}

}  // namespace conveyor::config

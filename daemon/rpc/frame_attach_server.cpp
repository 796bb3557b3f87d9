// The shared-memory attach socket (see frame_attach_server.h).
#include "frame_attach_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <spdlog/spdlog.h>

#include "listen_address.h"

namespace conveyor {
namespace {

constexpr size_t kKeyBytes = 32;
constexpr int kMaxFds = 4;  // more are closed unread; one is used


// `fd` >= 0 goes with the line as SCM_RIGHTS.
void Reply(int connection, const std::string& line, int fd = -1) {
  std::string text = line + "\n";
  iovec io{text.data(), text.size()};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  (void)sendmsg(connection, &msg, MSG_NOSIGNAL);
}

}  // namespace

std::string FrameAttachSocketPath(const std::string& grpc_socket) {
  const std::string suffix = ".sock";
  if (grpc_socket.size() > suffix.size() &&
      grpc_socket.compare(grpc_socket.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return grpc_socket.substr(0, grpc_socket.size() - suffix.size()) + ".frames.sock";
  }
  return grpc_socket + ".frames";
}

StatusOr<std::unique_ptr<FrameAttachServer>> FrameAttachServer::Start(const std::string& path,
                                                                      SessionManager* manager) {
  sockaddr_un sa{};
  if (path.size() + 1 > sizeof(sa.sun_path)) return InvalidArgument("attach socket path too long: " + path);
  config::ListenAddress address;
  address.kind = config::ListenAddress::Kind::kUnix;
  address.path = path;
  RETURN_IF_ERROR(config::PrepareUnixSocket(address));
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Internal(std::string("socket(AF_UNIX): ") + std::strerror(errno));
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd.get(), 16) != 0) {
    return Unavailable("attach socket " + path + ": " + std::strerror(errno));
  }
  UniqueFd stop(eventfd(0, EFD_CLOEXEC));
  if (!stop.valid()) {
    const Status s = Internal(std::string("eventfd: ") + std::strerror(errno));
    unlink(path.c_str());
    return s;
  }
  std::unique_ptr<FrameAttachServer> server(new FrameAttachServer(path, manager, std::move(fd), std::move(stop)));
  server->thread_ = std::thread([s = server.get()] { s->Loop(); });
  return server;
}

FrameAttachServer::FrameAttachServer(std::string path, SessionManager* manager, UniqueFd listen_fd, UniqueFd stop_fd)
    : path_(std::move(path)), manager_(manager), listen_fd_(std::move(listen_fd)), stop_fd_(std::move(stop_fd)) {}

FrameAttachServer::~FrameAttachServer() {
  const uint64_t one = 1;
  (void)write(stop_fd_.get(), &one, sizeof(one));
  if (thread_.joinable()) thread_.join();
  unlink(path_.c_str());
}

void FrameAttachServer::Loop() {
  for (;;) {
    pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("attach socket {}: poll: {}; shared-memory input stops", path_, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    const UniqueFd connection(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!connection.valid()) continue;  // the client gave up, or out of descriptors for now
    Serve(connection.get());
  }
}

void FrameAttachServer::Serve(int connection) {
  // A client that connects and sends nothing holds the socket for this long at most.
  timeval timeout{};
  timeout.tv_sec = static_cast<time_t>(kConnectionTimeoutS);
  setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(connection, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  std::string key;
  std::vector<UniqueFd> received;  // all closed on return; the session maps the first
  while (key.size() < kKeyBytes) {
    char buffer[kKeyBytes];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)];
    iovec io{buffer, kKeyBytes - key.size()};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(connection, &msg, MSG_CMSG_CLOEXEC);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        received.emplace_back(fd);
      }
    }
    if (n <= 0) {
      Reply(connection, "ERROR expected a 32-byte attach key");
      return;
    }
    key.append(buffer, static_cast<size_t>(n));
  }
  StatusOr<UniqueFd> output = manager_->AttachSharedMemory(key, received.empty() ? -1 : received.front().get());
  if (!output.ok()) {
    spdlog::info("attach socket: refused: {}", output.status().ToString());
    Reply(connection, "ERROR " + output.status().message());
    return;
  }
  Reply(connection, "OK", output->get());
}

}  // namespace conveyor

// The shared-memory attach socket (see frame_attach_server.h): an accept thread, and a
// thread per connection under a cap, each bounded by a deadline from its accept.
#include "frame_attach_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include <spdlog/spdlog.h>

#include "listen_address.h"
#include "scoped_umask.h"

namespace conveyor {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kKeyBytes = 32;
constexpr int kMaxFds = 4;  // more are closed unread; one is used
// Refusals and accept failures are logged at most this often, so that a client that
// keeps connecting cannot flood the log.
constexpr auto kLogEvery = std::chrono::seconds(10);
// How long the accept thread rests when accept() fails for want of descriptors or
// memory: the queued connection keeps the socket readable, so it would spin otherwise.
constexpr int kAcceptRetryMs = 100;

enum class Wait { kReady, kDeadline, kError };

// poll() for `events` until `deadline`. EINTR waits again.
Wait WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Wait::kDeadline;
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (r > 0) return Wait::kReady;  // including POLLHUP and POLLERR: the read or write says which
    if (r < 0 && errno != EINTR) return Wait::kError;
  }
}

// Sends `line` with `fd` >= 0 as SCM_RIGHTS. The first try never waits, so an answer goes
// out even when the attach itself ran past the deadline; a full socket buffer is waited
// on until `deadline`.
void Reply(int connection, const std::string& line, int fd, Clock::time_point deadline) {
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
  for (;;) {
    if (sendmsg(connection, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) >= 0) return;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return;
    if (WaitFor(connection, POLLOUT, deadline) != Wait::kReady) return;
  }
}

// Takes ownership of every descriptor that came as SCM_RIGHTS with `msg`.
void TakeDescriptors(msghdr& msg, std::vector<UniqueFd>& received) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      received.emplace_back(fd);
    }
  }
}

// True at most once per kLogEvery, counted from `last`.
bool LogDue(Clock::time_point& last) {
  const Clock::time_point now = Clock::now();
  if (last != Clock::time_point{} && now - last < kLogEvery) return false;
  last = now;
  return true;
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
  // Non-blocking, so that the accept loop takes every queued connection and then waits.
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return Internal(std::string("socket(AF_UNIX): ") + std::strerror(errno));
  sa.sun_family = AF_UNIX;
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  {
    const ScopedUmask socket_mode(kOwnerAndGroupSocketMask);  // bound 0660: owner and group
    if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
      return Unavailable("attach socket " + path + ": " + std::strerror(errno));
    }
  }
  if (listen(fd.get(), kListenBacklog) != 0) return Unavailable("attach socket " + path + ": " + std::strerror(errno));
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
  // Wakes Loop(), which polls stop_fd_ beside the listening socket. Adding 1 to a fresh
  // eventfd's counter cannot fail; eventfd_write() does not ask for its result to be used,
  // as write() does under _FORTIFY_SOURCE (where a (void) cast does not silence GCC).
  (void)eventfd_write(stop_fd_.get(), 1);
  if (thread_.joinable()) thread_.join();  // no connection is admitted after this
  std::vector<std::thread> done;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Each connection in open_ is still open (see Connection); shutting it down ends its
    // wait for the client at once.
    for (auto& [id, connection] : open_) (void)shutdown(connection.fd.get(), SHUT_RDWR);
    finished_cv_.wait(lock, [this] { return open_.empty(); });
    done.swap(finished_);
  }
  for (std::thread& t : done) t.join();
  unlink(path_.c_str());
}

void FrameAttachServer::Loop() {
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kConnectionTimeoutS));
  Clock::time_point last_accept_failure_log;
  for (;;) {
    pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("attach socket {}: poll: {}; shared-memory input stops", path_, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & POLLIN) == 0) continue;
    bool out_of_resources = false;
    for (;;) {  // every connection queued, so that a burst is admitted at once
      UniqueFd connection(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (connection.valid()) {
        Admit(std::move(connection), Clock::now() + timeout);
        continue;
      }
      if (errno == EINTR || errno == ECONNABORTED) continue;  // ECONNABORTED: the client gave up
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        out_of_resources = true;
        if (LogDue(last_accept_failure_log)) {
          spdlog::warn("attach socket {}: accept: {}; retrying every {} ms", path_, std::strerror(errno),
                       kAcceptRetryMs);
        }
      }
      break;
    }
    if (out_of_resources) {
      pollfd stop{stop_fd_.get(), POLLIN, 0};
      if (poll(&stop, 1, kAcceptRetryMs) > 0) return;
    }
  }
}

void FrameAttachServer::Admit(UniqueFd connection, Clock::time_point deadline) {
  std::vector<std::thread> done;
  std::string refusal;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(finished_);
    if (open_.size() >= kMaxUnfinishedAttaches) {
      refusal = "too many attaches in progress (" + std::to_string(kMaxUnfinishedAttaches) + ")";
    } else {
      const uint64_t id = next_id_++;
      Connection& c = open_[id];
      c.fd = std::move(connection);
      try {
        // Finish() takes mu_, so the thread cannot end before its entry is complete.
        c.thread = std::thread([this, id, fd = c.fd.get(), deadline] {
          Serve(fd, deadline);
          Finish(id);
        });
      } catch (const std::system_error& e) {
        connection = std::move(c.fd);
        open_.erase(id);
        refusal = std::string("no thread to serve the attach: ") + e.what();
      }
    }
  }
  for (std::thread& t : done) t.join();
  if (connection.valid()) Refuse(std::move(connection), refusal);
}

void FrameAttachServer::Refuse(UniqueFd connection, const std::string& why) {
  Reply(connection.get(), "ERROR " + why + "; try again", -1, Clock::now());  // never waits
  ++refused_;
  if (LogDue(last_refusal_log_)) {
    spdlog::warn("attach socket {}: closed a new connection: {} ({} refused so far)", path_, why, refused_);
  }
}

void FrameAttachServer::Finish(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = open_.find(id);
  finished_.push_back(std::move(it->second.thread));
  open_.erase(it);  // closes the connection
  finished_cv_.notify_all();
}

void FrameAttachServer::Serve(int connection, Clock::time_point deadline) {
  std::string key;
  std::vector<UniqueFd> received;  // all closed on return; the session maps the first
  while (key.size() < kKeyBytes) {
    // Over the whole key, not each read: a client that trickles bytes is cut off too.
    const Wait w = WaitFor(connection, POLLIN, deadline);
    if (w != Wait::kReady) {
      if (w == Wait::kDeadline) {
        spdlog::debug("attach socket: no whole key {} s after the connect", kConnectionTimeoutS);
      }
      Reply(connection, "ERROR expected a 32-byte attach key", -1, deadline);
      return;
    }
    char buffer[kKeyBytes];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    iovec io{buffer, kKeyBytes - key.size()};
    msghdr msg{};
    msg.msg_iov = &io;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = recvmsg(connection, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    // A failed recvmsg() does not write msg_controllen back: there is nothing to take.
    if (n >= 0) TakeDescriptors(msg, received);
    if (n <= 0) {
      Reply(connection, "ERROR expected a 32-byte attach key", -1, deadline);
      return;
    }
    key.append(buffer, static_cast<size_t>(n));
  }
  StatusOr<UniqueFd> output = manager_->AttachSharedMemory(key, received.empty() ? -1 : received.front().get());
  if (!output.ok()) {
    spdlog::info("attach socket: refused: {}", output.status().ToString());
    Reply(connection, "ERROR " + output.status().message(), -1, deadline);
    return;
  }
  Reply(connection, "OK", output->get(), deadline);
}

}  // namespace conveyor

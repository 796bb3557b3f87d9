// Connection threads, request and response deadlines for httplib (see bounded_http_server.h).
#include "bounded_http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "unique_fd.h"

namespace conveyor::metrics {
namespace {

using Clock = std::chrono::steady_clock;

// Set on the accept thread while it hands httplib's task for a connection past the cap
// back to the server, which then closes that socket at once. httplib's task queue sees
// only an opaque task, not the socket, so this is how "refuse" reaches the server.
thread_local bool t_refusing = false;

// One thread per connection, so that a connection waiting on its client never delays
// another, and no more than `max` of them; past it, a connection is refused on the
// accept thread itself, without starting a thread.
class ConnectionThreads final : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(size_t max) : max_(max) {}
  ~ConnectionThreads() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::vector<std::thread> done;
    std::unique_lock<std::mutex> lock(mu_);
    TakeFinished(done);
    bool started = false;
    if (running_ < max_) {
      const uint64_t id = next_id_++;
      std::thread& slot = threads_[id];  // the thread's own entry, made before it runs
      try {
        slot = std::thread([this, id, fn] { Run(id, fn); });
        ++running_;
        started = true;
      } catch (const std::system_error&) {
        // No thread to be had (a process limit): refused like a connection past the cap.
        threads_.erase(id);
      }
    }
    lock.unlock();
    for (std::thread& t : done) t.join();
    if (!started) {
      t_refusing = true;
      fn();
      t_refusing = false;
    }
  }

  // Waits for every connection to end (the server has shut their sockets down).
  void shutdown() override {
    std::vector<std::thread> done;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ended_.wait(lock, [this] { return running_ == 0; });
      TakeFinished(done);
    }
    for (std::thread& t : done) t.join();
  }

 private:
  void Run(uint64_t id, const std::function<void()>& fn) {
    fn();
    std::lock_guard<std::mutex> lock(mu_);
    --running_;
    finished_.push_back(id);
    ended_.notify_all();
  }

  // Threads that have run their task and only have to be joined.
  void TakeFinished(std::vector<std::thread>& out) {
    for (uint64_t id : finished_) {
      auto it = threads_.find(id);
      out.push_back(std::move(it->second));
      threads_.erase(it);
    }
    finished_.clear();
  }

  const size_t max_;
  std::mutex mu_;
  std::condition_variable ended_;
  size_t running_ = 0;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::thread> threads_;
  std::vector<uint64_t> finished_;
};

enum class Wait { kReady, kDeadline, kError };

// poll() for `events` until `deadline`. EINTR and early wake-ups wait again.
Wait WaitFor(int sock, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return Wait::kDeadline;
    pollfd p{sock, events, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 60000)));
    if (r > 0) return Wait::kReady;  // including POLLHUP/POLLERR: recv or send says which
    if (r < 0 && errno != EINTR) return Wait::kError;
  }
}

void SocketAddress(int sock, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  auto* sa = reinterpret_cast<sockaddr*>(&a);
  if ((peer ? getpeername(sock, sa, &len) : getsockname(sock, sa, &len)) != 0) return;
  std::array<char, INET6_ADDRSTRLEN> text{};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, text.data(), text.size());
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, text.data(), text.size());
    port = ntohs(v6->sin6_port);
  }
  ip = text.data();
}

// The connection as httplib reads and writes it, with deadlines over whole requests and
// responses rather than over each recv(). One per connection, so that bytes of a next
// request read along with this one stay buffered for it.
class DeadlineStream final : public httplib::Stream {
 public:
  enum class Expired { kNone, kRequest, kResponse };

  explicit DeadlineStream(int sock) : sock_(sock) {}

  // A new request may come: its bytes are due by `request_deadline`; its response gets
  // `response_budget` from its first byte.
  void BeginRequest(Clock::time_point request_deadline, Clock::duration response_budget) {
    read_deadline_ = request_deadline;
    response_budget_ = response_budget;
    writing_ = false;
  }
  // Whether a request has begun to arrive by `by`; false on idle, a close or an error.
  bool AwaitRequest(Clock::time_point by) {
    return off_ < len_ || WaitFor(sock_, POLLIN, by) == Wait::kReady;
  }
  Expired expired() const { return expired_; }

  bool is_readable() const override {
    return expired_ == Expired::kNone && (off_ < len_ || WaitFor(sock_, POLLIN, read_deadline_) == Wait::kReady);
  }
  bool is_writable() const override {
    return expired_ == Expired::kNone &&
           WaitFor(sock_, POLLOUT, writing_ ? write_deadline_ : Clock::now() + response_budget_) == Wait::kReady;
  }

  ssize_t read(char* ptr, size_t size) override {
    if (expired_ != Expired::kNone) return -1;
    while (off_ == len_) {
      const Wait w = WaitFor(sock_, POLLIN, read_deadline_);
      if (w == Wait::kDeadline) expired_ = Expired::kRequest;
      if (w != Wait::kReady) return -1;
      const ssize_t n = recv(sock_, buf_.data(), buf_.size(), MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      if (n <= 0) return n;
      off_ = 0;
      len_ = static_cast<size_t>(n);
    }
    const size_t n = std::min(size, len_ - off_);
    std::memcpy(ptr, buf_.data() + off_, n);
    off_ += n;
    return static_cast<ssize_t>(n);
  }

  // All of it or -1: httplib writes status lines with one call and does not retry.
  ssize_t write(const char* ptr, size_t size) override {
    if (expired_ != Expired::kNone) return -1;
    if (!writing_) {
      writing_ = true;
      write_deadline_ = Clock::now() + response_budget_;
    }
    size_t sent = 0;
    while (sent < size) {
      const ssize_t n = send(sock_, ptr + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
      const Wait w = WaitFor(sock_, POLLOUT, write_deadline_);
      if (w == Wait::kDeadline) expired_ = Expired::kResponse;
      if (w != Wait::kReady) return -1;
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { SocketAddress(sock_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { SocketAddress(sock_, false, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  const int sock_;
  std::array<char, 4096> buf_{};
  size_t off_ = 0;
  size_t len_ = 0;
  Clock::time_point read_deadline_;
  Clock::duration response_budget_{};
  bool writing_ = false;
  Clock::time_point write_deadline_;
  Expired expired_ = Expired::kNone;
};

}  // namespace

BoundedHttpServer::BoundedHttpServer(ConnectionLimits limits, ConnectionCounters counters)
    : limits_(limits), counters_(counters) {
  // What the Keep-Alive header announces; Serve() enforces the same limits.
  set_keep_alive_timeout(static_cast<time_t>(limits_.idle_timeout.count()));
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  const size_t max = limits_.max_connections;
  new_task_queue = [max] { return new ConnectionThreads(max); };  // httplib takes ownership
}

void BoundedHttpServer::WidenBacklog() {
  // listen() again on a listening socket only changes its backlog.
  const socket_t sock = svr_sock_;
  if (sock != INVALID_SOCKET) (void)::listen(sock, limits_.listen_backlog);
}

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  UniqueFd fd(sock);  // closed on every path, after it has left open_
  if (t_refusing) {
    if (counters_.refused != nullptr) counters_.refused->Inc();
    return false;
  }
  if (!Register(sock)) return false;
  struct Registered {
    BoundedHttpServer* server;
    socket_t sock;
    ~Registered() { server->Unregister(sock); }
  } registered{this, sock};
  Serve(sock);
  return true;
}

void BoundedHttpServer::Serve(socket_t sock) {
  DeadlineStream stream(sock);
  for (size_t served = 0; served < limits_.max_requests_per_connection; ++served) {
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + limits_.request_deadline;
    stream.BeginRequest(deadline, limits_.response_deadline);
    if (!stream.AwaitRequest(std::min(deadline, start + limits_.idle_timeout))) return;
    if (svr_sock_ == INVALID_SOCKET) return;  // stopping
    const bool last = served + 1 == limits_.max_requests_per_connection;
    bool connection_closed = false;
    const bool ok = process_request(stream, last, connection_closed, nullptr);
    if (stream.expired() == DeadlineStream::Expired::kRequest && counters_.request_timed_out != nullptr) {
      counters_.request_timed_out->Inc();
    }
    if (stream.expired() == DeadlineStream::Expired::kResponse && counters_.response_timed_out != nullptr) {
      counters_.response_timed_out->Inc();
    }
    if (!ok || connection_closed || stream.expired() != DeadlineStream::Expired::kNone) return;
  }
}

bool BoundedHttpServer::Register(socket_t sock) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closing_) return false;
  open_.insert(sock);
  return true;
}

void BoundedHttpServer::Unregister(socket_t sock) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(sock);
}

void BoundedHttpServer::CloseConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  closing_ = true;
  // A socket in open_ is still owned by its thread (it leaves the set before it is
  // closed), so the descriptor cannot have been reused for something else.
  for (socket_t sock : open_) (void)::shutdown(sock, SHUT_RDWR);
}

size_t BoundedHttpServer::open_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_.size();
}

}  // namespace conveyor::metrics

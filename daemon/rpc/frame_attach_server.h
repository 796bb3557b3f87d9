// The socket where a client and its session swap shared memory: the client's frame
// slots in (RawInput.shared_memory_slots; session/shared_frames.h) and the daemon's JPEG
// slots out (JpegFramesOutput.shared_memory_slots; session/shared_jpegs.h). A unix
// stream socket beside the gRPC one, mode 0660 like it. A client connects, sends its
// session's attach key (32 bytes) in one sendmsg(), with its memfd as SCM_RIGHTS when it
// sends frames that way, and reads one line back: "OK", carrying the JPEG slots' memfd
// as SCM_RIGHTS when the session writes JPEGs that way, or "ERROR <reason>". A file
// descriptor cannot travel over gRPC, hence this side door; the key, which only the
// session's own stream was told, decides which session it is.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "session_manager.h"
#include "status.h"
#include "unique_fd.h"

namespace conveyor {

class FrameAttachServer {
 public:
  // Listens on `path` (a stale socket there is replaced, as for the gRPC socket) and
  // accepts on a thread of its own. Each connection is served on a thread of its own, so
  // a client that stalls delays no one else, and must have sent its key and taken its
  // answer within kConnectionTimeoutS of its accept, however it paces its bytes.
  // `manager` must outlive the server.
  static StatusOr<std::unique_ptr<FrameAttachServer>> Start(const std::string& path, SessionManager* manager);
  // Shuts down the connections still open rather than waiting out their deadlines, joins
  // every thread, closes and removes the socket.
  ~FrameAttachServer();
  FrameAttachServer(const FrameAttachServer&) = delete;
  FrameAttachServer& operator=(const FrameAttachServer&) = delete;

  const std::string& path() const { return path_; }

  // An attach is one short message each way between processes of one host; 2 s leaves a
  // loaded host room and frees the slot of a client that never sends soon.
  static constexpr double kConnectionTimeoutS = 2;
  // Attaches in progress at once, each a thread (mostly waiting) and a descriptor. Sessions
  // that start together attach well under this; past it a new connection is answered
  // "ERROR too many attaches in progress" and closed at accept, without a thread, and the
  // deadline frees the slots that stuck clients hold.
  static constexpr size_t kMaxUnfinishedAttaches = 64;
  // Room for a burst of connects between two accepts: a client that finds the queue full
  // waits in connect(), or fails at once with a non-blocking socket.
  static constexpr int kListenBacklog = 128;

 private:
  using Clock = std::chrono::steady_clock;

  // A connection being served. The map entry owns the descriptor, so that it is closed
  // only when it leaves the map, under mu_: the destructor, which shuts down what is in
  // the map, never touches a descriptor number that was closed and reused.
  struct Connection {
    UniqueFd fd;
    std::thread thread;
  };

  FrameAttachServer(std::string path, SessionManager* manager, UniqueFd listen_fd, UniqueFd stop_fd);
  void Loop();
  // Serves `connection` on a thread of its own, or refuses it at the cap.
  void Admit(UniqueFd connection, Clock::time_point deadline);
  void Refuse(UniqueFd connection, const std::string& why);
  void Serve(int connection, Clock::time_point deadline);
  // On the connection's own thread once it is served: closes it and leaves the thread to
  // be joined.
  void Finish(uint64_t id);

  const std::string path_;
  SessionManager* const manager_;
  const UniqueFd listen_fd_;
  const UniqueFd stop_fd_;  // an eventfd: written once to stop Loop()
  std::thread thread_;      // Loop()

  std::mutex mu_;
  std::condition_variable finished_cv_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, Connection> open_;
  std::vector<std::thread> finished_;  // threads whose connection is closed, to be joined

  // The accept thread's alone.
  uint64_t refused_ = 0;
  Clock::time_point last_refusal_log_;
};

// The attach socket's path for a gRPC unix socket at `grpc_socket`: "X.frames.sock" for
// "X.sock", else the path with ".frames" appended.
std::string FrameAttachSocketPath(const std::string& grpc_socket);

}  // namespace conveyor

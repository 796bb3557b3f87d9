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

#include <memory>
#include <string>
#include <thread>

#include "session_manager.h"
#include "status.h"
#include "unique_fd.h"

namespace conveyor {

class FrameAttachServer {
 public:
  // Listens on `path` (a stale socket there is replaced, as for the gRPC socket) and
  // serves connections one at a time on a thread of its own, each for at most
  // kConnectionTimeoutS. `manager` must outlive the server.
  static StatusOr<std::unique_ptr<FrameAttachServer>> Start(const std::string& path, SessionManager* manager);
  ~FrameAttachServer();  // stops the thread, closes and removes the socket
  FrameAttachServer(const FrameAttachServer&) = delete;
  FrameAttachServer& operator=(const FrameAttachServer&) = delete;

  const std::string& path() const { return path_; }

  static constexpr double kConnectionTimeoutS = 2;

 private:
  FrameAttachServer(std::string path, SessionManager* manager, UniqueFd listen_fd, UniqueFd stop_fd);
  void Loop();
  void Serve(int connection);

  const std::string path_;
  SessionManager* const manager_;
  const UniqueFd listen_fd_;
  const UniqueFd stop_fd_;  // an eventfd: written once to stop Loop()
  std::thread thread_;
};

// The attach socket's path for a gRPC unix socket at `grpc_socket`: "X.frames.sock" for
// "X.sock", else the path with ".frames" appended.
std::string FrameAttachSocketPath(const std::string& grpc_socket);

}  // namespace conveyor

// The file of the addresses conveyord serves on (server.endpoints_file), with the ports
// that port 0 picked: scripts and tests start the daemon on port 0 and read the port
// here, rather than guess a free one that another process may take first.
#pragma once

#include <string>
#include <vector>

#include "status.h"

namespace conveyor {

// Owns the file: it exists from Write() until the owner is dropped.
class EndpointsFile {
 public:
  EndpointsFile() = default;  // no file
  // Writes a line "grpc ENDPOINT" for each of `grpc`, then "metrics ADDRESS" unless it is
  // empty, to PATH.tmp and renames that to `path`, so that a reader finds the whole file or
  // none. An empty `path` writes nothing. INVALID_ARGUMENT naming server.endpoints_file
  // when the file cannot be written.
  static StatusOr<EndpointsFile> Write(const std::string& path, const std::vector<std::string>& grpc,
                                       const std::string& metrics);
  ~EndpointsFile();  // removes the file
  EndpointsFile(EndpointsFile&& other) noexcept;
  EndpointsFile& operator=(EndpointsFile&& other) noexcept;
  EndpointsFile(const EndpointsFile&) = delete;
  EndpointsFile& operator=(const EndpointsFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  explicit EndpointsFile(std::string path) : path_(std::move(path)) {}
  void Remove();

  std::string path_;  // "" when there is no file to remove
};

}  // namespace conveyor

// The bound-addresses file (see endpoints_file.h).
#include "endpoints_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "unique_fd.h"

namespace conveyor {
namespace {

Status WriteError(const std::string& what, const std::string& path, int err) {
  return InvalidArgument("server.endpoints_file: " + what + " " + path + ": " + std::strerror(err));
}

}  // namespace

StatusOr<EndpointsFile> EndpointsFile::Write(const std::string& path, const std::vector<std::string>& grpc,
                                             const std::string& metrics) {
  if (path.empty()) return EndpointsFile();
  std::string text;
  for (const std::string& e : grpc) text += "grpc " + e + "\n";
  if (!metrics.empty()) text += "metrics " + metrics + "\n";
  const std::string tmp = path + ".tmp";
  {
    UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid()) return WriteError("cannot create", tmp, errno);
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        unlink(tmp.c_str());
        return WriteError("cannot write", tmp, err);
      }
      done += static_cast<size_t>(n);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return WriteError("cannot rename " + tmp + " to", path, err);
  }
  return EndpointsFile(path);
}

EndpointsFile::~EndpointsFile() { Remove(); }

EndpointsFile::EndpointsFile(EndpointsFile&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}

EndpointsFile& EndpointsFile::operator=(EndpointsFile&& other) noexcept {
  if (this != &other) {
    Remove();
    path_ = std::exchange(other.path_, std::string());
  }
  return *this;
}

void EndpointsFile::Remove() {
  if (!path_.empty()) unlink(path_.c_str());
  path_.clear();
}

}  // namespace conveyor

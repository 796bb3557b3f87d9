// InputSpool (see input_spool.h): pwrite at the end, pread anywhere before it.
#include "input_spool.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace conveyor::media {

StatusOr<std::unique_ptr<InputSpool>> InputSpool::Create(const std::string& directory, uint64_t limit_bytes) {
  UniqueFd fd(open(directory.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd.valid() && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // No O_TMPFILE here: a named file, unlinked before anything is written to it.
    std::string path = directory + "/conveyor-spool-XXXXXX";
    std::vector<char> name(path.begin(), path.end());
    name.push_back('\0');
    fd = UniqueFd(mkostemp(name.data(), O_CLOEXEC));
    if (fd.valid()) (void)unlink(name.data());
  }
  if (!fd.valid()) {
    return ResourceExhausted("input spool: cannot make a file in " + directory + ": " + std::strerror(errno));
  }
  return std::unique_ptr<InputSpool>(new InputSpool(std::move(fd), limit_bytes));
}

InputSpool::~InputSpool() { total_ -= bytes_; }

Status InputSpool::Append(const uint8_t* data, size_t size) {
  if (bytes_ + size > limit_) {
    return ResourceExhausted("the input needs spooling past limits.input_spool_bytes (" + std::to_string(limit_) +
                             "): send it with ContainerInput.seekable, or as an MP4 with the moov atom first");
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pwrite(fd_.get(), data + done, size - done, static_cast<off_t>(bytes_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ResourceExhausted(std::string("input spool: pwrite: ") + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  bytes_ += size;
  total_ += size;
  return OkStatus();
}

StatusOr<size_t> InputSpool::ReadAt(uint64_t offset, uint8_t* buf, size_t size) const {
  if (offset >= bytes_) return InvalidArgument("input spool: read at " + std::to_string(offset) + " past its end");
  const size_t want = static_cast<size_t>(std::min<uint64_t>(size, bytes_ - offset));
  for (;;) {
    const ssize_t n = pread(fd_.get(), buf, want, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Internal(std::string("input spool: pread: ") + std::strerror(errno));
    return static_cast<size_t>(n);
  }
}

}  // namespace conveyor::media

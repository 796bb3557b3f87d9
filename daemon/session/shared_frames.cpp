// Shared-memory raw input (see shared_frames.h).
#include "shared_frames.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace conveyor {

StatusOr<std::shared_ptr<SharedFrameMemory>> SharedFrameMemory::Map(int fd, int slots, size_t slot_bytes) {
  if (slots <= 0 || slot_bytes == 0) return FailedPrecondition("this session takes no shared memory");
  struct stat st {};
  if (fstat(fd, &st) != 0) return FailedPrecondition(std::string("fstat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return FailedPrecondition("the descriptor is not a memfd (not a regular file)");
  // Without the shrink seal the client could truncate the file under a read, and the
  // daemon would die of SIGBUS.
  const int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
    return FailedPrecondition("the memfd is not sealed against shrinking (memfd_create with MFD_ALLOW_SEALING, "
                              "then fcntl F_ADD_SEALS F_SEAL_SHRINK)");
  }
  const size_t length = static_cast<size_t>(slots) * slot_bytes;
  if (static_cast<uint64_t>(st.st_size) < length) {
    return FailedPrecondition("the memfd holds " + std::to_string(st.st_size) + " bytes; " +
                              std::to_string(slots) + " slots of " + std::to_string(slot_bytes) + " need " +
                              std::to_string(length));
  }
  void* base = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return FailedPrecondition(std::string("mmap: ") + std::strerror(errno));
  return std::shared_ptr<SharedFrameMemory>(
      new SharedFrameMemory(static_cast<const uint8_t*>(base), length, slots, slot_bytes));
}

Status SharedFrameMemory::RegisterWith(Worker& worker) {
  ASSIGN_OR_RETURN(registration_, worker.RegisterHostMemory(const_cast<uint8_t*>(base_), length_));
  return OkStatus();
}

SharedFrameMemory::~SharedFrameMemory() {
  registration_.reset();  // unregistered while still mapped
  munmap(const_cast<uint8_t*>(base_), length_);
}

StatusOr<std::string> NewAttachKey() {
  uint8_t bytes[16];
  size_t got = 0;
  while (got < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + got, sizeof(bytes) - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      return Internal(std::string("getrandom: ") + std::strerror(errno));
    }
  }
  static const char* hex = "0123456789abcdef";
  std::string key(32, '0');
  for (int i = 0; i < 16; ++i) {
    key[2 * i] = hex[bytes[i] >> 4];
    key[2 * i + 1] = hex[bytes[i] & 15];
  }
  return key;
}

bool SameAttachKey(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace conveyor

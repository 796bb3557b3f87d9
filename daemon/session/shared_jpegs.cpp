// Shared-memory JPEG output (see shared_jpegs.h).
#include "shared_jpegs.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "session_memory.h"

namespace conveyor {

StatusOr<std::unique_ptr<SharedJpegSlots>> SharedJpegSlots::Create(int slots, size_t slot_bytes, const char* name) {
  if (slots <= 0 || slots > 32 || slot_bytes == 0) {
    return InvalidArgument("SharedJpegSlots: 1..32 slots of at least one byte");
  }
  UniqueFd fd(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ResourceExhausted(std::string("memfd_create: ") + std::strerror(errno));
  const size_t length = static_cast<size_t>(slots) * slot_bytes;
  if (ftruncate(fd.get(), static_cast<off_t>(length)) != 0) {
    return ResourceExhausted(std::string("ftruncate(memfd): ") + std::strerror(errno));
  }
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) return ResourceExhausted(std::string("mmap(memfd): ") + std::strerror(errno));
  // After this no new writable mapping can be made (this one stays writable) and the
  // size is fixed: the client's descriptor reads, and nothing more.
  if (fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) != 0) {
    const Status s = Internal(std::string("fcntl(F_ADD_SEALS): ") + std::strerror(errno));
    munmap(base, length);
    return s;
  }
  return std::unique_ptr<SharedJpegSlots>(
      new SharedJpegSlots(std::move(fd), static_cast<uint8_t*>(base), length, slots, slot_bytes));
}

SharedJpegSlots::~SharedJpegSlots() { munmap(base_, length_); }

int SharedJpegSlots::Take() {
  for (int i = 0; i < slots_; ++i) {
    if ((taken_ & (1u << i)) == 0) {
      taken_ |= 1u << i;
      return i;
    }
  }
  return -1;
}

void SharedJpegSlots::MarkSent(int slot) { sent_ |= 1u << slot; }

void SharedJpegSlots::Free(int slot) {
  taken_ &= ~(1u << slot);
  sent_ &= ~(1u << slot);
}

Status SharedJpegSlots::Release(uint32_t slot) {
  const std::string field = "output_slot_released.slot: ";
  if (slot >= static_cast<uint32_t>(slots_)) {
    return InvalidArgument(field + std::to_string(slot) + " is out of range (" + std::to_string(slots_) + " slots)");
  }
  if ((sent_ & (1u << slot)) == 0) {
    return InvalidArgument(field + "slot " + std::to_string(slot) + " holds no JPEG sent and not yet released");
  }
  Free(static_cast<int>(slot));
  return OkStatus();
}

size_t SharedJpegSlotBytes(const std::vector<std::pair<int, int>>& rendition_sizes) {
  size_t most = 0;
  for (const auto& [w, h] : rendition_sizes) {
    // yuv420p of the MCU-padded size, so that a tiny rendition still has room for headers.
    most = std::max(most, static_cast<size_t>(JpegBytesBound(w, h)));
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (most + page - 1) / page * page;
}

}  // namespace conveyor

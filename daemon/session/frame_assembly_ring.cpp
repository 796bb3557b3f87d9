// Registered buffers for frames assembled from messages (see frame_assembly_ring.h).
#include "frame_assembly_ring.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace conveyor {

bool PinnedInputBudget::TryReserve(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > limit_ || in_use_ > limit_ - bytes) return false;
  in_use_ += bytes;
  return true;
}

void PinnedInputBudget::Give(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= bytes < in_use_ ? bytes : in_use_;
}

uint64_t PinnedInputBudget::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

StatusOr<std::shared_ptr<FrameAssemblyRing>> FrameAssemblyRing::Create(Worker& worker, int count,
                                                                         size_t frame_bytes,
                                                                         std::shared_ptr<PinnedInputBudget> budget) {
  if (count < 1 || count > 32 || frame_bytes == 0 || budget == nullptr) {
    return InvalidArgument("FrameAssemblyRing: " + std::to_string(count) + " buffers of " +
                           std::to_string(frame_bytes) + " bytes");
  }
  const size_t length = BytesFor(count, frame_bytes);
  const size_t stride = length / static_cast<size_t>(count);
  if (!budget->TryReserve(length)) {
    return ResourceExhausted("workers.pinned_input_bytes: no room for " + std::to_string(length) +
                             " more bytes (" + std::to_string(budget->in_use()) + " held)");
  }
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    budget->Give(length);
    return ResourceExhausted(std::string("mmap: ") + std::strerror(err));
  }
  // From here the ring owns the mapping and the reservation: its destructor gives both back.
  std::shared_ptr<FrameAssemblyRing> ring(new FrameAssemblyRing(&worker, static_cast<uint8_t*>(base), length, stride, count));
  ring->budget_ = std::move(budget);
  ASSIGN_OR_RETURN(ring->registration_, worker.RegisterHostMemory(base, length));
  return ring;
}

size_t FrameAssemblyRing::BytesFor(int count, size_t frame_bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (frame_bytes + page - 1) / page * page * static_cast<size_t>(count);
}

bool FrameAssemblyRing::Fits(const Worker& worker, int count, size_t frame_bytes) const {
  return worker_ == &worker && count_ == count && length_ == BytesFor(count, frame_bytes);
}

FrameAssemblyRing::~FrameAssemblyRing() {
  registration_.reset();
  munmap(base_, length_);
  if (budget_ != nullptr) budget_->Give(length_);
}

std::shared_ptr<uint8_t> FrameAssemblyRing::TryTake() {
  int index = -1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int i = 0; i < count_ && index < 0; ++i) {
      if ((busy_ & (1u << i)) == 0) index = i;
    }
    if (index < 0) return nullptr;
    busy_ |= 1u << index;
  }
  uint8_t* data = base_ + static_cast<size_t>(index) * stride_;
  // The owner holds the ring: the buffer stays mapped and registered while it is read.
  return std::shared_ptr<uint8_t>(data, [ring = shared_from_this(), index](uint8_t*) { ring->Give(index); });
}

void FrameAssemblyRing::Give(int index) {
  std::lock_guard<std::mutex> lock(mu_);
  busy_ &= ~(1u << index);
}

int FrameAssemblyRing::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return __builtin_popcount(busy_);
}

}  // namespace conveyor

// Caller memory registered with a worker, kept as address ranges, and whether a frame lies
// packed inside one, so that the worker reads it where it is instead of copying it. Both
// workers use it: the CPU worker needs only the ranges, the GPU worker also page-locks
// each one (docs/DESIGN.md, Pinned staging and registered memory).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "frame.h"
#include "worker.h"

namespace conveyor {

class RegisteredRanges {
 public:
  // Whether `frame` is packed (planes back to back, no row padding) inside one range.
  bool Holds(const FrameView& frame) const;

  // Adds [data, data + size) until the returned registration is dropped. The
  // registration shares `ranges`, so that one dropped after its worker is gone still
  // finds a live list, and holds `keep` (the GPU worker's page-lock of the range) until
  // the range has left the list.
  static std::unique_ptr<HostMemoryRegistration> Add(std::shared_ptr<RegisteredRanges> ranges, const void* data,
                                                     size_t size, std::shared_ptr<void> keep = nullptr);

 private:
  struct Range {
    const uint8_t* base;
    size_t size;
  };
  class Registration;

  mutable std::mutex mu_;
  std::vector<const Range*> ranges_;  // each owned by its registration
};

}  // namespace conveyor

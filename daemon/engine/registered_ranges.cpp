// The registered ranges of a worker and the registrations that add and remove them.
#include "registered_ranges.h"

#include <algorithm>
#include <utility>

namespace conveyor {

class RegisteredRanges::Registration : public HostMemoryRegistration {
 public:
  Registration(std::shared_ptr<RegisteredRanges> ranges, Range range, std::shared_ptr<void> keep)
      : ranges_(std::move(ranges)), range_(range), keep_(std::move(keep)) {
    std::lock_guard<std::mutex> lock(ranges_->mu_);
    ranges_->ranges_.push_back(&range_);
  }
  ~Registration() override {
    std::lock_guard<std::mutex> lock(ranges_->mu_);
    auto& v = ranges_->ranges_;
    v.erase(std::remove(v.begin(), v.end(), &range_), v.end());
  }

 private:
  std::shared_ptr<RegisteredRanges> ranges_;
  const Range range_;
  std::shared_ptr<void> keep_;  // released after the destructor took the range out
};

bool RegisteredRanges::Holds(const FrameView& f) const {
  const PlaneGeometry g = PackedPlaneGeometry(f.format, f.width, f.height);
  for (int p = 0; p < LayoutOf(f.format).num_planes; ++p) {
    if (f.plane[p] != f.plane[0] + g.offset[p] || f.stride[p] != g.row_bytes[p]) return false;
  }
  const size_t size = PackedFrameSize(f.format, f.width, f.height);
  std::lock_guard<std::mutex> lock(mu_);
  for (const Range* r : ranges_) {
    if (f.plane[0] >= r->base && f.plane[0] + size <= r->base + r->size) return true;
  }
  return false;
}

std::unique_ptr<HostMemoryRegistration> RegisteredRanges::Add(std::shared_ptr<RegisteredRanges> ranges,
                                                              const void* data, size_t size,
                                                              std::shared_ptr<void> keep) {
  return std::make_unique<Registration>(std::move(ranges), Range{static_cast<const uint8_t*>(data), size},
                                        std::move(keep));
}

}  // namespace conveyor

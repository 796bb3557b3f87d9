// RegisteredRanges: a frame counts as registered only while it lies packed inside one live
// range, and a registration's `keep` outlives its range in the list.
#include "registered_ranges.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace conveyor {
namespace {

constexpr int kW = 64, kH = 32;

FrameView PackedAt(const uint8_t* p) {
  StatusOr<FrameView> v = MakePackedFrameView(p, PackedFrameSize(PixelFormat::kYuv420p, kW, kH), kW, kH,
                                              PixelFormat::kYuv420p);
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : FrameView{};
}

TEST(RegisteredRanges, AFrameIsHeldOnlyWhilePackedInsideALiveRange) {
  const size_t frame = PackedFrameSize(PixelFormat::kYuv420p, kW, kH);
  std::vector<uint8_t> memory(3 * frame);
  auto ranges = std::make_shared<RegisteredRanges>();
  EXPECT_FALSE(ranges->Holds(PackedAt(memory.data())));
  {
    std::unique_ptr<HostMemoryRegistration> r = RegisteredRanges::Add(ranges, memory.data(), 2 * frame);
    EXPECT_TRUE(ranges->Holds(PackedAt(memory.data())));
    EXPECT_TRUE(ranges->Holds(PackedAt(memory.data() + frame)));
    EXPECT_FALSE(ranges->Holds(PackedAt(memory.data() + frame + 1)));  // runs past the range's end
    EXPECT_FALSE(ranges->Holds(PackedAt(memory.data() + 2 * frame)));
    // Inside the range but with padded rows: not the packed layout the upload copies.
    FrameView padded = PackedAt(memory.data());
    padded.stride[0] = kW + 16;
    EXPECT_FALSE(ranges->Holds(padded));
  }
  EXPECT_FALSE(ranges->Holds(PackedAt(memory.data())));
}

TEST(RegisteredRanges, KeepIsReleasedOnlyAfterTheRangeLeftTheList) {
  std::vector<uint8_t> memory(PackedFrameSize(PixelFormat::kYuv420p, kW, kH));
  auto ranges = std::make_shared<RegisteredRanges>();
  int released = 0;
  bool held_at_release = true;
  std::shared_ptr<void> keep(nullptr, [&](void*) {
    ++released;
    held_at_release = ranges->Holds(PackedAt(memory.data()));
  });
  std::unique_ptr<HostMemoryRegistration> r = RegisteredRanges::Add(ranges, memory.data(), memory.size(), keep);
  keep.reset();
  EXPECT_EQ(released, 0);
  r.reset();
  EXPECT_EQ(released, 1);
  EXPECT_FALSE(held_at_release);
}

}  // namespace
}  // namespace conveyor

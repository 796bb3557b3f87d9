// The readback ring's offsets (no GPU: the ring only hands out ranges of a buffer the
// GPU worker owns) and JpegBytes, the pieces a result hands over.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "jpeg_bytes.h"
#include "readback_ring.h"

namespace conveyor {
namespace {

constexpr size_t kA = ReadbackRing::kAlignment;

TEST(ReadbackRing, HandsOutFrontToBackAndWrapsOnceTheTailIsReleased) {
  ReadbackRing ring(8 * kA);
  EXPECT_EQ(ring.Allocate(3 * kA), 0u);
  EXPECT_EQ(ring.Allocate(1), 3 * kA);  // rounded up to one alignment unit
  EXPECT_EQ(ring.Allocate(4 * kA), 4 * kA);
  EXPECT_EQ(ring.Allocate(1), std::nullopt) << "full";
  ring.Release(3 * kA);  // not the tail: nothing moves
  EXPECT_EQ(ring.Allocate(1), std::nullopt);
  ring.Release(0);  // the tail, and the released block behind it
  EXPECT_EQ(ring.in_use(), 4 * kA);
  EXPECT_EQ(ring.Allocate(5 * kA), std::nullopt) << "only 4 units before the tail";
  EXPECT_EQ(ring.Allocate(4 * kA), 0u) << "wraps to the start";
  EXPECT_EQ(ring.Allocate(1), std::nullopt);
  ring.Release(4 * kA);
  ring.Release(0);
  EXPECT_EQ(ring.in_use(), 0u);
  EXPECT_EQ(ring.Allocate(8 * kA), 0u) << "empty again: the whole ring";
  EXPECT_EQ(ring.Allocate(9 * kA), std::nullopt);
}

TEST(ReadbackRing, NeverHandsOutRoomThatIsStillHeld) {
  // Random sizes, released in random order: no two live allocations overlap, and every
  // allocation lies inside the ring.
  const size_t capacity = 64 * kA;
  ReadbackRing ring(capacity);
  std::mt19937 rng(7);
  std::map<size_t, size_t> live;  // offset -> rounded size
  int handed_out = 0, refused = 0;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t size = 1 + rng() % (12 * kA);
      const std::optional<size_t> at = ring.Allocate(size);
      if (!at) {
        ++refused;
        continue;
      }
      const size_t rounded = (size + kA - 1) / kA * kA;
      ASSERT_LE(*at + rounded, capacity);
      for (const auto& [offset, n] : live) {
        ASSERT_TRUE(*at + rounded <= offset || offset + n <= *at)
            << "[" << *at << ", " << *at + rounded << ") overlaps [" << offset << ", " << offset + n << ")";
      }
      live[*at] = rounded;
      ++handed_out;
    } else {
      auto it = live.begin();
      std::advance(it, rng() % live.size());
      ring.Release(it->first);
      live.erase(it);
    }
  }
  EXPECT_GT(handed_out, 5000);
  EXPECT_GT(refused, 100);  // the ring did fill
  for (const auto& [offset, n] : live) ring.Release(offset);
  EXPECT_EQ(ring.in_use(), 0u);
}

TEST(JpegBytes, PiecesReadBackInOrderAndLeasesLiveAsLongAsTheBytes) {
  auto lent = std::make_shared<std::vector<uint8_t>>(std::vector<uint8_t>{10, 11, 12, 13});
  std::weak_ptr<std::vector<uint8_t>> watch = lent;
  JpegBytes j;
  const uint8_t head[] = {1, 2, 3};
  j.AppendCopy(head, 3);
  j.AppendLent(lent->data(), 2, lent);
  j.AppendLent(lent->data() + 2, 2, lent);
  const uint8_t tail[] = {0xFF, 0xD9};
  j.AppendCopy(tail, 2);
  lent.reset();
  EXPECT_FALSE(watch.expired()) << "the bytes' lease went before the bytes";
  const std::vector<uint8_t> want = {1, 2, 3, 10, 11, 12, 13, 0xFF, 0xD9};
  EXPECT_EQ(j.size(), want.size());
  EXPECT_EQ(j.ToVector(), want);
  EXPECT_TRUE(j == want);
  std::vector<uint8_t> middle(4);
  j.CopyRange(2, 4, middle.data());
  EXPECT_EQ(middle, (std::vector<uint8_t>{3, 10, 11, 12}));
  std::string message = "m";
  j.AppendRangeTo(6, 3, &message);
  EXPECT_EQ(message, std::string("m\x0D\xFF\xD9", 4));
  std::vector<uint8_t> scratch;
  const uint8_t* gathered = j.Contiguous(&scratch);
  EXPECT_EQ(std::vector<uint8_t>(gathered, gathered + j.size()), want);
  int pieces = 0;
  j.ForEachPiece([&](const uint8_t*, size_t) { ++pieces; });
  EXPECT_EQ(pieces, 4);
  JpegBytes moved = std::move(j);
  EXPECT_EQ(moved.ToVector(), want) << "owned pieces survive a move";
  moved = JpegBytes();
  EXPECT_TRUE(watch.expired()) << "dropping the bytes drops the lease";
  EXPECT_TRUE(JpegBytes(std::vector<uint8_t>{5, 6}) == (std::vector<uint8_t>{5, 6}));
  const JpegBytes single(std::vector<uint8_t>{7, 8, 9});
  std::vector<uint8_t> unused;
  EXPECT_EQ(single.Contiguous(&unused)[2], 9);
  EXPECT_TRUE(unused.empty()) << "one piece is handed out where it is, not copied";
  EXPECT_FALSE(JpegBytes(std::vector<uint8_t>{5, 6}) == (std::vector<uint8_t>{5, 7}));
}

}  // namespace
}  // namespace conveyor

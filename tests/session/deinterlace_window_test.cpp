// DeinterlaceWindow: each frame goes out with the frames before and after it (itself at the
// stream's ends), and never with a neighbour in the other kind of memory: where decoding
// moves from device surfaces to host frames mid-stream, the frame on either side of the
// change stands in for the missing neighbour, as at an end.
#include "deinterlace_window.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace conveyor {
namespace {

// A frame whose view's first plane pointer names it, in device or host memory.
DeinterlaceWindow::Frame Make(uintptr_t name, bool device) {
  DeinterlaceWindow::Frame f;
  f.view.plane[0] = reinterpret_cast<const uint8_t*>(name);
  f.pts = static_cast<int64_t>(name);
  f.keepalive = std::make_shared<int>(0);
  f.device.enabled = device;
  return f;
}

uintptr_t Name(const FrameView& v) { return reinterpret_cast<uintptr_t>(v.plane[0]); }

struct Triple {
  uintptr_t prev, cur, next;
  bool device;
  bool operator==(const Triple& o) const {
    return prev == o.prev && cur == o.cur && next == o.next && device == o.device;
  }
};

std::vector<Triple> Windows(const std::vector<DeinterlaceWindow::Frame>& frames) {
  DeinterlaceWindow w;
  std::vector<Triple> out;
  auto take = [&](std::optional<DeinterlaceWindow::Ready> r) {
    if (r) out.push_back({Name(r->prev), Name(r->cur.view), Name(r->next), r->cur.device.enabled});
  };
  for (const auto& f : frames) take(w.Push(f));
  take(w.Finish());
  return out;
}

TEST(DeinterlaceWindow, NeighboursAreTheFramesAroundAndItselfAtTheEnds) {
  const std::vector<Triple> got = Windows({Make(1, false), Make(2, false), Make(3, false)});
  const std::vector<Triple> want = {{1, 1, 2, false}, {1, 2, 3, false}, {2, 3, 3, false}};
  EXPECT_EQ(got, want);
}

TEST(DeinterlaceWindow, NoNeighbourComesFromTheOtherKindOfMemory) {
  // Device surfaces 1..3, then host frames 4..5 (the engines gave the stream up).
  const std::vector<Triple> got =
      Windows({Make(1, true), Make(2, true), Make(3, true), Make(4, false), Make(5, false)});
  const std::vector<Triple> want = {
      {1, 1, 2, true}, {1, 2, 3, true}, {2, 3, 3, true}, {4, 4, 5, false}, {4, 5, 5, false}};
  EXPECT_EQ(got, want);
}

TEST(DeinterlaceWindow, TheOwnerKeepsEveryFrameItsRequestReads) {
  DeinterlaceWindow w;
  auto a = Make(1, false), b = Make(2, false);
  std::weak_ptr<void> a_alive = a.keepalive, b_alive = b.keepalive;
  EXPECT_FALSE(w.Push(std::move(a)));
  std::optional<DeinterlaceWindow::Ready> r = w.Push(std::move(b));
  ASSERT_TRUE(r);
  std::optional<DeinterlaceWindow::Ready> last = w.Finish();
  last.reset();
  EXPECT_FALSE(a_alive.expired());
  EXPECT_FALSE(b_alive.expired());
  r.reset();
  EXPECT_TRUE(a_alive.expired());
  EXPECT_TRUE(b_alive.expired());
}

}  // namespace
}  // namespace conveyor

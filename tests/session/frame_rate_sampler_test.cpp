// FrameRateSampler's spans against what FFmpeg 5.1's fps filter writes for the same
// timestamps (the grid points `ffmpeg -i IN -vf fps=R -f framemd5 -` lists for a 10 s,
// 25 fps clip in Matroska's 1/1000 time base), and hand-made variable frame rates.
#include "frame_rate_sampler.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace conveyor {
namespace {

// The grid points written for frames at `pts` whose input ends at `end_pts`, one entry per
// point, naming the frame (its index in `pts`) written there.
struct Written {
  std::vector<int64_t> points;
  std::vector<int> frames;
};

Written Sample(FrameRateSampler& s, const std::vector<int64_t>& pts, int64_t end_pts) {
  Written w;
  auto add = [&](FrameRateSampler::Span span, int frame) {
    for (int64_t i = 0; i < span.count; ++i) {
      w.points.push_back(span.first + i);
      w.frames.push_back(frame);
    }
  };
  for (size_t i = 0; i < pts.size() && !s.done(); ++i) {
    const FrameRateSampler::Span span = s.Next(pts[i]);
    if (i > 0) add(span, static_cast<int>(i) - 1);
  }
  if (!s.done() && !pts.empty()) add(s.Finish(end_pts), static_cast<int>(pts.size()) - 1);
  return w;
}

std::vector<int64_t> Grid(int64_t first, int64_t step, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(first + i * step);
  return out;
}

std::vector<int64_t> Range(int64_t first, int64_t last) { return Grid(first, 1, static_cast<int>(last - first + 1)); }

TEST(FrameRateSampler, DecimatesToOneFrameASecond) {
  // fps=1 on 25 fps: points 0..9. Point k goes to the last frame that rounds to it (pts
  // k*1000 + 480 ms: frame 25k + 12): vf_fps drops a buffered frame once the one after it
  // rounds to the point due. The ffmpeg CLI's point 0 and 1 are frames 12 and 37 (their
  // framemd5 against `-vf select=eq(n\,12)`).
  FrameRateSampler s(1, 1, 1, 1000, 0);
  const Written w = Sample(s, Grid(0, 40, 250), 10000);
  EXPECT_EQ(w.points, Range(0, 9));
  std::vector<int> want;
  for (int k = 0; k < 10; ++k) want.push_back(25 * k + 12);
  EXPECT_EQ(w.frames, want);
}

TEST(FrameRateSampler, RoundsHalvesAwayFromZero) {
  // fps=3: 200 ms is point 0.6, rounded to 1; 160 ms (0.48) to 0. Point 0 is frame 4
  // (160 ms), point 1 frame 12 (480 ms: 1.44), point 2 frame 20 (800 ms: 2.4).
  FrameRateSampler s(3, 1, 1, 1000, 0);
  const Written w = Sample(s, Grid(0, 40, 250), 10000);
  EXPECT_EQ(w.points, Range(0, 29));  // what the ffmpeg CLI writes: 30 frames
  ASSERT_GE(w.frames.size(), 3u);
  EXPECT_EQ(w.frames[0], 4);
  EXPECT_EQ(w.frames[1], 12);
  EXPECT_EQ(w.frames[2], 20);
  // A pts exactly half way: 500 ms at fps=1 is point 0.5, which goes to 1.
  FrameRateSampler t(1, 1, 1, 1000, 0);
  EXPECT_EQ(t.GridPoint(500), 1);
  EXPECT_EQ(t.GridPoint(499), 0);
}

TEST(FrameRateSampler, DuplicatesUpToTheInputsEnd) {
  // fps=60 on 25 fps: 600 points, the last frame (9.96 s) up to 10.00 s (its end).
  FrameRateSampler s(60, 1, 1, 1000, 0);
  const Written w = Sample(s, Grid(0, 40, 250), 10000);
  EXPECT_EQ(w.points, Range(0, 599));
  EXPECT_EQ(w.frames.back(), 249);
  EXPECT_EQ(w.frames[1], 0);  // point 1 (16.7 ms) still shows frame 0; 40 ms rounds to 2
  EXPECT_EQ(w.frames[2], 1);
}

TEST(FrameRateSampler, FractionalRates) {
  // fps=7/3: 23 points (10 s * 7/3 = 23.3); 30000/1001 on 25 fps: 300 points (299.7).
  FrameRateSampler a(7, 3, 1, 1000, 0);
  EXPECT_EQ(Sample(a, Grid(0, 40, 250), 10000).points, Range(0, 22));
  FrameRateSampler b(30000, 1001, 1, 1000, 0);
  EXPECT_EQ(Sample(b, Grid(0, 40, 250), 10000).points, Range(0, 299));
}

TEST(FrameRateSampler, StartsOnTheFirstFramesPoint) {
  // `ffmpeg -copyts -ss 2.3 -to 5.7 -i IN -vf fps=60`: the frames kept are 2.32 .. 5.68 s,
  // and the points 139 .. 342 (the last frame ends at 5.72 s: point 343.2 rounds to 343).
  FrameRateSampler s(60, 1, 1, 1000, 0);
  const Written w = Sample(s, Grid(2320, 40, 85), 5720);
  EXPECT_EQ(w.points, Range(139, 342));
  // The same at fps=2: points 5 .. 10.
  FrameRateSampler t(2, 1, 1, 1000, 0);
  EXPECT_EQ(Sample(t, Grid(2320, 40, 85), 5720).points, Range(5, 10));
}

TEST(FrameRateSampler, VariableFrameRateFillsGapsWithTheFrameBefore) {
  // 10 fps grid; frames at 0, 0.1, 0.5 (a gap), 0.55, 0.6 s, ending at 0.7 s.
  FrameRateSampler s(10, 1, 1, 1000, 0);
  const Written w = Sample(s, {0, 100, 500, 550, 600}, 700);
  EXPECT_EQ(w.points, Range(0, 6));
  // 0.55 s rounds to point 6 (halves away from zero), as 0.6 s does: 0.5 s shows at 5,
  // 0.55 s is dropped, 0.6 s shows at 6.
  EXPECT_EQ(w.frames, (std::vector<int>{0, 1, 1, 1, 1, 2, 4}));
}

TEST(FrameRateSampler, MaxFramesCountsThePointsWritten) {
  FrameRateSampler s(60, 1, 1, 1000, 5);
  const Written w = Sample(s, Grid(0, 40, 250), 10000);
  EXPECT_EQ(w.points, Range(0, 4));
  EXPECT_EQ(w.frames, (std::vector<int>{0, 0, 1, 1, 1}));
  EXPECT_TRUE(s.done());
}

TEST(FrameRateSampler, AFrameThatRoundsBackIsDropped) {
  // A frame whose pts rounds before the next point due (out of order, or a dense burst)
  // covers nothing; the next point goes to the frame after it.
  FrameRateSampler s(1, 1, 1, 1000, 0);
  const Written w = Sample(s, {0, 1000, 1100, 1200, 3000}, 4000);
  EXPECT_EQ(w.points, Range(0, 3));
  EXPECT_EQ(w.frames, (std::vector<int>{0, 3, 3, 4}));
}

TEST(FrameRateSampler, NoFramesNoOutput) {
  FrameRateSampler s(25, 1, 1, 1000, 0);
  const FrameRateSampler::Span span = s.Finish(1000);
  EXPECT_EQ(span.count, 0);
}

}  // namespace
}  // namespace conveyor

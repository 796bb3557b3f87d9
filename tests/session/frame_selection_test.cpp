// FrameSelection's keep/drop/stop decisions from hand-made timestamps: time ranges on
// constant and variable frame rates, frame limits, and the exact comparison of a pts
// with a decimal start.
#include "frame_selection.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace conveyor {
namespace {

using Verdict = FrameSelection::Verdict;

// The pts the selection keeps, feeding `pts` in order until it says stop.
std::vector<int64_t> Kept(FrameSelection& s, const std::vector<int64_t>& pts) {
  std::vector<int64_t> kept;
  for (int64_t p : pts) {
    const Verdict v = s.Decide(p);
    if (v == Verdict::kStop) break;
    if (v == Verdict::kKeep) kept.push_back(p);
    if (s.done()) break;
  }
  return kept;
}

std::vector<int64_t> Grid(int64_t first, int64_t step, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) out.push_back(first + i * step);
  return out;
}

TEST(FrameSelection, NothingAskedKeepsEveryFrame) {
  FrameSelection s(SelectionSpec{}, 1, 1000);
  EXPECT_EQ(Kept(s, Grid(0, 40, 10)), Grid(0, 40, 10));
  EXPECT_FALSE(s.done());
  EXPECT_FALSE(s.SeekTarget().has_value());
}

TEST(FrameSelection, StartIsInclusiveEndIsExclusive) {
  SelectionSpec spec;
  spec.start_seconds = 2.52;  // exactly frame 63 at 25 fps in 1/1000
  spec.end_seconds = 3.04;    // exactly frame 76: not kept
  FrameSelection s(spec, 1, 1000);
  EXPECT_EQ(Kept(s, Grid(0, 40, 250)), Grid(2520, 40, 13));
  EXPECT_TRUE(s.done());
}

TEST(FrameSelection, DecimalStartMatchesPtsInOtherTimeBases) {
  // 2.52 s is 32256 in MP4's 1/12800 and 226800 in MPEG-TS's 1/90000.
  SelectionSpec spec;
  spec.start_seconds = 2.52;
  FrameSelection mp4(spec, 1, 12800);
  EXPECT_EQ(mp4.Decide(32255), Verdict::kDrop);
  EXPECT_EQ(mp4.Decide(32256), Verdict::kKeep);
  FrameSelection ts(spec, 1, 90000);
  EXPECT_EQ(ts.Decide(226799), Verdict::kDrop);
  EXPECT_EQ(ts.Decide(226800), Verdict::kKeep);
  // A time base like 1001/30000: frame 75 is at 2.5025 s.
  SelectionSpec mid;
  mid.start_seconds = 2.5025;
  FrameSelection ntsc(mid, 1001, 30000);
  EXPECT_EQ(ntsc.Decide(74), Verdict::kDrop);
  EXPECT_EQ(ntsc.Decide(75), Verdict::kKeep);
}

TEST(FrameSelection, StartBetweenFramesTakesTheNextOne) {
  SelectionSpec spec;
  spec.start_seconds = 2.5;
  spec.end_seconds = 2.6;
  FrameSelection s(spec, 1, 1000);
  EXPECT_EQ(Kept(s, Grid(0, 40, 250)), (std::vector<int64_t>{2520, 2560}));
}

TEST(FrameSelection, VariableFrameRate) {
  // Gaps of 10, 100 and 33 ms (a phone's VFR): the range is decided by time, not count.
  const std::vector<int64_t> pts = {0, 10, 20, 120, 220, 253, 286, 319, 1000, 1010};
  SelectionSpec spec;
  spec.start_seconds = 0.1;
  spec.end_seconds = 0.3;
  FrameSelection s(spec, 1, 1000);
  EXPECT_EQ(Kept(s, pts), (std::vector<int64_t>{120, 220, 253, 286}));
  // A range inside a gap keeps nothing and stops at the frame after it.
  SelectionSpec gap;
  gap.start_seconds = 0.4;
  gap.end_seconds = 0.9;
  FrameSelection g(gap, 1, 1000);
  for (int64_t p : {0, 10, 20, 120, 220, 253, 286, 319}) EXPECT_EQ(g.Decide(p), Verdict::kDrop) << p;
  EXPECT_EQ(g.Decide(1000), Verdict::kStop);
  EXPECT_TRUE(g.done());
}

TEST(FrameSelection, MaxFramesIsDoneOnTheLastKeptFrame) {
  SelectionSpec spec;
  spec.max_frames = 3;
  FrameSelection s(spec, 1, 25);
  EXPECT_EQ(s.Decide(0), Verdict::kKeep);
  EXPECT_EQ(s.Decide(1), Verdict::kKeep);
  EXPECT_FALSE(s.done());
  EXPECT_EQ(s.Decide(2), Verdict::kKeep);
  EXPECT_TRUE(s.done());  // the caller reads no fourth frame
  EXPECT_EQ(s.Decide(3), Verdict::kStop);
  EXPECT_EQ(s.kept(), 3);
}

TEST(FrameSelection, MaxFramesCountsFromStart) {
  SelectionSpec spec;
  spec.start_seconds = 6.1;
  spec.max_frames = 5;
  FrameSelection s(spec, 1, 1000);
  EXPECT_EQ(Kept(s, Grid(0, 40, 250)), Grid(6120, 40, 5));
}

TEST(FrameSelection, EndBeforeMaxFramesStopsFirst) {
  SelectionSpec spec;
  spec.end_seconds = 0.2;
  spec.max_frames = 100;
  FrameSelection s(spec, 1, 25);
  EXPECT_EQ(Kept(s, Grid(0, 1, 50)), Grid(0, 1, 5));
}

TEST(FrameSelection, SeekTargetRoundsDown) {
  SelectionSpec spec;
  spec.start_seconds = 2.5;
  EXPECT_EQ(FrameSelection(spec, 1, 1000).SeekTarget(), 2500);
  EXPECT_EQ(FrameSelection(spec, 1001, 30000).SeekTarget(), 74);  // 74.925 -> 74
  spec.start_seconds = 0;
  EXPECT_FALSE(FrameSelection(spec, 1, 1000).SeekTarget().has_value());
}

TEST(FrameSelection, CoversTheRangeForAudio) {
  SelectionSpec spec;
  spec.start_seconds = 1.0;
  spec.end_seconds = 2.0;
  FrameSelection s(spec, 1, 1000);
  EXPECT_FALSE(s.Covers(0.999));
  EXPECT_TRUE(s.Covers(1.0));
  EXPECT_TRUE(s.Covers(1.999));
  EXPECT_FALSE(s.Covers(2.0));
}

}  // namespace
}  // namespace conveyor

// The engine-overlap arithmetic behind the benchmark's overlap column and the daemon's
// overlap gauge, on hand-made intervals with known answers.
#include <gtest/gtest.h>

#include "stream_overlap.h"

namespace conveyor {
namespace {

TEST(StreamOverlap, UnionCountsOverlapsOnce) {
  EXPECT_DOUBLE_EQ(UnionLength({{0, 2}, {1, 3}, {5, 6}}), 4.0);
  EXPECT_DOUBLE_EQ(UnionLength({}), 0.0);
}

TEST(StreamOverlap, OneEngineOverlappingItselfIsNotOverlap) {
  std::vector<GpuInterval> engines[3];
  engines[1] = {{0, 4}, {1, 3}};  // two encode lanes: still one engine
  EXPECT_DOUBLE_EQ(OverlapLength(engines), 0.0);
  engines[0] = {{2, 5}};  // upload while encoding from 2 to 4
  engines[2] = {{3.5, 6}};  // readback: two or more busy from 2 to 5
  EXPECT_DOUBLE_EQ(OverlapLength(engines), 3.0);
}

TEST(StreamOverlap, WindowRatioOverItsSpanAndItsCapacity) {
  OverlapWindow window(2);
  EXPECT_DOUBLE_EQ(window.Ratio(), 0.0);
  FrameTimes untimed;
  window.Add(untimed);  // no stage timing: ignored
  EXPECT_DOUBLE_EQ(window.Ratio(), 0.0);
  auto frame = [](double t0) {
    FrameTimes t;
    t.timing_run = 1;
    t.upload = {t0, t0 + 1};
    t.encode = {t0 + 1, t0 + 3};
    t.band_readback = {{t0 + 2, t0 + 4}};
    return t;
  };
  window.Add(frame(0));  // span 0..4, overlap 2..3: 0.25
  EXPECT_DOUBLE_EQ(window.Ratio(), 0.25);
  window.Add(frame(2));   // upload 2..3 joins: two or more busy 2..4 and 3..5 -> 2..5 of 0..6
  EXPECT_DOUBLE_EQ(window.Ratio(), 0.5);
  window.Add(frame(100));  // capacity 2: the first frame leaves; span 2..104
  EXPECT_NEAR(window.Ratio(), (1.0 + 1.0) / 102.0, 1e-12);
}

// Sampled timing: runs of frames far apart. The window reports the last finished run
// until the current one fills it, and never spans two runs (the untimed time between
// them would read as idle).
TEST(StreamOverlap, WindowKeepsToOneRunOfTimedFrames) {
  auto frame = [](uint64_t run, double t0) {
    FrameTimes t;
    t.timing_run = run;
    t.upload = {t0, t0 + 1};
    t.encode = {t0 + 1, t0 + 3};
    t.band_readback = {{t0 + 2, t0 + 4}};
    return t;
  };
  OverlapWindow window(2);
  window.Add(frame(1, 0));
  window.Add(frame(1, 2));
  EXPECT_DOUBLE_EQ(window.Ratio(), 0.5);   // as above: 2..5 of 0..6
  window.Add(frame(2, 1000));              // run 2 begins: run 1 is finished at 0.5
  EXPECT_DOUBLE_EQ(window.Ratio(), 0.5);   // one frame of run 2 is not yet a window
  window.Add(frame(1, 4));                 // a straggler of run 1: ignored
  EXPECT_DOUBLE_EQ(window.Ratio(), 0.5);
  window.Add(frame(2, 1003));              // run 2 fills the window: two or more busy 2..4 and 5..6 of 0..7
  EXPECT_NEAR(window.Ratio(), 3.0 / 7.0, 1e-12);
}

}  // namespace
}  // namespace conveyor

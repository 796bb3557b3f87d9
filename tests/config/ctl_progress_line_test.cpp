// conveyorctl's status line: the span a selection leaves of the input Started describes,
// the share done by the last frame's time or by frames, and the text.
#include <gtest/gtest.h>

#include <string>

#include "progress_line.h"

namespace conveyor::ctl {
namespace {

// 10 s of a 25 frames/s input in a 1/12800 time base, starting at `start_s`, with 250
// frames in its header.
v1::Started TenSeconds(double start_s = 0) {
  v1::Started s;
  s.mutable_time_base()->set_num(1);
  s.mutable_time_base()->set_den(12800);
  s.set_source_start_pts(static_cast<int64_t>(start_s * 12800));
  s.set_source_duration(10 * 12800);
  s.set_source_frames(250);
  return s;
}

TEST(ProgressLine, TheSpanIsTheInputsLessWhatTheSelectionLeavesOut) {
  v1::JobSpec spec;
  ProgressSpan span = SpanOf(TenSeconds(), spec);
  EXPECT_EQ(span.start, 0.0);
  EXPECT_EQ(span.end, 10.0);
  EXPECT_EQ(span.frames, 250u);

  spec.set_start_seconds(2);
  spec.set_end_seconds(6);
  span = SpanOf(TenSeconds(), spec);
  EXPECT_EQ(span.start, 2.0);
  EXPECT_EQ(span.end, 6.0);
  EXPECT_EQ(span.frames, 0u) << "the header's count is the whole input's";

  spec.clear_end_seconds();
  spec.set_duration_seconds(30);  // past the end of the input
  spec.mutable_frame_rate()->set_num(1);
  spec.mutable_frame_rate()->set_den(2);
  span = SpanOf(TenSeconds(1.4), spec);  // an MPEG-TS that starts at 1.4 s
  EXPECT_EQ(span.start, 2.0);
  EXPECT_DOUBLE_EQ(*span.end, 11.4);
  EXPECT_EQ(span.frames, 5u) << "one frame every 2 s over 9.4 s";

  v1::JobSpec capped;
  capped.set_max_frames(10);
  span = SpanOf(TenSeconds(), capped);
  EXPECT_EQ(span.frames, 10u);
  EXPECT_FALSE(span.end.has_value()) << "the cap ends the output before the input does";

  v1::Started live;  // no duration, no count: a live stream
  live.mutable_time_base()->set_num(1);
  live.mutable_time_base()->set_den(90000);
  span = SpanOf(live, v1::JobSpec());
  EXPECT_FALSE(span.end.has_value());
  EXPECT_EQ(span.frames, 0u);
  EXPECT_FALSE(ShareDone(span, 100, 3.0).has_value());
}

TEST(ProgressLine, TheShareFollowsTheOutputNotTheInputSent) {
  const ProgressSpan span = SpanOf(TenSeconds(), v1::JobSpec());
  // Frame n (from 1) of 250 has pts (n - 1) / 25.
  for (uint64_t n : {1u, 50u, 125u, 250u}) {
    const double share = *ShareDone(span, n, (n - 1) / 25.0);
    EXPECT_NEAR(share, n / 250.0, 1 / 250.0 + 1e-9) << "frame " << n;
  }
  // Without a time (container output before its first Progress), by frames.
  EXPECT_DOUBLE_EQ(*ShareDone(span, 50, std::nullopt), 0.2);
}

TEST(ProgressLine, TheTextIsTheCliStatusLine) {
  const ProgressSpan span = SpanOf(TenSeconds(), v1::JobSpec());
  EXPECT_EQ(FormatProgress(span, 0, std::nullopt, 0.5), "frame=     0 fps=   0 time=N/A speed=N/A   0%");
  // The share is rounded down (49.6 % shows 49 %), and says 100 % only once done: 99.6 %
  // before the end shows 99 %.
  EXPECT_EQ(FormatProgress(span, 125, 4.96, 2.0), "frame=   125 fps=  62 time=00:00:04.96 speed=2.48x  49% ETA 0:02");
  EXPECT_EQ(FormatProgress(span, 249, 9.96, 4.0), "frame=   249 fps=  62 time=00:00:09.96 speed=2.49x  99% ETA 0:00");
  EXPECT_EQ(FormatProgress(span, 250, 9.96, 4.0, true), "frame=   250 fps=  62 time=00:00:09.96 speed=2.49x 100%");
  const ProgressSpan unknown;
  EXPECT_EQ(FormatProgress(unknown, 3725, 3725.0, 1862.5), "frame=  3725 fps=   2 time=01:02:05.00 speed=2x");
}

}  // namespace
}  // namespace conveyor::ctl

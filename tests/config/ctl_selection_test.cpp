// conveyorctl's selection options (--ss, --to, -t, --frames, --fps, --keyframes) into the
// JobSpec: the ffmpeg CLI's time syntax, and what the client refuses before a call.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "transcode_command.h"

namespace conveyor::ctl {
namespace {

TEST(CtlSelection, TimesAreReadAsTheFfmpegCliWritesThem) {
  const std::pair<const char*, double> good[] = {
      {"12", 12},         {"12.5", 12.5},        {"0.04", 0.04},     {"1500ms", 1.5},     {"250000us", 0.25},
      {"3s", 3},          {"1:02.5", 62.5},      {"00:01:02.5", 62.5}, {"1:00:00", 3600}, {".5", 0.5}};
  for (const auto& [text, seconds] : good) {
    StatusOr<double> t = ParseTime(text);
    ASSERT_TRUE(t.ok()) << text << ": " << t.status().ToString();
    EXPECT_DOUBLE_EQ(*t, seconds) << text;
  }
  for (const char* text : {"", "-1", "abc", "1:2:3:4", "1:60", "1.5:30", "1..2", "12x", ".", "1:", "ms"}) {
    EXPECT_FALSE(ParseTime(text).ok()) << text;
  }
}

TranscodeOptions Options() {
  TranscodeOptions o;
  o.input = "in.mkv";
  o.output = "frames";
  return o;
}

TEST(CtlSelection, OptionsBecomeTheJobSpecFields) {
  TranscodeOptions o = Options();
  o.ss = "1:02.5";
  o.to = "70";
  o.frames = 12;
  o.keyframes = true;
  StatusOr<v1::JobSpec> spec = BuildJobSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_TRUE(spec->has_start_seconds());
  EXPECT_DOUBLE_EQ(spec->start_seconds(), 62.5);
  EXPECT_DOUBLE_EQ(spec->end_seconds(), 70);
  EXPECT_FALSE(spec->has_duration_seconds());
  EXPECT_EQ(spec->max_frames(), 12);
  EXPECT_TRUE(spec->keyframes_only());

  o = Options();
  o.duration = "2.5";
  spec = BuildJobSpec(o);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_FALSE(spec->has_start_seconds());
  EXPECT_FALSE(spec->has_end_seconds());
  EXPECT_DOUBLE_EQ(spec->duration_seconds(), 2.5);
}

TEST(CtlSelection, NoOptionsAskForNoSelection) {
  StatusOr<v1::JobSpec> spec = BuildJobSpec(Options());
  ASSERT_TRUE(spec.ok());
  EXPECT_FALSE(spec->has_start_seconds() || spec->has_end_seconds() || spec->has_duration_seconds());
  EXPECT_EQ(spec->max_frames(), 0);
  EXPECT_FALSE(spec->keyframes_only());
  EXPECT_FALSE(spec->has_frame_rate());
}

TEST(CtlSelection, FpsIsARationalRate) {
  const std::tuple<const char*, int, int> good[] = {{"1", 1, 1}, {"0.5", 1, 2}, {"29.97", 2997, 100},
                                                    {"30000/1001", 30000, 1001}, {"24/2", 12, 1}};
  for (const auto& [text, num, den] : good) {
    TranscodeOptions o = Options();
    o.fps = text;
    StatusOr<v1::JobSpec> spec = BuildJobSpec(o);
    ASSERT_TRUE(spec.ok()) << text << ": " << spec.status().ToString();
    EXPECT_EQ(spec->frame_rate().num(), num) << text;
    EXPECT_EQ(spec->frame_rate().den(), den) << text;
  }
  for (const char* text : {"0", "-1", "x", "1/0", "0.0001"}) {
    TranscodeOptions o = Options();
    o.fps = text;
    StatusOr<v1::JobSpec> spec = BuildJobSpec(o);
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_NE(spec.status().message().find("--fps"), std::string::npos) << spec.status().message();
  }
}

TEST(CtlSelection, RefusedBeforeTheCall) {
  TranscodeOptions o = Options();
  o.to = "5";
  o.duration = "2";
  EXPECT_NE(BuildJobSpec(o).status().message().find("--to or -t"), std::string::npos);
  o = Options();
  o.ss = "-3";
  EXPECT_NE(BuildJobSpec(o).status().message().find("--ss"), std::string::npos);
  o = Options();
  o.frames = -1;
  EXPECT_NE(BuildJobSpec(o).status().message().find("--frames"), std::string::npos);
  o = Options();
  o.raw = "yuv420p:64x48";
  o.keyframes = true;
  EXPECT_NE(BuildJobSpec(o).status().message().find("--keyframes"), std::string::npos);
}

}  // namespace
}  // namespace conveyor::ctl

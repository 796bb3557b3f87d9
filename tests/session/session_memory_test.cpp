// A session's memory estimate (session_memory.h) against numbers worked out by hand from
// its terms, at 1080p and 4K, raw and container input.
#include <gtest/gtest.h>

#include "job.h"
#include "session.h"
#include "session_memory.h"
#include "shared_jpegs.h"

namespace conveyor {
namespace {

SessionOptions Bounds() {
  SessionOptions o;
  o.queue_frames = 4;
  o.output_bytes = 64ull << 20;  // 67108864
  o.input_bytes = 16 << 20;      // 16777216
  o.decode_threads = 4;
  return o;
}

Job ParsedJob(const v1::JobSpec& spec) {
  StatusOr<Job> job = ParseJobSpec(spec, JobLimits{});
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return job.ok() ? *job : Job{};
}

v1::JobSpec Raw(v1::PixelFormat format, int width, int height) {
  v1::JobSpec spec;
  spec.mutable_raw()->set_pixel_format(format);
  spec.mutable_raw()->set_width(width);
  spec.mutable_raw()->set_height(height);
  spec.add_renditions();  // the source size
  return spec;
}

TEST(SessionMemory, JpegBoundIsTheMcuPaddedYuv420pSizeAndHeaders) {
  EXPECT_EQ(JpegBytesBound(1920, 1080), 1920u * 1088 * 3 / 2 + 4096);  // 3137536
  EXPECT_EQ(JpegBytesBound(3840, 2160), 3840u * 2160 * 3 / 2 + 4096);  // 12445696
  EXPECT_EQ(JpegBytesBound(1, 1), 16u * 16 * 3 / 2 + 4096);
  EXPECT_GE(SharedJpegSlotBytes({{1920, 1080}}), JpegBytesBound(1920, 1080));
}

TEST(SessionMemory, Raw1080pFramesFromMessagesWithTwoRenditions) {
  v1::JobSpec spec = Raw(v1::PIXEL_FORMAT_YUV420P, 1920, 1080);
  v1::RenditionSpec* r720 = spec.add_renditions();
  r720->set_width(1280);
  r720->set_height(720);
  const SessionMemoryEstimate e = EstimateAtAdmission(ParsedJob(spec), Bounds());
  EXPECT_FALSE(e.provisional);
  EXPECT_EQ(e.Describe(), "1920x1080");
  // (2 x 4 queue + 2) frames of 1920 x 1080 x 1.5 = 3110400 bytes.
  EXPECT_EQ(e.input_bytes, 31104000u);
  EXPECT_EQ(e.frame_bytes, 0u);
  // The output bound, and 5 frames (the lane's 4, the worker's 1) of JPEGs bounded at
  // 3137536 (1920x1088) + 1386496 (1280x720) bytes.
  EXPECT_EQ(e.output_bytes, 67108864u + 5u * 4524032u);
  EXPECT_EQ(e.overhead_bytes, 8388608u);
  EXPECT_EQ(e.total(), 129221632u);  // about 123 MiB
}

TEST(SessionMemory, AStoryboardCountsTwoSpritesAndSpriteSizedJpegs) {
  v1::JobSpec spec = Raw(v1::PIXEL_FORMAT_YUV420P, 1920, 1080);
  v1::TileSpec* tile = spec.mutable_renditions(0)->mutable_tile();
  tile->set_columns(10);
  tile->set_rows(10);
  tile->set_width(160);
  tile->set_height(90);
  const SessionMemoryEstimate e = EstimateAtAdmission(ParsedJob(spec), Bounds());
  // Two 1600 x 900 sprites at 1.5 bytes a pixel: 2 x 2160000.
  EXPECT_EQ(e.frame_bytes, 4320000u);
  // The output bound, and 5 sprite JPEGs bounded at 1600 x 912 x 1.5 + 4096 = 2192896 bytes.
  EXPECT_EQ(e.output_bytes, 67108864u + 5u * 2192896u);
}

TEST(SessionMemory, Raw4kRgbFramesFromMessages) {
  const SessionMemoryEstimate e = EstimateAtAdmission(ParsedJob(Raw(v1::PIXEL_FORMAT_RGB24, 3840, 2160)), Bounds());
  EXPECT_EQ(e.Describe(), "3840x2160");
  EXPECT_EQ(e.input_bytes, 10u * 24883200u);  // 3840 x 2160 x 3
  EXPECT_EQ(e.output_bytes, 67108864u + 5u * 12445696u);
  EXPECT_EQ(e.total(), 386557952u);  // about 369 MiB
}

TEST(SessionMemory, RawFramesInSharedMemoryAreTheClientsButSharedJpegSlotsAreCounted) {
  v1::JobSpec spec = Raw(v1::PIXEL_FORMAT_YUV420P, 1920, 1080);
  spec.mutable_raw()->set_shared_memory_slots(4);
  spec.mutable_output()->mutable_frames()->set_shared_memory_slots(3);
  const SessionMemoryEstimate e = EstimateAtAdmission(ParsedJob(spec), Bounds());
  EXPECT_EQ(e.input_bytes, 0u);
  EXPECT_EQ(e.output_bytes, 67108864u + 5u * 3137536u + 3u * SharedJpegSlotBytes({{1920, 1080}}));
}

TEST(SessionMemory, Container4kOnceProbed) {
  v1::JobSpec spec;
  spec.mutable_container();
  spec.add_renditions();
  const Job job = ParsedJob(spec);
  const SessionMemoryEstimate e = EstimateSessionMemory(job, Bounds(), 3840, 2160);
  EXPECT_FALSE(e.provisional);
  // The input queue and FFmpeg's 5000000-byte probe.
  EXPECT_EQ(e.input_bytes, 16777216u + 5000000u);
  // 16 references + 4 decode threads + 3 decoded ahead + 4 in the lane + 1 with the
  // worker + 2 for the deinterlace window (deinterlace auto): 30 frames of 3840 x 2160 x
  // 1.5 = 12441600.
  EXPECT_EQ(e.frame_bytes, 30u * 12441600u);
  EXPECT_EQ(e.output_bytes, 67108864u + 5u * 12445696u);
  EXPECT_EQ(e.overhead_bytes, 8388608u + 4u * 2097152u);
  EXPECT_EQ(e.total(), 503814976u + 3u * 12441600u);  // about 516 MiB
}

TEST(SessionMemory, ContainerAtAdmissionCountsA1080pSourceUntilProbed) {
  v1::JobSpec spec;
  spec.mutable_container();
  spec.add_renditions();
  spec.set_deinterlace(v1::DEINTERLACE_OFF);
  SessionOptions o = Bounds();
  o.decode_threads = 2;
  const SessionMemoryEstimate e = EstimateAtAdmission(ParsedJob(spec), o);
  EXPECT_TRUE(e.provisional);
  EXPECT_EQ(e.Describe(), "container input (1920x1080 until probed)");
  EXPECT_EQ(e.frame_bytes, (16u + 2u + 3u + 4u + 1u) * 3110400u);  // no deinterlace window
  EXPECT_EQ(e.overhead_bytes, 8388608u + 2u * 2097152u);
  EXPECT_EQ(e.total(), 80870400u + 21777216u + 82796544u + 12582912u);

  // Under smaller limits the provisional size is the limits'.
  o.limits.max_width = 1280;
  o.limits.max_height = 720;
  const SessionMemoryEstimate small = EstimateAtAdmission(ParsedJob(spec), o);
  EXPECT_EQ(small.Describe(), "container input (1280x720 until probed)");
  EXPECT_EQ(small.frame_bytes, 26u * 1382400u);
}

TEST(SessionMemory, TheBoundsScaleTheEstimate) {
  const Job job = ParsedJob(Raw(v1::PIXEL_FORMAT_YUV420P, 1920, 1080));
  SessionOptions o = Bounds();
  o.queue_frames = 8;
  o.output_bytes = 1 << 20;
  const SessionMemoryEstimate e = EstimateAtAdmission(job, o);
  EXPECT_EQ(e.input_bytes, 18u * 3110400u);
  EXPECT_EQ(e.output_bytes, 1048576u + 9u * 3137536u);
}

TEST(SessionMemory, DecoderThreadsAreFfmpegsChoiceForZero) {
  EXPECT_EQ(DecoderThreads(3), 3);
  EXPECT_GE(DecoderThreads(0), 2);
  EXPECT_LE(DecoderThreads(0), 16);
}

}  // namespace
}  // namespace conveyor

// The deinterlace stage against the ffmpeg CLI's yadif filter (mode 0, every frame
// deinterlaced) on the same raw frames, byte for byte: interlaced sequences woven from a
// 50 fps testsrc2 by tinterlace, with and without temporal noise (which drives every
// branch of the per-sample filter), in each format the stage takes, at sizes down to
// yadif's smallest (3x3) and odd ones, for both field orders. The stage runs over the
// sequence as a caller runs it: cur as prev at the first frame, cur as next at the last.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "deinterlace_cpu.h"
#include "media_test_util.h"

namespace {

using conveyor::FrameView;
using conveyor::PixelFormat;

struct FormatCase {
  PixelFormat format;
  const char* ffmpeg_name;
};

const FormatCase kFormats[] = {{PixelFormat::kYuv420p, "yuv420p"}, {PixelFormat::kYuvj420p, "yuvj420p"},
                               {PixelFormat::kYuv422p, "yuv422p"}, {PixelFormat::kYuv444p, "yuv444p"},
                               {PixelFormat::kNv12, "nv12"}};

constexpr int kFrames = 6;

// `frames` woven frames of testsrc2 (two 50 fps frames each, the top field from the
// first), cut to w x h at an odd offset (testsrc2 renders even sizes only), as raw frames
// of `pix_fmt`.
std::string InterlacedRaw(const std::string& base, const char* pix_fmt, int w, int h, bool noise) {
  const std::string path = base + ".raw";
  const std::string graph = "testsrc2=size=" + std::to_string(w + 8) + "x" + std::to_string(h + 8) +
                            ":rate=50,format=yuv444p" + (noise ? ",noise=alls=30:allf=t+u" : "") +
                            ",tinterlace=mode=interleave_top,crop=" + std::to_string(w) + ":" + std::to_string(h) +
                            ":3:5";
  const auto s = media_test::Ffmpeg({"-f", "lavfi", "-i", graph, "-frames:v", std::to_string(kFrames), "-pix_fmt",
                                     pix_fmt, "-f", "rawvideo", path});
  EXPECT_TRUE(s.ok()) << s.ToString();
  return path;
}

std::vector<uint8_t> FfmpegYadif(const std::string& in, const char* pix_fmt, int w, int h, bool tff,
                                 const std::string& out) {
  const std::string vf = std::string("yadif=mode=0:parity=") + (tff ? "tff" : "bff") + ":deint=all";
  const auto s = media_test::Ffmpeg({"-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", std::to_string(w) + "x" +
                                     std::to_string(h), "-i", in, "-vf", vf, "-f", "rawvideo", "-pix_fmt", pix_fmt,
                                     out});
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto bytes = media_test::ReadFile(out);
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// "plane 1 at 4,7 (channel 1): ours 120, ffmpeg 118" for the first byte that differs.
std::string FirstDifference(const conveyor::DeinterlacePlan& plan, const uint8_t* ours, const uint8_t* theirs) {
  int differing = 0;
  std::string first;
  for (int p = 0; p < plan.num_planes; ++p) {
    const auto& g = plan.plane[p];
    for (int y = 0; y < g.h; ++y) {
      for (int b = 0; b < g.w * g.channels; ++b) {
        const size_t i = plan.dst_offset[p] + static_cast<size_t>(y) * plan.dst_row_bytes[p] + b;
        if (ours[i] == theirs[i]) continue;
        if (differing++ == 0) {
          first = "plane " + std::to_string(p) + " at " + std::to_string(b / g.channels) + "," + std::to_string(y) +
                  " (channel " + std::to_string(b % g.channels) + "): ours " + std::to_string(ours[i]) +
                  ", ffmpeg " + std::to_string(theirs[i]);
        }
      }
    }
  }
  return std::to_string(differing) + " bytes differ, first " + first;
}

TEST(DeinterlaceVsFfmpeg, TheStageEqualsYadifByteForByte) {
  const std::pair<int, int> sizes[] = {{3, 3}, {7, 5}, {33, 17}, {96, 58}};
  int frames_compared = 0, frames_identical = 0, sequences = 0;
  for (const FormatCase& fc : kFormats) {
    for (const auto& [w, h] : sizes) {
      for (const bool noise : {false, true}) {
        const std::string base = media_test::TempDir() + "/deint_" + fc.ffmpeg_name + "_" + std::to_string(w) + "x" +
                                 std::to_string(h) + (noise ? "_noise" : "");
        const std::string in = InterlacedRaw(base, fc.ffmpeg_name, w, h, noise);
        auto src = media_test::ReadFile(in);
        ASSERT_TRUE(src.ok()) << src.status().ToString();
        const size_t frame_size = conveyor::PackedFrameSize(fc.format, w, h);
        ASSERT_EQ(src->size(), frame_size * kFrames) << base;
        std::vector<FrameView> views;
        for (int i = 0; i < kFrames; ++i) {
          auto v = conveyor::MakePackedFrameView(src->data() + i * frame_size, frame_size, w, h, fc.format);
          ASSERT_TRUE(v.ok()) << v.status().ToString();
          views.push_back(*v);
        }
        for (const bool tff : {true, false}) {
          const std::string what = std::string(fc.ffmpeg_name) + " " + std::to_string(w) + "x" + std::to_string(h) +
                                   (noise ? " noisy" : "") + (tff ? " tff" : " bff");
          const std::vector<uint8_t> theirs =
              FfmpegYadif(in, fc.ffmpeg_name, w, h, tff, base + (tff ? "_tff" : "_bff") + ".raw");
          ASSERT_EQ(theirs.size(), frame_size * kFrames) << what;
          auto plan = conveyor::MakeDeinterlacePlan(fc.format, w, h, tff);
          ASSERT_TRUE(plan.ok()) << plan.status().ToString();
          for (int i = 0; i < kFrames; ++i) {
            const FrameView& prev = views[i > 0 ? i - 1 : i];
            const FrameView& next = views[i + 1 < kFrames ? i + 1 : i];
            std::vector<uint8_t> ours(plan->dst_size);
            const auto s = conveyor::DeinterlaceFrameOnHost(prev, views[i], next, *plan, ours.data());
            ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
            const uint8_t* want = theirs.data() + i * frame_size;
            const bool same = std::equal(ours.begin(), ours.end(), want);
            EXPECT_TRUE(same) << what << " frame " << i << ": " << FirstDifference(*plan, ours.data(), want);
            ++frames_compared;
            frames_identical += same ? 1 : 0;
          }
          ++sequences;
        }
      }
    }
  }
  std::printf("deinterlace vs ffmpeg yadif: byte-identical frames: %d of %d (%d sequences of %d frames)\n",
              frames_identical, frames_compared, sequences, kFrames);
  EXPECT_EQ(sequences, 5 * 4 * 2 * 2);
}

// The stage deinterlaces: on a woven frame of moving content the interpolated lines are
// much nearer the progressive picture at the kept field's time than cur's own lines of
// the other field are.
TEST(DeinterlaceVsFfmpeg, InterpolatedLinesFollowTheKeptFieldsPicture) {
  const int w = 160, h = 90;
  const std::string base = media_test::TempDir() + "/deint_motion";
  // testsrc2 at 50 fps, panning 3.2 samples a frame across and 0.9 down; its even
  // frames are the kept field's pictures.
  const std::string moving = "testsrc2=size=160x90:rate=50,scroll=horizontal=0.02:vertical=0.01";
  const std::string progressive = base + "_progressive.raw";
  ASSERT_TRUE(media_test::Ffmpeg({"-f", "lavfi", "-i", moving, "-frames:v", "6", "-pix_fmt", "yuv444p", "-f",
                                  "rawvideo", progressive})
                  .ok());
  const std::string woven = base + "_woven.raw";
  ASSERT_TRUE(media_test::Ffmpeg({"-f", "lavfi", "-i", moving + ",tinterlace=mode=interleave_top", "-frames:v", "3",
                                  "-pix_fmt", "yuv444p", "-f", "rawvideo", woven})
                  .ok());
  auto pictures = media_test::ReadFile(progressive);
  auto frames = media_test::ReadFile(woven);
  ASSERT_TRUE(pictures.ok() && frames.ok());
  const size_t size = conveyor::PackedFrameSize(PixelFormat::kYuv444p, w, h);
  ASSERT_EQ(frames->size(), 3 * size);
  auto view = [&](const std::vector<uint8_t>& b, int i) {
    return *conveyor::MakePackedFrameView(b.data() + i * size, size, w, h, PixelFormat::kYuv444p);
  };
  auto out = conveyor::DeinterlaceFrameToOwned(view(*frames, 0), view(*frames, 1), view(*frames, 2), true);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const FrameView truth = view(*pictures, 2);  // the kept (top) field's picture of woven frame 1
  const FrameView woven1 = view(*frames, 1);
  long ours_err = 0, woven_err = 0;
  for (int y = 1; y < h; y += 2) {
    for (int x = 0; x < w; ++x) {
      const int t = truth.plane[0][y * truth.stride[0] + x];
      ours_err += std::abs(out->view.plane[0][y * out->view.stride[0] + x] - t);
      woven_err += std::abs(woven1.plane[0][y * woven1.stride[0] + x] - t);
    }
  }
  std::printf("odd luma lines against the picture: deinterlaced %ld, woven %ld (sum of |error|)\n", ours_err,
              woven_err);
  EXPECT_LT(ours_err * 2, woven_err);
}

}  // namespace

// The orientation stage and the display matrix against the ffmpeg CLI:
//  - the host stage gives byte for byte what FFmpeg's transpose, hflip and vflip filters
//    give on the same raw frame, for each orientation, format and odd size;
//  - a MOV written with each of the eight orientations (ContainerMuxer, FFmpeg's mov
//    muxer) is read back by our decoder as the same orientation, and the CLI's own
//    autorotate of its first frame equals our stage applied to the unrotated decode of it
//    (-noautorotate): the same choice of filters as the CLI makes;
//  - files tagged with `-metadata:s:v rotate=N` read as the CLI's turn.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cpu_encoder.h"
#include "display_orientation.h"
#include "media_test_util.h"
#include "muxer.h"
#include "orient_cpu.h"

namespace {

using conveyor::ExifOrientation;
using conveyor::FrameView;
using conveyor::Orientation;
using conveyor::OrientationFromExif;
using conveyor::OrientationName;
using conveyor::PixelFormat;
using conveyor::media::DisplayOrientationOf;

// The filter chain the CLI's autorotate inserts for each EXIF orientation.
const char* const kFilters[9] = {"",      "null",  "hflip", "hflip,vflip", "vflip", "transpose=cclock_flip",
                                 "transpose=clock", "transpose=clock_flip", "transpose=cclock"};

struct FormatCase {
  PixelFormat format;
  const char* ffmpeg_name;
};

// Runs ffmpeg on a raw frame and returns the raw output.
std::vector<uint8_t> FfmpegRaw(const std::string& in, const char* pix_fmt, int w, int h, const std::string& vf,
                               const std::string& out) {
  const auto s = media_test::Ffmpeg({"-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", std::to_string(w) + "x" +
                                     std::to_string(h), "-i", in, "-vf", vf, "-f", "rawvideo", "-pix_fmt",
                                     pix_fmt, out});
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto bytes = media_test::ReadFile(out);
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

TEST(OrientationVsFfmpeg, TheStageEqualsTheCliFiltersByteForByte) {
  // yuv422p is left out: FFmpeg's transpose takes only formats whose chroma is subsampled
  // alike both ways, and converts 4:2:2 first (the stage's own choice is in unit tests).
  const FormatCase formats[] = {{PixelFormat::kYuv420p, "yuv420p"}, {PixelFormat::kNv12, "nv12"},
                                {PixelFormat::kYuv444p, "yuv444p"}, {PixelFormat::kRgb24, "rgb24"},
                                {PixelFormat::kBgra, "bgra"}};
  int compared = 0;
  for (const FormatCase& fc : formats) {
    for (const auto& [w, h] : {std::make_pair(33, 17), std::make_pair(64, 47)}) {
      const std::string base = media_test::TempDir() + "/orient_" + fc.ffmpeg_name + "_" + std::to_string(w) + "x" +
                               std::to_string(h);
      // testsrc2 renders even sizes only: an odd one is cropped out of a larger picture.
      const std::string source = media_test::TestSource(80, 60) + ",format=yuv444p,crop=" + std::to_string(w) + ":" +
                                 std::to_string(h) + ":3:5";
      ASSERT_TRUE(media_test::Ffmpeg({"-f", "lavfi", "-i", source, "-frames:v", "1", "-pix_fmt", fc.ffmpeg_name, "-f",
                                      "rawvideo", base + ".raw"})
                      .ok());
      auto src = media_test::ReadFile(base + ".raw");
      ASSERT_TRUE(src.ok());
      auto view = conveyor::MakePackedFrameView(src->data(), src->size(), w, h, fc.format);
      ASSERT_TRUE(view.ok()) << view.status().ToString();
      for (int e = 2; e <= 8; ++e) {
        auto ours = conveyor::OrientFrameToOwned(*view, OrientationFromExif(e));
        ASSERT_TRUE(ours.ok()) << ours.status().ToString();
        const std::vector<uint8_t> theirs =
            FfmpegRaw(base + ".raw", fc.ffmpeg_name, w, h, kFilters[e], base + "_" + std::to_string(e) + ".raw");
        EXPECT_EQ(ours->bytes, theirs) << fc.ffmpeg_name << " " << w << "x" << h << " " << kFilters[e];
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, 5 * 2 * 7);
}

// An MJPEG MOV of one testsrc2 frame at 64x48, its display matrix for `o`.
std::string MovWithOrientation(Orientation o) {
  const std::string path = media_test::TempDir() + "/oriented_" + std::to_string(ExifOrientation(o)) + ".mov";
  const int w = 64, h = 48;
  const std::string raw = media_test::TempDir() + "/oriented_src.raw";
  EXPECT_TRUE(media_test::Ffmpeg({"-f", "lavfi", "-i", media_test::TestSource(w, h), "-frames:v", "1", "-pix_fmt",
                                  "yuv420p", "-f", "rawvideo", raw})
                  .ok());
  auto bytes = media_test::ReadFile(raw);
  auto view = conveyor::MakePackedFrameView(bytes->data(), bytes->size(), w, h, PixelFormat::kYuv420p);
  conveyor::CpuJpegEncoder encoder(1);
  auto jpeg = encoder.Encode(*view, conveyor::EncodeParams{});
  EXPECT_TRUE(jpeg.ok());
  std::vector<uint8_t> out;
  conveyor::media::MuxerOptions mo;
  mo.format = conveyor::media::ContainerFormat::kMov;
  mo.width = w;
  mo.height = h;
  mo.time_base = {1, 25};
  mo.frame_rate = {25, 1};
  mo.orientation = o;
  auto muxer = conveyor::media::ContainerMuxer::Open(mo, [&](const uint8_t* d, size_t n) {
    out.insert(out.end(), d, d + n);
    return conveyor::OkStatus();
  });
  EXPECT_TRUE(muxer.ok()) << muxer.status().ToString();
  EXPECT_TRUE((*muxer)->WriteVideo(jpeg->data(), jpeg->size(), 0).ok());
  EXPECT_TRUE((*muxer)->Finish().ok());
  EXPECT_TRUE(media_test::WriteFile(path, out).ok());
  return path;
}

TEST(OrientationVsFfmpeg, EachDisplayMatrixIsTurnedAsTheCliAutorotates) {
  for (int e = 1; e <= 8; ++e) {
    const Orientation o = OrientationFromExif(e);
    const std::string mov = MovWithOrientation(o);
    const media_test::DecodeRun run = media_test::DecodeFile(mov);
    ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    EXPECT_EQ(ExifOrientation(run.video.orientation), e) << "read back " << OrientationName(run.video.orientation);
    // The CLI: autorotated, and as stored; our stage turns the latter as we read the matrix.
    const std::string turned = mov + ".cli.raw", stored = mov + ".stored.raw";
    // In the decoder's own format: a conversion before the turn on one side and after it
    // on the other would place chroma differently.
    ASSERT_TRUE(media_test::Ffmpeg({"-i", mov, "-frames:v", "1", "-pix_fmt", "yuvj420p", "-f", "rawvideo", turned}).ok());
    ASSERT_TRUE(media_test::Ffmpeg({"-noautorotate", "-i", mov, "-frames:v", "1", "-pix_fmt", "yuvj420p", "-f",
                                    "rawvideo", stored})
                    .ok());
    auto cli = media_test::ReadFile(turned);
    auto plain = media_test::ReadFile(stored);
    ASSERT_TRUE(cli.ok() && plain.ok());
    auto view = conveyor::MakePackedFrameView(plain->data(), plain->size(), 64, 48, PixelFormat::kYuvj420p);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    auto ours = conveyor::OrientFrameToOwned(*view, run.video.orientation);
    ASSERT_TRUE(ours.ok());
    EXPECT_EQ(ours->bytes, *cli) << "EXIF " << e << " (" << OrientationName(o) << ")";
  }
}

TEST(OrientationVsFfmpeg, RotateTagsReadAsTheCliTurns) {
  if (!media_test::HasEncoder("libx264")) GTEST_SKIP() << "this ffmpeg has no libx264 encoder";
  auto plain = media_test::MakeMedia("orient_plain.mp4", media_test::TestSource(64, 48),
                                     {"-frames:v", "2", "-c:v", "libx264", "-movflags", "faststart"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  // rotate=N is the counter-clockwise angle in FFmpeg 5.1's mov muxer: 90 displays turned 270 clockwise.
  const std::pair<const char*, int> cases[] = {{"90", 8}, {"180", 3}, {"270", 6}};
  for (const auto& [tag, exif] : cases) {
    const std::string out = media_test::TempDir() + "/orient_rot" + tag + ".mp4";
    ASSERT_TRUE(media_test::Ffmpeg({"-i", *plain, "-c", "copy", "-metadata:s:v", std::string("rotate=") + tag,
                                    "-movflags", "faststart", out})
                    .ok());
    const media_test::DecodeRun run = media_test::DecodeFile(out);
    ASSERT_TRUE(run.status.ok()) << run.status.ToString();
    EXPECT_EQ(ExifOrientation(run.video.orientation), exif) << "rotate=" << tag;
  }
}

TEST(DisplayOrientation, EveryOrientationsMatrixReadsBack) {
  for (int e = 1; e <= 8; ++e) {
    int32_t m[9];
    conveyor::media::DisplayMatrixOf(OrientationFromExif(e), m);
    const auto d = DisplayOrientationOf(reinterpret_cast<const uint8_t*>(m), sizeof m);
    EXPECT_EQ(ExifOrientation(d.orientation), e);
    EXPECT_FALSE(d.odd_angle);
  }
  EXPECT_TRUE(DisplayOrientationOf(nullptr, 0).orientation.identity());
}

}  // namespace

// End-to-end: the colours of container input that signals no YCbCr matrix. Lossless
// H.264 clips of one testsrc2 frame, one untagged and one tagged BT.709, go through the
// real conveyord; libjpeg-turbo decodes the JPEGs to RGB, which is compared with the
// source's own RGB (the lavfi frame before any conversion: testsrc2 renders in the
// format its sink asks for, so format=rgb24 pins one rendering for all three files). The ffmpeg CLI's JPEG of the
// untagged clip is held to the same reference, so a difference in the assumed matrix
// shows as a gap between the two.
#include <turbojpeg.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"
#include "transcode_client.h"

namespace conveyor::e2e {
namespace {

constexpr int kWidth = 1280, kHeight = 720;  // HD: where a size-based guess says BT.709

struct Rgb {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;
};

Rgb DecodeToRgb(const std::vector<uint8_t>& jpeg) {
  Rgb out;
  tjhandle tj = tjInitDecompress();
  int subsamp = 0, colorspace = 0;
  if (tj != nullptr &&
      tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &out.width, &out.height, &subsamp, &colorspace) == 0) {
    out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);
    if (tjDecompress2(tj, jpeg.data(), jpeg.size(), out.pixels.data(), out.width, 0, out.height, TJPF_RGB, 0) != 0) {
      out.pixels.clear();
    }
  }
  if (tj != nullptr) tjDestroy(tj);
  return out;
}

double Psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size() || a.empty()) return -1;
  double sse = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    sse += d * d;
  }
  const double mse = sse / static_cast<double>(a.size());
  return mse == 0 ? 99 : 10 * std::log10(255.0 * 255.0 / mse);
}

class ColorDefaultsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(MakeTempDir());
    const std::string src = "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=" + std::to_string(kWidth) + "x" +
                            std::to_string(kHeight) + ":rate=25,format=rgb24 -frames:v 1 ";
    const std::string lossless = "-c:v libx264 -qp 0 -preset ultrafast -pix_fmt yuv444p ";
    ok_ = Shell(src + "-f rawvideo -pix_fmt rgb24 " + *dir_ + "/source.rgb") == 0 &&
          Shell(src + lossless + *dir_ + "/untagged.mkv") == 0 &&
          Shell(src + "-vf scale=out_color_matrix=bt709 " + lossless +
                "-colorspace bt709 -color_primaries bt709 -color_trc bt709 " + *dir_ + "/bt709.mkv") == 0 &&
          Shell("ffmpeg -loglevel error -y -i " + *dir_ + "/untagged.mkv -frames:v 1 -q:v 1 " + *dir_ +
                "/ffmpeg_untagged.jpg") == 0;
  }
  static void TearDownTestSuite() {
    Shell("rm -rf " + *dir_);
    delete dir_;
  }

  void SetUp() override { ASSERT_TRUE(ok_) << "ffmpeg could not make the clips in " << *dir_; }

  static std::string Path(const std::string& name) { return *dir_ + "/" + name; }

  // The clip through `daemon` at quality 100, 4:4:4, decoded to RGB.
  static Rgb Transcode(DaemonProcess& daemon, const std::string& clip) {
    std::unique_ptr<v1::Transcoder::Stub> stub = v1::Transcoder::NewStub(daemon.Channel());
    TranscodeCall call;
    call.spec.mutable_container()->set_format_hint("matroska");
    v1::RenditionSpec* r = call.spec.add_renditions();
    r->set_quality(100);
    r->set_subsampling(v1::SUBSAMPLING_444);
    call.send_input = [clip](TranscodeStream* s) { return SendFileChunks(s, Path(clip)); };
    const TranscodeOutcome out = RunTranscode(stub.get(), call);
    EXPECT_TRUE(out.status.ok()) << clip << ": " << out.status.error_message();
    if (!out.status.ok() || out.frames.count(0) == 0 || out.frames.at(0).size() != 1) return {};
    return DecodeToRgb(out.frames.at(0)[0]);
  }

  static inline std::string* dir_ = nullptr;
  static inline bool ok_ = false;
};

// The default (color.untagged_matrix = bt601) reads an untagged clip as FFmpeg does, and
// a tagged clip by its tag.
TEST_F(ColorDefaultsTest, UntaggedAndTaggedClipsMatchTheSourceRgb) {
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  const std::vector<uint8_t> source = ReadFile(Path("source.rgb"));
  ASSERT_EQ(source.size(), static_cast<size_t>(kWidth) * kHeight * 3);

  const Rgb untagged = Transcode(daemon, "untagged.mkv");
  const Rgb tagged = Transcode(daemon, "bt709.mkv");
  const Rgb ffmpeg = DecodeToRgb(ReadFile(Path("ffmpeg_untagged.jpg")));
  const double untagged_db = Psnr(untagged.pixels, source);
  const double tagged_db = Psnr(tagged.pixels, source);
  const double ffmpeg_db = Psnr(ffmpeg.pixels, source);
  std::printf("RGB PSNR against the source: untagged %.2f dB, BT.709-tagged %.2f dB; ffmpeg CLI's JPEG of the "
              "untagged clip %.2f dB\n",
              untagged_db, tagged_db, ffmpeg_db);
  // A wrong matrix costs about 20 dB here (24 dB against 44 dB, mostly in green).
  EXPECT_GE(untagged_db, 40);
  EXPECT_GE(tagged_db, 40);
  EXPECT_GE(ffmpeg_db, 35) << "the ffmpeg CLI's own JPEG disagrees with the source: the reference is off";
  EXPECT_EQ(daemon.Stop(), 0);
}

// color.untagged_matrix = by-size keeps the size-based guess: BT.709 for an untagged HD
// clip, which then differs from FFmpeg's reading (the tagged clip is unaffected).
TEST_F(ColorDefaultsTest, BySizeGuessesBt709ForUntaggedHd) {
  DaemonProcess daemon({"--untagged-matrix", "by-size"});
  ASSERT_TRUE(daemon.ready());
  const std::vector<uint8_t> source = ReadFile(Path("source.rgb"));
  const double untagged_db = Psnr(Transcode(daemon, "untagged.mkv").pixels, source);
  const double tagged_db = Psnr(Transcode(daemon, "bt709.mkv").pixels, source);
  std::printf("by-size: untagged %.2f dB, BT.709-tagged %.2f dB\n", untagged_db, tagged_db);
  EXPECT_GT(untagged_db, 0);
  EXPECT_LT(untagged_db, 30);
  EXPECT_GE(tagged_db, 40);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace conveyor::e2e

// ContainerDecoder against real files rendered by the ffmpeg CLI: each accepted codec the
// installed ffmpeg can encode, the usual containers, timestamps (VFR included), rotation,
// audio selection, and the ways an input goes wrong: moov at the end, garbage, truncation,
// cancellation, a refused codec and a playlist that points elsewhere.
#include "demux_decoder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <random>
#include <sstream>
#include <thread>

#include "frame_convert.h"
#include "media_test_util.h"

extern "C" {
#include <libavutil/pixdesc.h>
}

namespace {

using conveyor::ColorRange;
using conveyor::OkStatus;
using conveyor::PixelFormat;
using conveyor::Status;
using conveyor::StatusCode;
using conveyor::StatusOr;
using conveyor::media::ByteQueue;
using conveyor::media::ContainerDecoder;
using conveyor::media::ConvertPath;
using conveyor::media::DecodedFrame;
using conveyor::media::DecoderOptions;
using conveyor::media::FrameConverter;
using media_test::DecodeFile;
using media_test::DecodeRun;
using media_test::DecodeSetup;
using media_test::HasEncoder;
using media_test::MakeMedia;
using media_test::TestSource;
using namespace std::chrono_literals;

constexpr int kFrames = 10;

// Frames are 1/25 s apart, whatever the container's time base or start offset.
void ExpectSteady25Fps(const DecodeRun& run) {
  ASSERT_FALSE(run.frames.empty());
  const double t0 = run.frames[0].seconds;
  for (size_t i = 0; i < run.frames.size(); ++i) {
    EXPECT_NEAR(run.frames[i].seconds - t0, static_cast<double>(i) / 25.0, 1e-3) << "frame " << i;
  }
}

// ---------------------------------------------------------------------------------------
// Every accepted codec that this ffmpeg can encode.

struct CodecCase {
  const char* name;
  const char* encoder;
  const char* file;  // its extension picks the container
  std::vector<std::string> args;
  const char* codec;           // VideoStreamInfo::codec
  AVPixelFormat decoded;       // the decoder's output format
  ConvertPath path;            // how FrameConverter maps it
  PixelFormat encoder_format;  // what the encoder gets
  ColorRange range;
};

std::ostream& operator<<(std::ostream& os, const CodecCase& c) { return os << c.name; }

class DecodeCodec : public ::testing::TestWithParam<CodecCase> {};

TEST_P(DecodeCodec, DecodesEveryFrameWithTimingAndFormat) {
  const CodecCase& c = GetParam();
  if (!HasEncoder(c.encoder)) GTEST_SKIP() << "this ffmpeg has no " << c.encoder << " encoder";
  std::vector<std::string> args = {"-frames:v", std::to_string(kFrames), "-c:v", c.encoder};
  args.insert(args.end(), c.args.begin(), c.args.end());
  auto path = MakeMedia(c.file, TestSource(), args);
  ASSERT_TRUE(path.ok()) << path.status().ToString();

  FrameConverter converter;
  int checked = 0;
  DecodeSetup setup;
  setup.options.threads = 2;
  setup.on_frame = [&](ContainerDecoder&, DecodedFrame& f) -> Status {
    ASSIGN_OR_RETURN(auto mapped, converter.Convert(*f.frame));
    EXPECT_EQ(mapped.path, c.path);
    EXPECT_EQ(mapped.view.format, c.encoder_format);
    EXPECT_EQ(mapped.view.EffectiveRange(), c.range);
    EXPECT_EQ(mapped.view.width, 320);
    if (c.path == ConvertPath::kPassThrough) {
      EXPECT_EQ(mapped.view.plane[0], f.frame->data[0]);  // no copy
    }
    ++checked;
    return OkStatus();
  };
  const DecodeRun run = DecodeFile(*path, setup);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_EQ(run.video.codec, c.codec);
  EXPECT_EQ(run.video.width, 320);
  EXPECT_EQ(run.video.height, 240);
  EXPECT_NEAR(av_q2d(run.video.frame_rate), 25.0, 0.01);
  ASSERT_EQ(run.frames.size(), static_cast<size_t>(kFrames));
  EXPECT_EQ(checked, kFrames);
  for (const auto& f : run.frames) {
    EXPECT_EQ(f.width, 320);
    EXPECT_EQ(f.height, 240);
    EXPECT_EQ(f.format, c.decoded) << av_get_pix_fmt_name(f.format);
  }
  ExpectSteady25Fps(run);
  std::printf("[ %s ] %s in %s, decoder %s, %s, %s\n", c.name, run.video.codec.c_str(),
              run.video.container.c_str(), run.video.decoder.c_str(),
              av_get_pix_fmt_name(run.frames[0].format), conveyor::media::ConvertPathName(c.path));
}

const std::vector<std::string> kX265Quiet = {"-preset", "ultrafast", "-x265-params", "log-level=error"};

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

CodecCase Case(const char* name, const char* encoder, const char* file, std::vector<std::string> args,
               const char* codec, AVPixelFormat decoded, ConvertPath path, PixelFormat encoder_format,
               ColorRange range = ColorRange::kLimited) {
  return CodecCase{name, encoder, file, std::move(args), codec, decoded, path, encoder_format, range};
}

const std::vector<std::string> kFaststart = {"-movflags", "faststart"};
constexpr ConvertPath kPass = ConvertPath::kPassThrough;
constexpr ConvertPath kConv = ConvertPath::kConverted;

INSTANTIATE_TEST_SUITE_P(
    Codecs, DecodeCodec,
    ::testing::Values(
        Case("h264", "libx264", "h264.mp4", Concat({"-preset", "ultrafast"}, kFaststart), "h264",
             AV_PIX_FMT_YUV420P, kPass, PixelFormat::kYuv420p),
        Case("hevc_8bit", "libx265", "hevc8.mkv", kX265Quiet, "hevc", AV_PIX_FMT_YUV420P, kPass,
             PixelFormat::kYuv420p),
        Case("hevc_10bit", "libx265", "hevc10.mkv", Concat({"-pix_fmt", "yuv420p10le"}, kX265Quiet), "hevc",
             AV_PIX_FMT_YUV420P10LE, kConv, PixelFormat::kYuv420p),
        Case("vp9", "libvpx-vp9", "vp9.webm", {"-deadline", "realtime", "-cpu-used", "8"}, "vp9",
             AV_PIX_FMT_YUV420P, kPass, PixelFormat::kYuv420p),
        Case("av1_libaom", "libaom-av1", "av1_aom.mkv", {"-cpu-used", "8", "-usage", "realtime"}, "av1",
             AV_PIX_FMT_YUV420P, kPass, PixelFormat::kYuv420p),
        Case("av1_svt", "libsvtav1", "av1_svt.webm", {"-preset", "12"}, "av1", AV_PIX_FMT_YUV420P, kPass,
             PixelFormat::kYuv420p),
        Case("mpeg2", "mpeg2video", "mpeg2.ts", {}, "mpeg2video", AV_PIX_FMT_YUV420P, kPass,
             PixelFormat::kYuv420p),
        Case("prores_422", "prores_ks", "prores422.mov", Concat({"-profile:v", "0"}, kFaststart), "prores",
             AV_PIX_FMT_YUV422P10LE, kConv, PixelFormat::kYuv422p),
        Case("prores_4444", "prores_ks", "prores4444.mov",
             Concat({"-profile:v", "4", "-pix_fmt", "yuv444p10le"}, kFaststart), "prores",
             AV_PIX_FMT_YUV444P12LE, kConv, PixelFormat::kYuv444p),
        Case("mjpeg_420", "mjpeg", "mjpeg420.avi", {"-pix_fmt", "yuvj420p"}, "mjpeg", AV_PIX_FMT_YUVJ420P,
             kPass, PixelFormat::kYuvj420p, ColorRange::kFull),
        Case("mjpeg_422", "mjpeg", "mjpeg422.avi", {"-pix_fmt", "yuvj422p"}, "mjpeg", AV_PIX_FMT_YUVJ422P,
             kPass, PixelFormat::kYuv422p, ColorRange::kFull)),
    [](const ::testing::TestParamInfo<CodecCase>& p) { return std::string(p.param.name); });

// ---------------------------------------------------------------------------------------
// Containers: H.264 in each (VP9 for WebM, which takes nothing older).

struct ContainerCase {
  const char* name;
  const char* file;
  std::vector<std::string> args;
  const char* demuxer;  // VideoStreamInfo::container
};

std::ostream& operator<<(std::ostream& os, const ContainerCase& c) { return os << c.name; }

class DecodeContainer : public ::testing::TestWithParam<ContainerCase> {};

TEST_P(DecodeContainer, DemuxesAndDecodesEveryFrame) {
  const ContainerCase& c = GetParam();
  const char* encoder = std::string(c.file).find(".webm") != std::string::npos ? "libvpx-vp9" : "libx264";
  if (!HasEncoder(encoder)) GTEST_SKIP() << "this ffmpeg has no " << encoder << " encoder";
  std::vector<std::string> args = {"-frames:v", std::to_string(kFrames), "-c:v", encoder};
  args.insert(args.end(), c.args.begin(), c.args.end());
  auto path = MakeMedia(c.file, TestSource(), args);
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const DecodeRun run = DecodeFile(*path);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_EQ(run.video.container, c.demuxer);
  ASSERT_EQ(run.frames.size(), static_cast<size_t>(kFrames));
  ExpectSteady25Fps(run);
}

INSTANTIATE_TEST_SUITE_P(
    Containers, DecodeContainer,
    ::testing::Values(ContainerCase{"mp4_faststart",
                                    "c.mp4",
                                    {"-preset", "ultrafast", "-movflags", "faststart"},
                                    "mov,mp4,m4a,3gp,3g2,mj2"},
                      ContainerCase{"mov_fragmented",
                                    "c.mov",
                                    {"-preset", "ultrafast", "-movflags", "frag_keyframe+empty_moov"},
                                    "mov,mp4,m4a,3gp,3g2,mj2"},
                      ContainerCase{"matroska", "c.mkv", {"-preset", "ultrafast"}, "matroska,webm"},
                      ContainerCase{"avi", "c.avi", {"-preset", "ultrafast"}, "avi"},
                      ContainerCase{"mpegts", "c.ts", {"-preset", "ultrafast"}, "mpegts"},
                      ContainerCase{
                          "webm", "c.webm", {"-deadline", "realtime", "-cpu-used", "8"}, "matroska,webm"}),
    [](const ::testing::TestParamInfo<ContainerCase>& p) { return std::string(p.param.name); });

StatusOr<std::string> H264(const std::string& name, const std::vector<std::string>& extra = {},
                           const std::vector<std::string>& extra_inputs = {}) {
  std::vector<std::string> args = {"-frames:v", std::to_string(kFrames), "-c:v", "libx264", "-preset",
                                   "ultrafast"};
  args.insert(args.end(), extra.begin(), extra.end());
  return MakeMedia(name, TestSource(), args, extra_inputs);
}

#define REQUIRE_X264()                                                                \
  do {                                                                                \
    if (!HasEncoder("libx264")) GTEST_SKIP() << "this ffmpeg has no libx264 encoder"; \
  } while (0)

TEST(Decoder, FormatHintSkipsProbing) {
  REQUIRE_X264();
  auto path = H264("hint.ts");
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  DecodeSetup setup;
  setup.options.format = "mpegts";
  const DecodeRun run = DecodeFile(*path, setup);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_EQ(run.frames.size(), static_cast<size_t>(kFrames));

  setup.options.format = "no-such-format";
  const DecodeRun bad = DecodeFile(*path, setup);
  EXPECT_EQ(bad.status.code(), StatusCode::kInvalidArgument) << bad.status.ToString();
}

// ---------------------------------------------------------------------------------------
// Timestamps, rotation, audio.

TEST(Decoder, PreservesVariableFrameRateTimestamps) {
  REQUIRE_X264();
  // Frame i at i*40 ms plus 25 ms for every third frame before it: irregular gaps.
  auto path = H264("vfr.mkv", {"-frames:v", "12", "-vf", "settb=1/1000,setpts=N*40+floor(N/3)*25",
                               "-fps_mode", "vfr", "-enc_time_base", "1:1000"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const DecodeRun run = DecodeFile(*path);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  ASSERT_EQ(run.frames.size(), 12u);
  EXPECT_EQ(run.video.time_base.num, 1);
  EXPECT_EQ(run.video.time_base.den, 1000);
  for (size_t i = 0; i < run.frames.size(); ++i) {
    const int64_t expected_ms = static_cast<int64_t>(i) * 40 + static_cast<int64_t>(i / 3) * 25;
    EXPECT_EQ(run.frames[i].pts, expected_ms) << "frame " << i;
    EXPECT_NEAR(run.frames[i].seconds, expected_ms / 1000.0, 1e-9);
  }
}

// FFmpeg 5.1's CLI turns "-metadata:s:v rotate=N" on a stream copy into a display matrix
// that FFmpeg's own autorotate applies as N degrees counter-clockwise (checked: it turns
// testsrc2's top-left corner to the bottom-left), i.e. 360-N clockwise. The decoder reports
// the clockwise rotation a player applies, so rotate=90 reads as 270.
TEST(Decoder, ReadsRotationFromTheDisplayMatrix) {
  REQUIRE_X264();
  auto plain = H264("plain.mp4", {"-movflags", "faststart"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  const std::pair<const char*, int> cases[] = {{"90", 270}, {"270", 90}, {"180", 180}};
  for (const auto& [tag, clockwise] : cases) {
    for (const char* ext : {".mp4", ".mov"}) {
      const std::string out = media_test::TempDir() + "/rot" + tag + ext;
      ASSERT_TRUE(media_test::Ffmpeg({"-i", *plain, "-c", "copy", "-metadata:s:v",
                                      std::string("rotate=") + tag, "-movflags", "faststart", out})
                      .ok());
      const DecodeRun run = DecodeFile(out);
      ASSERT_TRUE(run.status.ok()) << run.status.ToString();
      EXPECT_EQ(run.video.rotation_degrees, clockwise) << "rotate=" << tag << " in " << ext;
      ASSERT_FALSE(run.frames.empty());
      EXPECT_EQ(run.frames[0].rotation_degrees, clockwise);
    }
  }
  const DecodeRun none = DecodeFile(*plain);
  ASSERT_TRUE(none.status.ok());
  EXPECT_EQ(none.video.rotation_degrees, 0);
}

TEST(Decoder, SurfacesAudioPacketsOnlyWhenAsked) {
  REQUIRE_X264();
  auto path = H264("av.mkv", {"-map", "0:v", "-map", "1:a", "-c:a", "aac"},
                   {"sine=frequency=440:sample_rate=48000:duration=0.4"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto streams = media_test::ProbeStreams(*path);
  ASSERT_TRUE(streams.ok()) << streams.status().ToString();
  ASSERT_EQ(streams->size(), 2u);
  const int audio_packets = std::stoi(streams->at(1).at("nb_read_packets"));
  ASSERT_GT(audio_packets, 0);

  DecodeSetup with_audio;
  with_audio.options.audio = true;
  const DecodeRun run = DecodeFile(*path, with_audio);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_EQ(run.audio_codec, "aac");
  EXPECT_EQ(run.audio_packets, audio_packets);
  EXPECT_EQ(run.frames.size(), static_cast<size_t>(kFrames));

  const DecodeRun without = DecodeFile(*path);
  ASSERT_TRUE(without.status.ok()) << without.status.ToString();
  EXPECT_TRUE(without.audio_codec.empty());
  EXPECT_EQ(without.audio_packets, 0);
}

// ---------------------------------------------------------------------------------------
// Inputs that cannot be decoded.

// Without random access or a spool (DecoderOptions' defaults); random_access_test.cpp
// decodes the same layout both ways.
TEST(Decoder, RefusesMoovAtEndEarlyWithAdvice) {
  REQUIRE_X264();
  // ffmpeg writes moov after mdat unless asked for faststart. Noise makes the file big
  // enough (> 1 MB) to show that the refusal comes after a few bytes, not the whole file.
  auto path = MakeMedia("moov_at_end.mp4", TestSource() + ",noise=alls=40:allf=t",
                        {"-frames:v", "25", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  ASSERT_GT(data->size(), 1000000u);

  DecodeSetup setup;
  setup.queue_bytes = 256 * 1024;
  const DecodeRun run = media_test::Decode(*data, setup);
  EXPECT_EQ(run.status.code(), StatusCode::kFailedPrecondition) << run.status.ToString();
  EXPECT_NE(
      run.status.message().find("moov atom at end; send the input with ContainerInput.seekable, remux with "
                                "-movflags faststart, or enable limits.input_spool_bytes"),
      std::string::npos)
      << run.status.ToString();
  EXPECT_FALSE(run.opened);
  EXPECT_LE(run.queue_peak, setup.queue_bytes);

  // The same file after a faststart remux decodes.
  const std::string fixed = media_test::TempDir() + "/moov_first.mp4";
  ASSERT_TRUE(media_test::Ffmpeg({"-i", *path, "-c", "copy", "-movflags", "faststart", fixed}).ok());
  const DecodeRun ok = DecodeFile(fixed);
  ASSERT_TRUE(ok.status.ok()) << ok.status.ToString();
  EXPECT_EQ(ok.frames.size(), 25u);
}

TEST(Decoder, GarbageIsACleanError) {
  std::mt19937 rng(7);
  std::vector<uint8_t> garbage(200 * 1024);
  for (auto& b : garbage) b = static_cast<uint8_t>(rng());
  const DecodeRun run = media_test::Decode(garbage);
  EXPECT_FALSE(run.status.ok());
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument) << run.status.ToString();
  EXPECT_TRUE(run.frames.empty());
  std::printf("garbage: %s\n", run.status.ToString().c_str());

  const DecodeRun empty = media_test::Decode({});
  EXPECT_EQ(empty.status.code(), StatusCode::kInvalidArgument) << empty.status.ToString();
}

// Peak resident memory of this process (VmHWM). Each test runs in its own process
// (gtest_discover_tests), so the peak before a decode is the test's own baseline.
int64_t PeakRssBytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return -1;
  char line[256];
  int64_t kb = -1;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb * 1024;
}

// Two black 7680x4320 H.264 frames: a few KB of file whose pictures are 50 MB each.
StatusOr<std::string> HugeClip() {
  return MakeMedia("huge.mkv", "color=black:size=7680x4320:rate=25",
                   {"-frames:v", "2", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"});
}
constexpr int64_t kPictureBytes = 7680 * 4320 * 3 / 2;

TEST(Decoder, APictureOverMaxPixelsIsRefusedBeforeItIsAllocated) {
  REQUIRE_X264();
  auto path = HugeClip();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  DecodeSetup setup;
  setup.options.max_pixels = 3840 * 2160;
  const int64_t before = PeakRssBytes();
  const DecodeRun run = DecodeFile(*path, setup);
  const int64_t grew = PeakRssBytes() - before;
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument) << run.status.ToString();
  EXPECT_NE(run.status.message().find("7680x4320"), std::string::npos) << run.status.ToString();
  EXPECT_TRUE(run.frames.empty());
  // Probing an 8K header costs FFmpeg about 20 MiB of tables; one picture is 47 MiB.
  EXPECT_LT(grew, kPictureBytes) << "peak RSS grew " << grew << " bytes: a picture was allocated";
  std::printf("refused: %s; peak RSS grew %.1f MiB\n", run.status.ToString().c_str(), grew / 1048576.0);
}

// The control: without the bound the same clip decodes, and the peak shows its pictures.
// Were it not so, the test above could not fail.
TEST(Decoder, WithoutMaxPixelsTheHugeClipIsDecodedAndItsPicturesAllocated) {
  REQUIRE_X264();
  auto path = HugeClip();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const int64_t before = PeakRssBytes();
  const DecodeRun run = DecodeFile(*path);
  const int64_t grew = PeakRssBytes() - before;
  EXPECT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_EQ(run.frames.size(), 2u);
  EXPECT_GT(grew, 2 * kPictureBytes) << "peak RSS grew only " << grew << " bytes";
  std::printf("decoded: peak RSS grew %.1f MiB\n", grew / 1048576.0);
}

// Random bytes over the middle third: the decoder delivers exactly the frames that
// ffprobe (the same libraries, reading the file) decodes from the same bytes, in order
// and 1/25 s apart, and at least every frame whose packet lies wholly before the damage.
TEST(Decoder, CorruptedMiddleGivesTheFramesFfprobeDecodes) {
  REQUIRE_X264();
  auto path = H264("corrupt.mkv");
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  const size_t damage_from = data->size() / 3;
  std::mt19937 rng(11);
  for (size_t i = damage_from; i < data->size() * 2 / 3; ++i) (*data)[i] = static_cast<uint8_t>(rng());
  const std::string corrupted = media_test::TempDir() + "/corrupted.mkv";
  ASSERT_TRUE(media_test::WriteFile(corrupted, *data).ok());
  auto probed = media_test::ProbeStreams(corrupted);
  ASSERT_TRUE(probed.ok()) << probed.status().ToString();
  ASSERT_EQ(probed->size(), 1u);
  const size_t ffprobe_frames = std::stoul(probed->at(0).at("nb_read_frames"));
  // The intact packets, from the undamaged file's packet offsets and sizes.
  auto packets = media_test::Ffprobe({"-select_streams", "v:0", "-show_entries", "packet=pos,size", "-of",
                                      "csv=p=0", *path});
  ASSERT_TRUE(packets.ok()) << packets.status().ToString();
  size_t intact = 0;
  std::istringstream lines(*packets);
  for (std::string line; std::getline(lines, line);) {
    size_t pos = 0, size = 0;
    if (std::sscanf(line.c_str(), "%zu,%zu", &pos, &size) == 2 && pos + size <= damage_from) ++intact;
  }
  ASSERT_GT(intact, 0u) << "the damage starts before the first packet ends: nothing to check";

  const DecodeRun run = media_test::Decode(*data);
  if (!run.status.ok()) {
    EXPECT_EQ(run.status.message().rfind("av", 0), 0u) << "the error names the call: " << run.status.ToString();
  }
  EXPECT_EQ(run.frames.size(), ffprobe_frames) << run.status.ToString();
  EXPECT_GE(run.frames.size(), intact);
  EXPECT_LT(run.frames.size(), static_cast<size_t>(kFrames));
  ExpectSteady25Fps(run);
  std::printf("corrupted middle: %zu frames (ffprobe %zu, %zu packets intact), %s\n", run.frames.size(),
              ffprobe_frames, intact, run.status.ToString().c_str());
}

TEST(Decoder, TruncatedInputEndsEarlyWithoutCrashing) {
  REQUIRE_X264();
  for (const char* name : {"trunc.mkv", "trunc.mp4", "trunc.ts"}) {
    auto path = H264(name, std::string(name).find(".mp4") != std::string::npos
                               ? std::vector<std::string>{"-movflags", "faststart"}
                               : std::vector<std::string>{});
    ASSERT_TRUE(path.ok()) << path.status().ToString();
    auto data = media_test::ReadFile(*path);
    ASSERT_TRUE(data.ok());
    data->resize(data->size() * 6 / 10);
    const DecodeRun run = media_test::Decode(*data);
    EXPECT_LT(run.frames.size(), static_cast<size_t>(kFrames)) << name;
    EXPECT_GT(run.frames.size(), 0u) << name;  // what came before the cut was delivered
    if (!run.status.ok()) {
      // The cut packet reaches the decoder (mov flags it "partial file"): its error names the call.
      EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument) << run.status.ToString();
      EXPECT_EQ(run.status.message().rfind("av", 0), 0u) << run.status.ToString();
    }
    std::printf("%s cut to 60%%: %zu of %d frames, %s\n", name, run.frames.size(), kFrames,
                run.status.ToString().c_str());
  }
}

TEST(Decoder, RefusesCodecsNotAccepted) {
  REQUIRE_X264();
  auto path = H264("refused.mkv");
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  DecodeSetup setup;
  setup.options.video_codecs = {AV_CODEC_ID_HEVC};
  const DecodeRun run = DecodeFile(*path, setup);
  EXPECT_EQ(run.status.code(), StatusCode::kUnimplemented) << run.status.ToString();
  EXPECT_NE(run.status.message().find("h264"), std::string::npos);
}

// An ffconcat list names files to read next to it (relative names pass its "safe" check).
// The default format list refuses the concat demuxer; with every format allowed, the
// nested open still fails, because the decoder allows no protocol and no io_open.
TEST(Decoder, NeverOpensFilesAListPointsTo) {
  REQUIRE_X264();
  auto segment = H264("segment.ts");
  ASSERT_TRUE(segment.ok()) << segment.status().ToString();
  const std::string list = "ffconcat version 1.0\nfile segment.ts\n";
  const std::vector<uint8_t> bytes(list.begin(), list.end());
  char cwd[4096];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  ASSERT_EQ(chdir(media_test::TempDir().c_str()), 0);  // where segment.ts is

  const DecodeRun by_default = media_test::Decode(bytes);
  EXPECT_EQ(by_default.status.code(), StatusCode::kInvalidArgument) << by_default.status.ToString();
  EXPECT_NE(by_default.status.message().find("accepted"), std::string::npos) << by_default.status.ToString();

  DecodeSetup any_format;
  any_format.options.input_formats.clear();
  const DecodeRun any = media_test::Decode(bytes, any_format);
  EXPECT_FALSE(any.status.ok());
  EXPECT_TRUE(any.frames.empty());
  std::printf("ffconcat list, any format: %s\n", any.status.ToString().c_str());

  DecodeSetup named;
  named.options.format = "concat";
  EXPECT_EQ(media_test::Decode(bytes, named).status.code(), StatusCode::kInvalidArgument);
  ASSERT_EQ(chdir(cwd), 0);
}

// ---------------------------------------------------------------------------------------
// Cancellation reaches a reader blocked inside the AVIO read callback.

TEST(Decoder, CancelUnblocksOpenWaitingForInput) {
  ByteQueue queue(64 * 1024);
  auto open = std::async(std::launch::async,
                         [&] { return ContainerDecoder::Open(&queue, DecoderOptions{}).status(); });
  EXPECT_EQ(open.wait_for(100ms), std::future_status::timeout);  // blocked: no bytes yet
  queue.Cancel();
  ASSERT_EQ(open.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(open.get().code(), StatusCode::kCancelled);
}

TEST(Decoder, CancelUnblocksDecodingMidStream) {
  REQUIRE_X264();
  auto path = H264("cancel.mkv", {"-g", "1"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  ByteQueue queue(data->size());
  // Half of the file, and no Close(): the decoder will run dry and wait for more.
  ASSERT_TRUE(queue.Push(std::vector<uint8_t>(data->begin(), data->begin() + data->size() / 2)).ok());
  auto decoded = std::async(std::launch::async, [&]() -> std::pair<Status, int> {
    auto decoder = ContainerDecoder::Open(&queue, DecoderOptions{});
    if (!decoder.ok()) return {decoder.status(), 0};
    DecodedFrame frame;
    int frames = 0;
    for (;;) {
      auto got = (*decoder)->Next(&frame);
      if (!got.ok()) return {got.status(), frames};
      if (!*got) return {OkStatus(), frames};
      ++frames;
    }
  });
  EXPECT_EQ(decoded.wait_for(300ms), std::future_status::timeout);
  queue.Cancel();
  ASSERT_EQ(decoded.wait_for(5s), std::future_status::ready);
  const auto [status, frames] = decoded.get();
  EXPECT_EQ(status.code(), StatusCode::kCancelled) << status.ToString();
  EXPECT_GT(frames, 0);
  EXPECT_LT(frames, kFrames);
}

// The session closes its decoder before destroying it, to time the close; the destructor
// then has nothing left to free. A software decoder never waits for a decode device.
TEST(Decoder, CloseBeforeDestructionFreesTheDecoderOnce) {
  REQUIRE_X264();
  auto path = H264("close.mkv");
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  ByteQueue queue(data->size());
  ASSERT_TRUE(queue.Push(std::vector<uint8_t>(data->begin(), data->end())).ok());
  queue.Close();
  const DecoderOptions options;
  auto decoder = ContainerDecoder::Open(&queue, options);
  ASSERT_TRUE(decoder.ok()) << decoder.status().ToString();
  DecodedFrame frame;
  auto got = (*decoder)->Next(&frame);
  ASSERT_TRUE(got.ok() && *got) << got.status().ToString();
  (*decoder)->Close();
  (*decoder)->Close();
  EXPECT_EQ((*decoder)->device_wait_seconds(), 0.0);
  decoder->reset();  // ASan and the leak check see a double free or a leak here
}

}  // namespace

// ContainerMuxer end to end: decode a real file, map its frames, encode them with the CPU
// JPEG encoder and mux into Matroska, MOV and AVI through the byte sink; then check the
// output with ffprobe and with libavformat (our own ContainerDecoder): frame counts,
// sizes, timestamps, rotation and passthrough audio.
#include "muxer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "cpu_encoder.h"
#include "demux_decoder.h"
#include "frame_convert.h"
#include "media_test_util.h"

namespace {

using conveyor::CpuJpegEncoder;
using conveyor::EncodeParams;
using conveyor::OkStatus;
using conveyor::Status;
using conveyor::StatusCode;
using conveyor::StatusOr;
using conveyor::media::ContainerDecoder;
using conveyor::media::ContainerFormat;
using conveyor::media::ContainerMuxer;
using conveyor::media::DecodedFrame;
using conveyor::media::FrameConverter;
using conveyor::media::MuxerOptions;
using media_test::DecodeRun;
using media_test::DecodeSetup;
using media_test::MakeMedia;
using media_test::TestSource;

constexpr int kFrames = 10;

const char* Extension(ContainerFormat f) {
  switch (f) {
    case ContainerFormat::kMatroska:
      return ".mkv";
    case ContainerFormat::kMov:
      return ".mov";
    case ContainerFormat::kAvi:
      return ".avi";
  }
  return "";
}

struct Transcoded {
  Status status;
  std::string path;  // the muxed output, written out for ffprobe
  DecodeRun input;   // what was decoded from the input
  size_t sink_calls = 0;
  size_t bytes_before_finish = 0;  // what reached the sink before Finish()
};

// input file -> ContainerDecoder -> FrameConverter -> CpuJpegEncoder -> ContainerMuxer -> bytes;
// `seekable`: into a file the sink writes at each chunk's offset (OpenAt).
Transcoded Transcode(const std::string& input, MuxerOptions options, bool audio,
                     const std::string& out_name, bool seekable = false) {
  Transcoded t;
  std::vector<uint8_t> output;
  std::unique_ptr<ContainerMuxer> muxer;
  FrameConverter converter;
  CpuJpegEncoder encoder(2);
  EncodeParams params;
  params.quality = 75;
  auto sink = [&](const uint8_t* data, size_t size) -> Status {
    ++t.sink_calls;
    output.insert(output.end(), data, data + size);
    return OkStatus();
  };
  auto offset_sink = [&](uint64_t offset, const uint8_t* data, size_t size) -> Status {
    ++t.sink_calls;
    if (offset > output.size()) return conveyor::Internal("a write past the end leaves a hole");
    if (offset + size > output.size()) output.resize(offset + size);
    std::copy(data, data + size, output.begin() + static_cast<std::ptrdiff_t>(offset));
    return OkStatus();
  };
  // ContainerChunk.insert as a client carries it out: the bytes from offset on move.
  auto insert_sink = [&](uint64_t offset, const uint8_t* data, size_t size) -> Status {
    ++t.sink_calls;
    if (offset > output.size()) return conveyor::Internal("an insert past the end");
    output.insert(output.begin() + static_cast<std::ptrdiff_t>(offset), data, data + size);
    return OkStatus();
  };
  DecodeSetup setup;
  setup.options.audio = audio;
  setup.on_open = [&](ContainerDecoder& decoder) -> Status {
    options.width = decoder.video().width;
    options.height = decoder.video().height;
    options.time_base = decoder.video().time_base;
    options.frame_rate = decoder.video().frame_rate;
    if (audio && decoder.audio() != nullptr) {
      options.audio = decoder.audio()->codecpar;
      options.audio_time_base = decoder.audio()->time_base;
    }
    if (seekable) {
      ASSIGN_OR_RETURN(muxer, ContainerMuxer::OpenAt(options, offset_sink, true, insert_sink));
    } else {
      ASSIGN_OR_RETURN(muxer, ContainerMuxer::Open(options, sink));
    }
    if (audio) decoder.SetAudioSink([&](const AVPacket& p) { return muxer->WriteAudio(p); });
    return OkStatus();
  };
  setup.on_frame = [&](ContainerDecoder&, DecodedFrame& f) -> Status {
    ASSIGN_OR_RETURN(auto mapped, converter.Convert(*f.frame));
    ASSIGN_OR_RETURN(std::vector<uint8_t> jpeg, encoder.Encode(mapped.view, params));
    return muxer->WriteVideo(jpeg.data(), jpeg.size(), f.pts);
  };
  t.input = media_test::DecodeFile(input, setup);
  t.status = t.input.status;
  if (!t.status.ok()) return t;
  t.bytes_before_finish = output.size();
  t.status = muxer->Finish();
  if (!t.status.ok()) return t;
  t.path = media_test::TempDir() + "/" + out_name;
  t.status = media_test::WriteFile(t.path, output);
  return t;
}

StatusOr<std::string> H264Input(const std::string& name, const std::vector<std::string>& extra = {},
                                const std::vector<std::string>& extra_inputs = {}) {
  std::vector<std::string> args = {"-frames:v", std::to_string(kFrames), "-c:v", "libx264", "-preset",
                                   "ultrafast"};
  args.insert(args.end(), extra.begin(), extra.end());
  return MakeMedia(name, TestSource(), args, extra_inputs);
}

#define REQUIRE_X264()                                                                            \
  do {                                                                                            \
    if (!media_test::HasEncoder("libx264")) GTEST_SKIP() << "this ffmpeg has no libx264 encoder"; \
  } while (0)

class MuxContainer : public ::testing::TestWithParam<ContainerFormat> {};

TEST_P(MuxContainer, OutputDecodesToEveryFrameWithItsTimestamps) {
  REQUIRE_X264();
  const ContainerFormat format = GetParam();
  auto input = H264Input("in.mkv");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  MuxerOptions options;
  options.format = format;
  const Transcoded t = Transcode(*input, options, false, std::string("out") + Extension(format));
  ASSERT_TRUE(t.status.ok()) << t.status.ToString();
  ASSERT_EQ(t.input.frames.size(), static_cast<size_t>(kFrames));
  // Bytes flow while frames are written, not only at the end.
  EXPECT_GT(t.bytes_before_finish, 0u);
  std::printf("%s: %zu sink calls, %zu bytes before Finish\n", conveyor::media::ContainerFormatName(format),
              t.sink_calls, t.bytes_before_finish);

  // ffprobe: one MJPEG stream of the right size, every frame decodable.
  auto streams = media_test::ProbeStreams(t.path);
  ASSERT_TRUE(streams.ok()) << streams.status().ToString();
  ASSERT_EQ(streams->size(), 1u);
  const auto& v = streams->at(0);
  EXPECT_EQ(v.at("codec_name"), "mjpeg");
  EXPECT_EQ(v.at("width"), "320");
  EXPECT_EQ(v.at("height"), "240");
  EXPECT_EQ(v.at("nb_read_frames"), std::to_string(kFrames));

  // libavformat through our own decoder: same count and the input's timing.
  const DecodeRun out = media_test::DecodeFile(t.path);
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(out.video.codec, "mjpeg");
  ASSERT_EQ(out.frames.size(), static_cast<size_t>(kFrames));
  for (size_t i = 0; i < out.frames.size(); ++i) {
    EXPECT_NEAR(out.frames[i].seconds - out.frames[0].seconds,
                t.input.frames[i].seconds - t.input.frames[0].seconds, 1e-3)
        << "frame " << i;
    EXPECT_EQ(out.frames[i].width, 320);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, MuxContainer,
                         ::testing::Values(ContainerFormat::kMatroska, ContainerFormat::kMov,
                                           ContainerFormat::kAvi),
                         [](const ::testing::TestParamInfo<ContainerFormat>& p) {
                           return std::string(conveyor::media::ContainerFormatName(p.param));
                         });

// The packets' md5 sums, or nothing when ffmpeg cannot read the file.
std::vector<std::string> PacketSums(const std::string& path) {
  auto sums = media_test::PacketSums(path);
  return sums.ok() ? *sums : std::vector<std::string>{};
}

bool Holds(const std::vector<uint8_t>& file, const std::string& bytes) {
  return std::search(file.begin(), file.end(), bytes.begin(), bytes.end(),
                     [](uint8_t a, char b) { return a == static_cast<uint8_t>(b); }) != file.end();
}

class MuxSeekable : public ::testing::TestWithParam<ContainerFormat> {};

// A sink that seeks gets the file the ffmpeg CLI writes: a duration, an index, MOV not
// fragmented; the JPEG packets are the live output's, byte for byte.
TEST_P(MuxSeekable, FinishesTheContainerWithItsDurationAndIndex) {
  REQUIRE_X264();
  const ContainerFormat format = GetParam();
  const std::string name = conveyor::media::ContainerFormatName(format);
  auto input = H264Input("seek_in.mkv");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  MuxerOptions options;
  options.format = format;
  const Transcoded live = Transcode(*input, options, false, "live" + std::string(Extension(format)));
  const Transcoded file = Transcode(*input, options, false, "file" + std::string(Extension(format)), true);
  ASSERT_TRUE(live.status.ok()) << live.status.ToString();
  ASSERT_TRUE(file.status.ok()) << file.status.ToString();

  auto duration = media_test::Ffprobe({"-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", file.path});
  ASSERT_TRUE(duration.ok()) << duration.status().ToString();
  EXPECT_NEAR(std::atof(duration->c_str()), kFrames / 25.0, 0.05) << name << ": '" << *duration << "'";
  const std::vector<std::string> sums = PacketSums(file.path);
  EXPECT_EQ(sums.size(), static_cast<size_t>(kFrames));
  EXPECT_EQ(sums, PacketSums(live.path)) << name;

  auto bytes = media_test::ReadFile(file.path);
  auto live_bytes = media_test::ReadFile(live.path);
  ASSERT_TRUE(bytes.ok() && live_bytes.ok());
  // The index each container keeps, which live output cannot have.
  const std::string index = format == ContainerFormat::kMatroska ? std::string("\x1c\x53\xbb\x6b", 4)  // Cues
                            : format == ContainerFormat::kAvi    ? std::string("idx1")
                                                                 : std::string("moov");
  EXPECT_TRUE(Holds(*bytes, index)) << name;
  if (format != ContainerFormat::kMov) {
    EXPECT_FALSE(Holds(*live_bytes, index)) << name;
  }
  if (format == ContainerFormat::kMov) {
    EXPECT_FALSE(Holds(*bytes, "moof")) << "a plain MOV has no fragments";
    EXPECT_TRUE(Holds(*live_bytes, "moof")) << "live MOV is fragmented";
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, MuxSeekable,
                         ::testing::Values(ContainerFormat::kMatroska, ContainerFormat::kMov,
                                           ContainerFormat::kAvi),
                         [](const ::testing::TestParamInfo<ContainerFormat>& p) {
                           return std::string(conveyor::media::ContainerFormatName(p.param));
                         });

// faststart: moov before mdat, as the ffmpeg CLI's -movflags +faststart puts it. The
// packets are those of the plain MOV, and everything after the moov is byte for byte what
// the CLI writes when it moves the plain file's moov to the front itself.
TEST(Muxer, FaststartMovHasMoovBeforeMdatAsTheCliWritesIt) {
  REQUIRE_X264();
  for (const bool audio : {false, true}) {
    SCOPED_TRACE(audio ? "with audio" : "video only");
    auto input = audio ? H264Input("fast_in_audio.mkv", {"-map", "0:v", "-map", "1:a", "-c:a", "aac"},
                                   {"sine=frequency=440:sample_rate=48000:duration=0.4"})
                       : H264Input("fast_in.mkv");
    ASSERT_TRUE(input.ok()) << input.status().ToString();
    const std::string tag = audio ? "_audio" : "";
    MuxerOptions options;
    options.format = ContainerFormat::kMov;
    const Transcoded plain = Transcode(*input, options, audio, "plain" + tag + ".mov", true);
    options.faststart = true;
    const Transcoded fast = Transcode(*input, options, audio, "fast" + tag + ".mov", true);
    ASSERT_TRUE(plain.status.ok()) << plain.status.ToString();
    ASSERT_TRUE(fast.status.ok()) << fast.status.ToString();

    auto plain_boxes = media_test::ProbeTopLevelBoxes(plain.path);
    auto fast_boxes = media_test::ProbeTopLevelBoxes(fast.path);
    ASSERT_TRUE(plain_boxes.ok() && fast_boxes.ok());
    EXPECT_EQ(*plain_boxes, (std::vector<std::string>{"ftyp", "wide", "mdat", "moov"}));
    EXPECT_EQ(*fast_boxes, (std::vector<std::string>{"ftyp", "moov", "wide", "mdat"}));
    const std::vector<std::string> sums = PacketSums(fast.path);
    EXPECT_GE(sums.size(), static_cast<size_t>(kFrames));
    EXPECT_EQ(sums, PacketSums(plain.path));

    const std::string cli = media_test::TempDir() + "/cli_fast" + tag + ".mov";
    ASSERT_TRUE(media_test::Ffmpeg({"-i", plain.path, "-map", "0", "-c", "copy", "-movflags", "+faststart", cli}).ok());
    auto ours = media_test::ReadFile(fast.path);
    auto theirs = media_test::ReadFile(cli);
    auto plain_bytes = media_test::ReadFile(plain.path);
    ASSERT_TRUE(ours.ok() && theirs.ok() && plain_bytes.ok());
    // ftyp | moov | wide | mdat: from wide on the two files are the same.
    auto be32 = [](const std::vector<uint8_t>& b, size_t at) {
      return (size_t{b[at]} << 24) | (size_t{b[at + 1]} << 16) | (size_t{b[at + 2]} << 8) | b[at + 3];
    };
    const size_t ftyp = be32(*ours, 0);
    const size_t tail = ours->size() - ftyp - be32(*ours, ftyp);
    ASSERT_LT(tail, theirs->size());
    EXPECT_TRUE(std::equal(ours->end() - static_cast<std::ptrdiff_t>(tail), ours->end(),
                           theirs->end() - static_cast<std::ptrdiff_t>(tail)))
        << "wide and mdat differ from the CLI's +faststart file";
    EXPECT_EQ(ours->size(), plain_bytes->size()) << "the moov moved, and no table needed 64 bits";
  }
}

TEST(Muxer, FaststartIsForSeekableMovWithAnInsertSink) {
  MuxerOptions options;
  options.width = 64;
  options.height = 64;
  options.faststart = true;
  auto sink = [](uint64_t, const uint8_t*, size_t) { return OkStatus(); };
  auto insert = [](uint64_t, const uint8_t*, size_t) { return OkStatus(); };
  options.format = ContainerFormat::kMatroska;
  EXPECT_EQ(ContainerMuxer::OpenAt(options, sink, true, insert).status().code(), StatusCode::kInvalidArgument);
  options.format = ContainerFormat::kMov;
  EXPECT_EQ(ContainerMuxer::OpenAt(options, sink, false, insert).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ContainerMuxer::OpenAt(options, sink, true).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ContainerMuxer::OpenAt(options, sink, true, insert).ok());
}

// Irregular frame times survive into Matroska and MOV (AVI has one constant rate).
TEST(Muxer, KeepsVariableFrameRateTimestamps) {
  REQUIRE_X264();
  auto input = MakeMedia("vfr_in.mkv", TestSource(),
                         {"-frames:v", "12", "-vf", "settb=1/1000,setpts=N*40+floor(N/3)*25", "-fps_mode",
                          "vfr", "-enc_time_base", "1:1000", "-c:v", "libx264", "-preset", "ultrafast"});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  for (ContainerFormat format : {ContainerFormat::kMatroska, ContainerFormat::kMov}) {
    MuxerOptions options;
    options.format = format;
    const Transcoded t = Transcode(*input, options, false, std::string("vfr_out") + Extension(format));
    ASSERT_TRUE(t.status.ok()) << t.status.ToString();
    auto times = media_test::ProbeVideoPacketTimes(t.path);
    ASSERT_TRUE(times.ok()) << times.status().ToString();
    ASSERT_EQ(times->size(), 12u) << conveyor::media::ContainerFormatName(format);
    for (size_t i = 0; i < times->size(); ++i) {
      const double expected = (static_cast<double>(i) * 40 + static_cast<double>(i / 3) * 25) / 1000.0;
      EXPECT_NEAR((*times)[i], expected, 1e-3)
          << conveyor::media::ContainerFormatName(format) << " frame " << i;
    }
  }
}

// Rotation goes into MOV as a display matrix: ffprobe sees it, FFmpeg's autorotate turns
// the picture clockwise (testsrc2's dark top-left corner ends up top-right), and our
// decoder reads the same rotation back.
TEST(Muxer, WritesRotationIntoMov) {
  REQUIRE_X264();
  auto input = H264Input("rot_in.mkv");
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  MuxerOptions options;
  options.format = ContainerFormat::kMov;
  options.orientation = conveyor::OrientationFromExif(6);  // rotate 90 clockwise
  const Transcoded t = Transcode(*input, options, false, "rot_out.mov");
  ASSERT_TRUE(t.status.ok()) << t.status.ToString();

  auto streams = media_test::ProbeStreams(t.path);
  ASSERT_TRUE(streams.ok()) << streams.status().ToString();
  EXPECT_EQ(streams->at(0)["side_data:rotation"], "-90");  // av_display_rotation_get: counter-clockwise

  const DecodeRun back = media_test::DecodeFile(t.path);
  ASSERT_TRUE(back.status.ok()) << back.status.ToString();
  EXPECT_EQ(back.video.rotation_degrees, 90);

  const std::string rgb_path = media_test::TempDir() + "/rot_auto.rgb";
  ASSERT_TRUE(
      media_test::Ffmpeg({"-i", t.path, "-frames:v", "1", "-pix_fmt", "rgb24", "-f", "rawvideo", rgb_path})
          .ok());
  auto rgb = media_test::ReadFile(rgb_path);
  ASSERT_TRUE(rgb.ok());
  ASSERT_EQ(rgb->size(), 240u * 320u * 3u);  // autorotated: 240 wide, 320 high
  auto mean = [&](int x0, int y0) {
    double sum = 0;
    for (int y = y0; y < y0 + 8; ++y) {
      for (int x = x0; x < x0 + 8; ++x) {
        for (int c = 0; c < 3; ++c) sum += (*rgb)[(static_cast<size_t>(y) * 240 + x) * 3 + c];
      }
    }
    return sum / (8 * 8 * 3);
  };
  // testsrc2's top-left holds the dark timestamp box; its left edge is red, its right cyan.
  EXPECT_LT(mean(240 - 12, 4), 80.0);  // the dark corner is now top-right
  EXPECT_GT(mean(4, 4), 80.0);         // bottom-left (red) is now top-left
}

struct AudioCase {
  ContainerFormat format;
  const char* codec;  // ffmpeg audio encoder for the input
};

class MuxAudio : public ::testing::TestWithParam<AudioCase> {};

TEST_P(MuxAudio, PassesAudioThroughUntouched) {
  REQUIRE_X264();
  const AudioCase& c = GetParam();
  auto input =
      H264Input(std::string("av_") + c.codec + ".mkv", {"-map", "0:v", "-map", "1:a", "-c:a", c.codec},
                {"sine=frequency=440:sample_rate=48000:duration=0.4"});
  ASSERT_TRUE(input.ok()) << input.status().ToString();
  auto in_streams = media_test::ProbeStreams(*input);
  ASSERT_TRUE(in_streams.ok() && in_streams->size() == 2u);
  const std::string in_audio_packets = in_streams->at(1).at("nb_read_packets");

  MuxerOptions options;
  options.format = c.format;
  const Transcoded t =
      Transcode(*input, options, true, std::string("av_out_") + c.codec + Extension(c.format));
  ASSERT_TRUE(t.status.ok()) << t.status.ToString();
  auto streams = media_test::ProbeStreams(t.path);
  ASSERT_TRUE(streams.ok()) << streams.status().ToString();
  ASSERT_EQ(streams->size(), 2u);
  EXPECT_EQ(streams->at(0).at("codec_name"), "mjpeg");
  EXPECT_EQ(streams->at(0).at("nb_read_frames"), std::to_string(kFrames));
  EXPECT_EQ(streams->at(1).at("codec_type"), "audio");
  EXPECT_EQ(streams->at(1).at("codec_name"), c.codec);
  EXPECT_EQ(streams->at(1).at("nb_read_packets"), in_audio_packets);
  EXPECT_EQ(streams->at(1).at("sample_rate"), "48000");
}

INSTANTIATE_TEST_SUITE_P(Formats, MuxAudio,
                         ::testing::Values(AudioCase{ContainerFormat::kMatroska, "aac"},
                                           AudioCase{ContainerFormat::kMov, "aac"},
                                           AudioCase{ContainerFormat::kAvi, "pcm_s16le"},
                                           AudioCase{ContainerFormat::kMatroska, "pcm_s16le"}),
                         [](const ::testing::TestParamInfo<AudioCase>& p) {
                           return std::string(conveyor::media::ContainerFormatName(p.param.format)) + "_" +
                                  p.param.codec;
                         });

TEST(Muxer, SinkErrorsStopTheWrite) {
  MuxerOptions options;
  options.format = ContainerFormat::kMatroska;
  options.width = 16;
  options.height = 16;
  options.time_base = {1, 25};
  auto muxer = ContainerMuxer::Open(
      options, [](const uint8_t*, size_t) { return Status(StatusCode::kCancelled, "client went away"); });
  ASSERT_TRUE(muxer.ok()) << muxer.status().ToString();  // the header is still buffered
  const std::vector<uint8_t> jpeg(1000, 0xAB);           // the muxer does not parse JPEG
  const Status s = (*muxer)->WriteVideo(jpeg.data(), jpeg.size(), 0);
  EXPECT_EQ(s.code(), StatusCode::kCancelled) << s.ToString();
  EXPECT_NE(s.message().find("client went away"), std::string::npos);
  EXPECT_EQ((*muxer)->WriteVideo(jpeg.data(), jpeg.size(), 1).code(), StatusCode::kCancelled);
}

TEST(Muxer, RefusesBadOptions) {
  auto sink = [](const uint8_t*, size_t) { return OkStatus(); };
  MuxerOptions avi;
  avi.format = ContainerFormat::kAvi;
  avi.width = 64;
  avi.height = 64;
  EXPECT_EQ(ContainerMuxer::Open(avi, sink).status().code(), StatusCode::kInvalidArgument);  // no frame rate

  // Opus cannot go into AVI: refused up front with the reason.
  struct ParDeleter {
    void operator()(AVCodecParameters* p) const { avcodec_parameters_free(&p); }
  };
  std::unique_ptr<AVCodecParameters, ParDeleter> opus(avcodec_parameters_alloc());
  opus->codec_type = AVMEDIA_TYPE_AUDIO;
  opus->codec_id = AV_CODEC_ID_OPUS;
  opus->sample_rate = 48000;
  avi.frame_rate = {25, 1};
  avi.audio = opus.get();
  avi.audio_time_base = {1, 48000};
  const Status s = ContainerMuxer::Open(avi, sink).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("avi cannot carry opus"), std::string::npos) << s.ToString();

  MuxerOptions plain;
  plain.width = 64;
  plain.height = 64;
  auto muxer = ContainerMuxer::Open(plain, sink);
  ASSERT_TRUE(muxer.ok());
  EXPECT_EQ((*muxer)->WriteAudio(AVPacket{}).code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*muxer)->Finish().ok());
  const uint8_t byte = 0;
  EXPECT_EQ((*muxer)->WriteVideo(&byte, 1, 0).code(), StatusCode::kFailedPrecondition);
}

}  // namespace

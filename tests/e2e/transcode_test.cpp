// End-to-end: the real conveyord (CPU worker) and a real gRPC client. Media comes from
// ffmpeg's lavfi sources; output is checked with libjpeg-turbo, ffprobe, and against the
// CPU encoder's bytes for raw input.
#include "transcode_media.h"

namespace conveyor::e2e {
namespace {

using namespace transcode_media;

class TranscodeTest : public DaemonSuite {
 protected:
  static void SetUpTestSuite() {
    MakeMedia();
    DaemonSuite::SetUpTestSuite();
  }
};

TEST_F(TranscodeTest, ContainerInputGivesOneDecodableJpegPerFrameAndRendition) {
  TranscodeCall call;
  call.spec = ContainerSpec();
  AddRendition(&call.spec, 0, 0);
  AddRendition(&call.spec, 160, 0);  // keeps the aspect ratio: 160x120
  call.spec.set_client_label("e2e container");
  call.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/h264.mkv", 4096); };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_TRUE(out.started);
  EXPECT_EQ(out.started_msg.source_width(), 320u);
  EXPECT_EQ(out.started_msg.source_height(), 240u);
  EXPECT_EQ(out.started_msg.source_codec(), "h264");
  EXPECT_EQ(out.started_msg.backend(), "cpu");
  EXPECT_EQ(out.started_msg.session_id().size(), 16u);
  const int sizes[2][2] = {{320, 240}, {160, 120}};
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_EQ(out.frames.at(r).size(), 12u) << "rendition " << r;
    for (const auto& jpeg : out.frames.at(r)) {
      const JpegInfo info = DecodeJpeg(jpeg);
      EXPECT_TRUE(info.ok);
      EXPECT_EQ(info.width, sizes[r][0]);
      EXPECT_EQ(info.height, sizes[r][1]);
    }
    const std::vector<int64_t>& pts = out.pts.at(r);
    for (size_t i = 1; i < pts.size(); ++i) EXPECT_GT(pts[i], pts[i - 1]) << "pts not increasing at " << i;
  }
  ASSERT_TRUE(out.summary_seen);
  EXPECT_EQ(out.summary.frames_in(), 12u);
  EXPECT_EQ(out.summary.frames_out(), 12u);
  EXPECT_GT(out.summary.bytes_in(), 0u);
}

TEST_F(TranscodeTest, RawFramesAreByteIdenticalToTheCpuEncoder) {
  const int w = 96, h = 64;
  std::vector<testing::SyntheticFrame> frames;
  for (uint32_t i = 0; i < 5; ++i) {
    frames.push_back(testing::MakeSyntheticFrame(w, h, PixelFormat::kYuv420p, 100 + i, ColorMatrix::kBt709));
  }
  TranscodeCall call;
  call.spec = RawSpec(v1::PIXEL_FORMAT_YUV420P, w, h);
  AddRendition(&call.spec, 0, 0, 90);
  call.send_input = [&](TranscodeStream* s) {
    for (size_t i = 0; i < frames.size(); ++i) {
      if (!SendRawFrame(s, frames[i].bytes, static_cast<int64_t>(i) * 2, 1000)) return false;
    }
    return true;
  };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_EQ(out.frames.at(0).size(), frames.size());
  EXPECT_EQ(out.started_msg.time_base().num(), 1);
  EXPECT_EQ(out.started_msg.time_base().den(), 30);
  CpuJpegEncoder reference(1);
  EncodeParams params;
  params.quality = 90;
  for (size_t i = 0; i < frames.size(); ++i) {
    StatusOr<std::vector<uint8_t>> want = reference.Encode(frames[i].view, params);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(out.frames.at(0)[i], *want) << "frame " << i;
    EXPECT_EQ(out.pts.at(0)[i], static_cast<int64_t>(i) * 2);
  }
}

TEST_F(TranscodeTest, A4kFrameTravelsInChunksUnderTheMessageLimit) {
  const int w = 3840, h = 2160;
  const testing::SyntheticFrame frame = testing::MakeSyntheticFrame(w, h, PixelFormat::kRgb24, 7);
  TranscodeCall call;
  call.spec = RawSpec(v1::PIXEL_FORMAT_RGB24, w, h);
  v1::RenditionSpec* r = AddRendition(&call.spec, 0, 0, 100);
  r->set_subsampling(v1::SUBSAMPLING_444);
  call.send_input = [&](TranscodeStream* s) { return SendRawFrame(s, frame.bytes, 0, 1 << 20); };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_EQ(out.frames.at(0).size(), 1u);
  EXPECT_GT(out.frames.at(0)[0].size(), size_t{1} << 20) << "the JPEG should need several messages";
  EXPECT_LT(out.largest_message, size_t{4} << 20);
  CpuJpegEncoder reference(2);
  EncodeParams params;
  params.quality = 100;
  params.subsampling = Subsampling::k444;
  StatusOr<std::vector<uint8_t>> want = reference.Encode(frame.view, params);
  ASSERT_TRUE(want.ok());
  EXPECT_EQ(out.frames.at(0)[0], *want);
}

class ContainerOutputTest : public TranscodeTest, public ::testing::WithParamInterface<std::pair<int, std::string>> {};

TEST_P(ContainerOutputTest, MuxedMjpegDecodesWithFfprobe) {
  TranscodeCall call;
  call.spec = ContainerSpec();
  AddRendition(&call.spec, 0, 0);
  call.spec.mutable_output()->mutable_container()->set_format(static_cast<v1::ContainerFormat>(GetParam().first));
  call.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/h264.mkv"); };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_FALSE(out.containers.at(0).empty());
  EXPECT_TRUE(out.frames.empty());
  const std::string path = g_media + "/out." + GetParam().second;
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(out.containers.at(0).data(), 1, out.containers.at(0).size(), f);
  std::fclose(f);
  const std::string probe = path + ".txt";
  ASSERT_EQ(Shell("ffprobe -v error -count_frames -select_streams v:0 -show_entries "
                  "stream=codec_name,width,height,nb_read_frames -of csv=p=0 " + path + " > " + probe), 0);
  const std::vector<uint8_t> text = ReadFile(probe);
  EXPECT_EQ(std::string(text.begin(), text.end()), "mjpeg,320,240,12\n");
}

INSTANTIATE_TEST_SUITE_P(Formats, ContainerOutputTest,
                         ::testing::Values(std::make_pair(1, std::string("mkv")),
                                           std::make_pair(2, std::string("mov")),
                                           std::make_pair(3, std::string("avi"))),
                         [](const ::testing::TestParamInfo<ContainerOutputTest::ParamType>& info) {
                           return info.param.second;
                         });

TEST_F(TranscodeTest, AudioIsPassedThroughIntoTheContainer) {
  TranscodeCall call;
  call.spec = ContainerSpec();
  AddRendition(&call.spec, 0, 0);
  call.spec.mutable_output()->mutable_container()->set_format(v1::CONTAINER_FORMAT_MATROSKA);
  call.spec.set_audio_passthrough(true);
  call.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/av.mkv"); };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  const std::string path = g_media + "/av_out.mkv";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(out.containers.at(0).data(), 1, out.containers.at(0).size(), f);
  std::fclose(f);
  ASSERT_EQ(Shell("ffprobe -v error -show_entries stream=codec_type,codec_name -of csv=p=0 " + path + " > " + path +
                  ".txt"), 0);
  const std::vector<uint8_t> text = ReadFile(path + ".txt");
  EXPECT_EQ(std::string(text.begin(), text.end()), "mjpeg,video\naac,audio\n");
}

// The ffmpeg CLI maps no audio when the input has none; a client that always asks for
// audio gets the video and a note saying so, not an error.
TEST_F(TranscodeTest, AudioPassthroughOnVideoOnlyInputIsANote) {
  TranscodeCall call;
  call.spec = ContainerSpec();
  AddRendition(&call.spec, 0, 0);
  call.spec.mutable_output()->mutable_container()->set_format(v1::CONTAINER_FORMAT_MATROSKA);
  call.spec.set_audio_passthrough(true);
  call.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/h264.mkv"); };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  ASSERT_EQ(out.started_msg.notes_size(), 1);
  EXPECT_EQ(out.started_msg.notes(0), "audio_passthrough: the input has no audio stream; the output has video only");
  EXPECT_EQ(out.summary.frames_out(), 12u);
  const std::string path = g_media + "/video_only_out.mkv";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(out.containers.at(0).data(), 1, out.containers.at(0).size(), f);
  std::fclose(f);
  ASSERT_EQ(Shell("ffprobe -v error -show_entries stream=codec_type,codec_name -of csv=p=0 " + path + " > " + path +
                  ".txt"), 0);
  const std::vector<uint8_t> text = ReadFile(path + ".txt");
  EXPECT_EQ(std::string(text.begin(), text.end()), "mjpeg,video\n");
}

TEST_F(TranscodeTest, BadSpecsNameTheField) {
  TranscodeCall call;
  call.spec = ContainerSpec();  // no renditions
  TranscodeOutcome out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(out.status.error_message().find("spec.renditions"), std::string::npos) << out.status.error_message();

  call.spec = RawSpec(v1::PIXEL_FORMAT_UNSPECIFIED, 64, 64);
  AddRendition(&call.spec, 0, 0);
  out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(out.status.error_message().find("spec.raw.pixel_format"), std::string::npos);

  call.spec = RawSpec(v1::PIXEL_FORMAT_RGB24, 64, 64);
  AddRendition(&call.spec, 0, 0, 101);
  out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(out.status.error_message().find("spec.renditions[0].quality"), std::string::npos);

  call.spec = RawSpec(v1::PIXEL_FORMAT_RGB24, 100000, 100000);
  AddRendition(&call.spec, 0, 0);
  out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(out.status.error_message().find("spec.raw.width"), std::string::npos);
}

TEST_F(TranscodeTest, AWrongSizeRawFrameIsInvalidArgumentNamingTheFrame) {
  const testing::SyntheticFrame good = testing::MakeSyntheticFrame(64, 48, PixelFormat::kRgb24, 1);
  TranscodeCall call;
  call.spec = RawSpec(v1::PIXEL_FORMAT_RGB24, 64, 48);
  AddRendition(&call.spec, 0, 0);
  call.send_input = [&](TranscodeStream* s) {
    if (!SendRawFrame(s, good.bytes, 0, 4096)) return false;
    std::vector<uint8_t> short_frame(good.bytes.begin(), good.bytes.end() - 10);
    return SendRawFrame(s, short_frame, 1, 4096);
  };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(out.status.error_message().find("frame 1"), std::string::npos) << out.status.error_message();
}

TEST_F(TranscodeTest, GarbageInputIsInvalidArgument) {
  TranscodeCall call;
  call.spec = ContainerSpec();
  AddRendition(&call.spec, 0, 0);
  call.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/garbage.bin"); };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << out.status.error_message();
}

// A client that cannot seek streams an MP4 whose moov follows mdat: the daemon spools it
// (limits.input_spool_bytes) and demuxes it from there.
TEST_F(TranscodeTest, Mp4WithMoovAtTheEndIsSpooledFromAStream) {
  TranscodeCall call;
  call.spec = ContainerSpec();
  AddRendition(&call.spec, 0, 0);
  call.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/moov_at_end.mp4", 4096); };
  const TranscodeOutcome out = RunTranscode(stub_.get(), call);
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(out.summary.frames_out(), 12u);
  EXPECT_EQ(out.summary.spooled_bytes(), ReadFile(g_media + "/moov_at_end.mp4").size());
}

// Without a spool the same stream is refused at once, with the ways out.
TEST(TranscodeWithoutSpool, Mp4WithMoovAtTheEndNamesTheFix) {
  MakeMedia();
  DaemonProcess daemon({"--input-spool-bytes", "0"});
  ASSERT_TRUE(daemon.ready());
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  TranscodeCall call;
  call.spec = ContainerSpec();
  AddRendition(&call.spec, 0, 0);
  call.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/moov_at_end.mp4"); };
  const TranscodeOutcome out = RunTranscode(stub.get(), call);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(out.status.error_message().find("ContainerInput.seekable"), std::string::npos)
      << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("-movflags faststart"), std::string::npos) << out.status.error_message();
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST_F(TranscodeTest, ABadSessionDoesNotDisturbAGoodOne) {
  TranscodeCall good;
  good.spec = ContainerSpec();
  AddRendition(&good.spec, 0, 0);
  good.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/h264.mkv", 2048); };
  TranscodeCall bad = good;
  bad.send_input = [](TranscodeStream* s) { return SendFileChunks(s, g_media + "/garbage.bin", 2048); };
  TranscodeOutcome good_out, bad_out;
  std::thread t([&] { bad_out = RunTranscode(stub_.get(), bad); });
  good_out = RunTranscode(stub_.get(), good);
  t.join();
  EXPECT_EQ(bad_out.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(good_out.status.ok()) << good_out.status.error_message();
  EXPECT_EQ(good_out.frames.at(0).size(), 12u);
}

TEST_F(TranscodeTest, StatusListAndCancel) {
  grpc::ClientContext sctx;
  v1::ServerStatus status;
  ASSERT_TRUE(stub_->GetServerStatus(&sctx, v1::GetServerStatusRequest(), &status).ok());
  ASSERT_EQ(status.workers_size(), 1);
  EXPECT_EQ(status.workers(0).backend(), "cpu");
  EXPECT_FALSE(status.draining());
  EXPECT_FALSE(status.version().empty());

  // A session that sends its spec and then waits; the test cancels it by id.
  TranscodeCall held;
  held.spec = ContainerSpec();
  AddRendition(&held.spec, 0, 0);
  held.spec.set_client_label("held");
  held.half_close = false;
  std::string id;
  held.on_response = [&](const v1::TranscodeResponse&, grpc::ClientContext*) {};
  TranscodeOutcome held_out;
  std::thread t([&] { held_out = RunTranscode(stub_.get(), held); });
  v1::ListSessionsResponse list;
  for (int attempt = 0; attempt < 200 && id.empty(); ++attempt) {
    grpc::ClientContext lctx;
    list.Clear();
    ASSERT_TRUE(stub_->ListSessions(&lctx, v1::ListSessionsRequest(), &list).ok());
    for (const auto& s : list.sessions()) {
      if (s.client_label() == "held") id = s.session_id();
    }
    if (id.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(id.empty()) << "the held session never showed in ListSessions";
  grpc::ClientContext cctx;
  v1::CancelSessionRequest cancel;
  cancel.set_session_id(id);
  v1::CancelSessionResponse cancelled;
  EXPECT_TRUE(stub_->CancelSession(&cctx, cancel, &cancelled).ok());
  t.join();
  EXPECT_EQ(held_out.status.error_code(), grpc::StatusCode::CANCELLED) << held_out.status.error_message();

  grpc::ClientContext nctx;
  cancel.set_session_id("0000000000000000");
  EXPECT_EQ(stub_->CancelSession(&nctx, cancel, &cancelled).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(TranscodeTest, HealthServesBothNames) {
  for (const std::string service : {"", "conveyor.v1.Transcoder"}) {
    const HealthCheckOutcome health = CheckHealth(daemon_->Channel(), service);
    ASSERT_TRUE(health.status.ok()) << service << ": " << health.status.error_message();
    EXPECT_EQ(health.reply, std::string("\x08\x01", 2)) << "service '" << service << "'";  // SERVING
  }
}

// Limits, each with a daemon of its own.

TEST(DaemonLimits, TheSessionCapIsResourceExhausted) {
  MakeMedia();
  DaemonProcess daemon({"--max-sessions", "1"});
  ASSERT_TRUE(daemon.ready());
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  TranscodeCall held;
  held.spec = ContainerSpec();
  AddRendition(&held.spec, 0, 0);
  held.half_close = false;
  held.deadline_s = 3;  // ends it after the second call was refused
  TranscodeOutcome held_out;
  std::atomic<bool> started{false};
  held.on_response = [&](const v1::TranscodeResponse&, grpc::ClientContext*) {};
  std::thread t([&] {
    started = true;
    held_out = RunTranscode(stub.get(), held);
  });
  // Wait until the first session exists.
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    v1::ServerStatus st;
    if (stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &st).ok() && st.sessions_active() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  TranscodeCall second;
  second.spec = ContainerSpec();
  AddRendition(&second.spec, 0, 0);
  const TranscodeOutcome out = RunTranscode(stub.get(), second);
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << out.status.error_message();
  t.join();
  EXPECT_EQ(held_out.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST(DaemonLimits, AnIdleSessionEndsWithDeadlineExceeded) {
  DaemonProcess daemon({"--idle-timeout", "1"});
  ASSERT_TRUE(daemon.ready());
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  TranscodeCall idle;
  idle.spec = ContainerSpec();
  AddRendition(&idle.spec, 0, 0);
  idle.half_close = false;  // sends nothing after the spec
  const auto t0 = std::chrono::steady_clock::now();
  const TranscodeOutcome out = RunTranscode(stub.get(), idle);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(out.status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << out.status.error_message();
  EXPECT_NE(out.status.error_message().find("idle"), std::string::npos);
  EXPECT_LT(seconds, 10);
  EXPECT_EQ(daemon.Stop(), 0);
}

TEST(DaemonLimits, SigtermDrainsRunningSessionsAndRefusesNewOnes) {
  MakeMedia();
  DaemonProcess daemon;
  ASSERT_TRUE(daemon.ready());
  auto stub = v1::Transcoder::NewStub(daemon.Channel());
  const testing::SyntheticFrame frame = testing::MakeSyntheticFrame(64, 48, PixelFormat::kRgb24, 3);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  TranscodeCall running;
  running.spec = RawSpec(v1::PIXEL_FORMAT_RGB24, 64, 48);
  AddRendition(&running.spec, 0, 0);
  running.send_input = [&](TranscodeStream* s) {
    if (!SendRawFrame(s, frame.bytes, 0, 1 << 20)) return false;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    return SendRawFrame(s, frame.bytes, 1, 1 << 20);
  };
  TranscodeOutcome running_out;
  std::thread t([&] { running_out = RunTranscode(stub.get(), running); });
  for (int i = 0; i < 200; ++i) {
    grpc::ClientContext ctx;
    v1::ServerStatus st;
    if (stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &st).ok() && st.sessions_active() == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::thread stopper([&] { EXPECT_EQ(daemon.Stop(), 0); });
  // New streams are refused while the running one drains.
  grpc::StatusCode refused = grpc::StatusCode::OK;
  for (int i = 0; i < 200 && refused != grpc::StatusCode::UNAVAILABLE; ++i) {
    TranscodeCall late;
    late.spec = ContainerSpec();
    AddRendition(&late.spec, 0, 0);
    late.half_close = false;
    late.deadline_s = 1;
    refused = RunTranscode(stub.get(), late).status.error_code();
  }
  EXPECT_EQ(refused, grpc::StatusCode::UNAVAILABLE);
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  t.join();
  stopper.join();
  ASSERT_TRUE(running_out.status.ok()) << running_out.status.error_message();
  EXPECT_EQ(running_out.frames.at(0).size(), 2u);
}


}  // namespace
}  // namespace conveyor::e2e

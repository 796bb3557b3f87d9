// conveyorctl against a scripted fake Transcoder on a unix socket: input chunking (files
// at most 1 MiB a message, raw frames split with end_of_frame on each frame's last
// chunk), output reassembly into JPEG and container files, and statuses turned into
// exit codes and "conveyorctl: CODE: message".
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "config_test_util.h"
#include "ctl_test_fixture.h"
#include "fake_transcoder.h"
#include "transcode_command.h"

namespace conveyor::ctl {
namespace {

using testing::FakeServer;
using testing::FakeTranscoder;

TEST_F(ConveyorctlTest, ContainerInputIsSentInChunksOfAtMostOneMiB) {
  const std::string input = Pattern(2 * kMiB + kMiB / 2 + 7, 1);
  WriteWholeFile(Path("in.mkv"), input);
  fake_.responses = {Started(), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mkv"), "-o", Path("frames"), "--format-hint", "matroska",
                 "--label", "clip one", "--no-seek"}),
            0)
      << err_;
  const auto requests = fake_.Requests();
  ASSERT_EQ(requests.size(), 4u);
  ASSERT_TRUE(requests[0].has_spec());
  const v1::JobSpec& spec = requests[0].spec();
  EXPECT_TRUE(spec.has_container());
  EXPECT_FALSE(spec.container().seekable());  // --no-seek: streamed, as from a pipe
  EXPECT_EQ(spec.container().format_hint(), "matroska");
  EXPECT_EQ(spec.client_label(), "clip one");
  ASSERT_EQ(spec.renditions_size(), 1);  // the default: source size
  EXPECT_EQ(spec.renditions(0).width(), 0u);
  EXPECT_TRUE(spec.output().has_frames());
  std::string received;
  for (size_t i = 1; i < requests.size(); ++i) {
    ASSERT_EQ(requests[i].message_case(), v1::TranscodeRequest::kContainerChunk);
    EXPECT_LE(requests[i].container_chunk().size(), kChunkBytes);
    received += requests[i].container_chunk();
  }
  EXPECT_EQ(requests[1].container_chunk().size(), kMiB);
  EXPECT_EQ(requests[2].container_chunk().size(), kMiB);
  EXPECT_EQ(received, input);
  EXPECT_NE(out_.find("session s-1 on cpu (2 threads)"), std::string::npos) << out_;
  EXPECT_NE(out_.find("done: 2 frames in"), std::string::npos) << out_;
}

// A regular file goes seekable: ranges of at most 1 MiB from offset 0, and from each
// ReadRequest's offset with its seek_id, each run ending with end_of_input.
TEST_F(ConveyorctlTest, AFileIsSentSeekableAndReadRequestsAreAnsweredFromTheirOffsets) {
  const std::string input = Pattern(2 * kMiB + 11, 9);
  WriteWholeFile(Path("in.mp4"), input);
  v1::ReadRequest past, back;
  past.set_seek_id(1);
  past.set_offset(kMiB + kMiB / 2);
  back.set_seek_id(2);
  back.set_offset(100);
  fake_.read_requests = {past, back};
  v1::TranscodeResponse summary = Summary();
  summary.mutable_summary()->set_read_requests(2);
  fake_.responses = {Started(), summary};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames")}), 0) << err_;
  const auto requests = fake_.Requests();
  ASSERT_FALSE(requests.empty());
  const v1::JobSpec& spec = requests[0].spec();
  EXPECT_TRUE(spec.container().seekable());
  EXPECT_EQ(spec.container().size(), input.size());
  // Each run, in order: seek_id, first offset, the bytes it carried, and its end flag.
  struct RangeRun {
    uint64_t seek_id, offset;
    std::string data;
    bool ended = false;
  };
  std::vector<RangeRun> runs;
  for (size_t i = 1; i < requests.size(); ++i) {
    ASSERT_EQ(requests[i].message_case(), v1::TranscodeRequest::kContainerRange) << "request " << i;
    const v1::ContainerRange& r = requests[i].container_range();
    EXPECT_LE(r.data().size(), kChunkBytes);
    if (runs.empty() || runs.back().seek_id != r.seek_id()) {
      ASSERT_TRUE(runs.empty() || runs.back().ended) << "a new run before the last one ended";
      runs.push_back({r.seek_id(), r.offset(), "", false});
    }
    EXPECT_EQ(r.offset(), runs.back().offset + runs.back().data.size()) << "request " << i;
    runs.back().data += r.data();
    runs.back().ended = r.end_of_input();
  }
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].seek_id, 0u);
  EXPECT_EQ(runs[0].offset, 0u);
  EXPECT_EQ(runs[0].data, input);
  EXPECT_EQ(runs[1].seek_id, 1u);
  EXPECT_EQ(runs[1].offset, past.offset());
  EXPECT_EQ(runs[1].data, input.substr(past.offset()));
  EXPECT_EQ(runs[2].seek_id, 2u);
  EXPECT_EQ(runs[2].data, input.substr(100));
  for (const RangeRun& r : runs) EXPECT_TRUE(r.ended);
  EXPECT_NE(out_.find("read requests: 2"), std::string::npos) << out_;
}

TEST_F(ConveyorctlTest, StdinInputAndDefaultLabel) {
  const std::string input = Pattern(kMiB + 3, 2);
  WriteWholeFile(Path("in.ts"), input);
  const int saved = dup(STDIN_FILENO);
  const int fd = open(Path("in.ts").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  dup2(fd, STDIN_FILENO);
  close(fd);
  const int rc = Run({"transcode", "-", "-o", Path("frames")});
  dup2(saved, STDIN_FILENO);
  close(saved);
  ASSERT_EQ(rc, 0) << err_;
  const auto requests = fake_.Requests();
  ASSERT_GE(requests.size(), 2u);
  EXPECT_EQ(requests[0].spec().client_label(), "stdin");
  std::string received;
  for (size_t i = 1; i < requests.size(); ++i) received += requests[i].container_chunk();
  EXPECT_EQ(received, input);

  WriteWholeFile(Path("named.mp4"), "x");
  ASSERT_EQ(Run({"transcode", Path("named.mp4"), "-o", Path("frames")}), 0) << err_;
  EXPECT_EQ(fake_.Requests().at(requests.size()).spec().client_label(), "named.mp4");
}

TEST_F(ConveyorctlTest, RawFramesAreSplitWithEndOfFrameOnTheLastChunk) {
  // rgb24 800x600 is 1,440,000 bytes a frame: two chunks each.
  const size_t frame = 800 * 600 * 3;
  const std::string input = Pattern(3 * frame, 3);
  WriteWholeFile(Path("in.rgb"), input);
  ASSERT_EQ(Run({"transcode", Path("in.rgb"), "-o", Path("frames"), "--raw",
                 "rgb24:800x600:30000/1001", "--rendition", "400x300:90:444"}),
            0)
      << err_;
  const auto requests = fake_.Requests();
  ASSERT_EQ(requests.size(), 7u);
  const v1::JobSpec& spec = requests[0].spec();
  ASSERT_TRUE(spec.has_raw());
  EXPECT_EQ(spec.raw().pixel_format(), v1::PIXEL_FORMAT_RGB24);
  EXPECT_EQ(spec.raw().width(), 800u);
  EXPECT_EQ(spec.raw().height(), 600u);
  EXPECT_EQ(spec.raw().frame_rate().num(), 30000);
  EXPECT_EQ(spec.raw().frame_rate().den(), 1001);
  ASSERT_EQ(spec.renditions_size(), 1);
  EXPECT_EQ(spec.renditions(0).width(), 400u);
  EXPECT_EQ(spec.renditions(0).height(), 300u);
  EXPECT_EQ(spec.renditions(0).quality(), 90u);
  EXPECT_EQ(spec.renditions(0).subsampling(), v1::SUBSAMPLING_444);
  std::string received;
  for (size_t i = 1; i < requests.size(); ++i) {
    ASSERT_TRUE(requests[i].has_frame_chunk());
    const v1::RawFrameChunk& c = requests[i].frame_chunk();
    const bool last = (i % 2) == 0;
    EXPECT_EQ(c.pts(), static_cast<int64_t>((i - 1) / 2)) << i;
    EXPECT_EQ(c.end_of_frame(), last) << i;
    EXPECT_EQ(c.data().size(), last ? frame - kMiB : kMiB) << i;
    received += c.data();
  }
  EXPECT_EQ(received, input);
}

TEST_F(ConveyorctlTest, SmallRawFramesTakeOneChunkEach) {
  const size_t frame = 64 * 48 * 3 / 2;  // yuv420p
  WriteWholeFile(Path("in.yuv"), Pattern(5 * frame, 4));
  ASSERT_EQ(Run({"transcode", Path("in.yuv"), "-o", Path("frames"), "--raw", "yuv420p:64x48"}), 0)
      << err_;
  const auto requests = fake_.Requests();
  ASSERT_EQ(requests.size(), 6u);
  EXPECT_EQ(requests[0].spec().raw().frame_rate().num(), 25);
  for (size_t i = 1; i < requests.size(); ++i) {
    EXPECT_EQ(requests[i].frame_chunk().pts(), static_cast<int64_t>(i - 1));
    EXPECT_TRUE(requests[i].frame_chunk().end_of_frame());
    EXPECT_EQ(requests[i].frame_chunk().data().size(), frame);
  }
}

TEST_F(ConveyorctlTest, PartialRawFrameIsALocalError) {
  const size_t frame = 64 * 48 * 3 / 2;
  WriteWholeFile(Path("in.yuv"), Pattern(2 * frame + 100, 5));
  EXPECT_EQ(Run({"transcode", Path("in.yuv"), "-o", Path("frames"), "--raw", "yuv420p:64x48"}),
            kExitFailed);
  EXPECT_NE(err_.find("conveyorctl: INVALID_ARGUMENT: "), std::string::npos) << err_;
  EXPECT_NE(err_.find("ends inside frame 2: it has 100 of the 4608 bytes"), std::string::npos)
      << err_;
}

TEST_F(ConveyorctlTest, JpegPacketsAreReassembledIntoFiles) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started(),
                     Packet(0, 0, "AB", false),
                     Packet(1, 0, "xyz", true),  // the other rendition in between
                     ProgressMsg(),
                     Packet(0, 0, "CD", true),
                     Packet(0, 1, "E", true),
                     Packet(1, 1, std::string("\xff\xd8\0\xff\xd9", 5), true),
                     Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out/frames"), "--rendition", "64x48",
                 "--rendition", "32x0:50", "--progress"}),
            0)
      << err_;
  EXPECT_EQ(ReadWholeFile(Path("out/frames/0-000000.jpg")), "ABCD");
  EXPECT_EQ(ReadWholeFile(Path("out/frames/0-000001.jpg")), "E");
  EXPECT_EQ(ReadWholeFile(Path("out/frames/1-000000.jpg")), "xyz");
  EXPECT_EQ(ReadWholeFile(Path("out/frames/1-000001.jpg")), std::string("\xff\xd8\0\xff\xd9", 5));
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(Path("out/frames")),
                          std::filesystem::directory_iterator()),
            4);
  EXPECT_NE(err_.find("progress: 1 frames in, 1 out, 12.5 fps"), std::string::npos) << err_;
  EXPECT_NE(out_.find("wrote 4 JPEG files"), std::string::npos) << out_;
  const v1::JobSpec spec = fake_.Requests()[0].spec();
  ASSERT_EQ(spec.renditions_size(), 2);
  EXPECT_EQ(spec.renditions(1).width(), 32u);
  EXPECT_EQ(spec.renditions(1).height(), 0u);
  EXPECT_EQ(spec.renditions(1).quality(), 50u);
}

TEST_F(ConveyorctlTest, UnfinishedFrameAtTheEndIsAnError) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started(), Packet(0, 0, "AB", true), Packet(0, 1, "C", false)};
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames")}), kExitFailed);
  EXPECT_NE(err_.find("conveyorctl: INTERNAL: the stream ended inside frame 1"), std::string::npos)
      << err_;
  EXPECT_FALSE(std::filesystem::exists(Path("frames/0-000001.jpg")));
  EXPECT_FALSE(std::filesystem::exists(Path("frames")));  // frame 0 and the directory went too
}

// Entries of the test directory other than the input, the socket and `keep`.
std::vector<std::string> Leftovers(const std::string& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name != "in.mp4" && name != "fake.sock" && std::find(keep.begin(), keep.end(), name) == keep.end()) {
      found.push_back(name);
    }
  }
  return found;
}

TEST_F(ConveyorctlTest, AFailedCallLeavesNothingUnlessAskedToKeepIt) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started(), Chunk(0, "abc", 0), Chunk(1, "12", 0)};
  fake_.status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "input: broken");
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out.mkv"), "--container", "mkv", "--rendition", "64x48",
                 "--rendition", "32x24"}),
            kExitFailed);
  EXPECT_EQ(Leftovers(dir_.path(), {}), std::vector<std::string>{});  // no output, no temporary file
  fake_.responses = {Started(), Packet(0, 0, "AB", true), Packet(0, 1, "C", true)};
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames")}), kExitFailed);
  EXPECT_EQ(Leftovers(dir_.path(), {}), std::vector<std::string>{});

  // --keep-partial: what came, under the final names, as the ffmpeg CLI leaves it.
  fake_.responses = {Started(), Chunk(0, "abc", 0), Chunk(1, "12", 0)};
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out.mkv"), "--container", "mkv", "--rendition", "64x48",
                 "--rendition", "32x24", "--keep-partial"}),
            kExitFailed);
  EXPECT_EQ(ReadWholeFile(Path("out.mkv")), "abc");
  EXPECT_EQ(ReadWholeFile(Path("out.1.mkv")), "12");
  fake_.responses = {Started(), Packet(0, 0, "AB", true), Packet(0, 1, "C", true)};
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames"), "--keep-partial"}), kExitFailed);
  EXPECT_EQ(ReadWholeFile(Path("frames/0-000001.jpg")), "C");
  EXPECT_EQ(Leftovers(dir_.path(), {"out.mkv", "out.1.mkv", "frames"}), std::vector<std::string>{});
}

TEST_F(ConveyorctlTest, NothingIsCreatedWhenTheDaemonRefusesTheJob) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.mode = FakeTranscoder::Mode::kFailAfterSpec;
  fake_.status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "64 sessions running");
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("new/dir/frames")}), kExitFailed);
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out.mov"), "--container", "mov"}), kExitFailed);
  EXPECT_EQ(Leftovers(dir_.path(), {}), std::vector<std::string>{});
}

TEST_F(ConveyorctlTest, TheDaemonsOwnUnavailableGetsNoHintAboutListening) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.mode = FakeTranscoder::Mode::kFailAfterSpec;
  fake_.status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is draining; retry on another instance");
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames")}), kExitFailed);
  EXPECT_NE(err_.find("UNAVAILABLE: the server is draining"), std::string::npos) << err_;
  EXPECT_EQ(err_.find("is conveyord listening"), std::string::npos) << err_;
}

TEST_F(ConveyorctlTest, ContainerOutputGoesToOneFilePerRendition) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started(), Chunk(0, "abc", 0), Chunk(1, "12", 0), Chunk(0, "def", 3), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out.mkv"), "--container", "mkv",
                 "--rendition", "64x48", "--rendition", "32x24", "--audio", "--strict"}),
            0)
      << err_;
  EXPECT_EQ(ReadWholeFile(Path("out.mkv")), "abcdef");
  EXPECT_EQ(ReadWholeFile(Path("out.1.mkv")), "12");
  const v1::JobSpec spec = fake_.Requests()[0].spec();
  EXPECT_EQ(spec.output().container().format(), v1::CONTAINER_FORMAT_MATROSKA);
  EXPECT_TRUE(spec.audio_passthrough());
  EXPECT_TRUE(spec.container().strict());
  EXPECT_FALSE(spec.has_autorotate());  // absent: the daemon's default, autorotate
  EXPECT_EQ(spec.deinterlace(), v1::DEINTERLACE_AUTO);
}

TEST_F(ConveyorctlTest, ContainerOutputToStdout) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started(), Chunk(0, "abc", 0), Chunk(0, "def", 3), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", "-", "--container", "avi", "--no-autorotate", "--deinterlace",
                 "off"}),
            0)
      << err_;
  EXPECT_TRUE(fake_.Requests()[0].spec().has_autorotate());
  EXPECT_FALSE(fake_.Requests()[0].spec().autorotate());
  EXPECT_EQ(fake_.Requests()[0].spec().deinterlace(), v1::DEINTERLACE_OFF);
  EXPECT_EQ(out_, "abcdef");  // nothing but the container
  EXPECT_NE(err_.find("session s-1"), std::string::npos) << err_;
  EXPECT_EQ(fake_.Requests()[0].spec().output().container().format(), v1::CONTAINER_FORMAT_AVI);
  EXPECT_FALSE(fake_.Requests()[0].spec().output().container().seekable()) << "stdout takes live output";
}

// A file is written at each chunk's offset: the daemon goes back to finish its container.
TEST_F(ConveyorctlTest, AContainerFileIsSeekableOutputWrittenAtEachOffset) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started(), Chunk(0, "abcdef", 0), Chunk(0, "XY", 1), Chunk(0, "gh", 6), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out.mov")}), 0) << err_;
  EXPECT_TRUE(fake_.Requests()[0].spec().output().container().seekable());
  EXPECT_EQ(fake_.Requests()[0].spec().output().container().format(), v1::CONTAINER_FORMAT_MOV);
  EXPECT_EQ(ReadWholeFile(Path("out.mov")), "aXYdefgh");
  // Past the end would leave a hole: the server is wrong, and the file is not kept.
  fake_.responses = {Started(), Chunk(0, "abc", 0), Chunk(0, "d", 5), Summary()};
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("hole.mov")}), kExitFailed);
  EXPECT_NE(err_.find("past the end"), std::string::npos) << err_;
  EXPECT_FALSE(std::filesystem::exists(Path("hole.mov")));
}

// A MOV file asks for faststart, and the moov chunk is inserted: what was written after
// its offset moves on, across several of the copy's blocks.
TEST_F(ConveyorctlTest, AMovFileAsksForFaststartAndInsertsTheMoov) {
  WriteWholeFile(Path("in.mp4"), "container");
  // The container output asked for by the last call.
  auto asked = [this] {
    const std::vector<v1::TranscodeRequest> requests = fake_.Requests();
    for (auto r = requests.rbegin(); r != requests.rend(); ++r) {
      if (r->has_spec()) return r->spec().output().container();
    }
    return v1::ContainerOutput();
  };
  const std::string body = Pattern(9 * kMiB + 123, 3);
  const size_t third = body.size() / 3;
  fake_.responses = {Started(), Chunk(0, body.substr(0, third), 0), Chunk(0, body.substr(third, third), third),
                     Chunk(0, body.substr(2 * third), 2 * third), Insert(0, "MOOV", 20), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out.mov")}), 0) << err_;
  EXPECT_TRUE(asked().faststart());
  const std::string out = ReadWholeFile(Path("out.mov"));
  EXPECT_TRUE(out == body.substr(0, 20) + "MOOV" + body.substr(20)) << "the insert did not move the bytes on";

  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("end.mov"), "--no-faststart"}), 0) << err_;
  EXPECT_TRUE(asked().seekable());
  EXPECT_FALSE(asked().faststart());
  fake_.responses = {Started(), Chunk(0, "abc", 0), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("out.mkv")}), 0) << err_;
  EXPECT_FALSE(asked().faststart()) << "faststart is MOV's";
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", "-", "--container", "mov"}), 0) << err_;
  EXPECT_FALSE(asked().faststart()) << "stdout cannot be moved in";

  // An insert past the end is the server's fault, and leaves no file.
  fake_.responses = {Started(), Chunk(0, "abc", 0), Insert(0, "d", 5), Summary()};
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("bad.mov")}), kExitFailed);
  EXPECT_NE(err_.find("past the end"), std::string::npos) << err_;
  EXPECT_FALSE(std::filesystem::exists(Path("bad.mov")));
}

TEST_F(ConveyorctlTest, ServerErrorsBecomeExitCodeAndMessage) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started()};
  fake_.status = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "rendition 0: quality 0");
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames")}), kExitFailed);
  EXPECT_NE(err_.find("conveyorctl: INVALID_ARGUMENT: rendition 0: quality 0\n"), std::string::npos)
      << err_;

  fake_.status = grpc::Status(grpc::StatusCode::ABORTED, "worker restarted");
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames")}), kExitFailed);
  EXPECT_NE(err_.find("conveyorctl: ABORTED: worker restarted"), std::string::npos) << err_;
}

TEST_F(ConveyorctlTest, EarlyServerErrorDoesNotHangALargeUpload) {
  WriteWholeFile(Path("big.mp4"), Pattern(24 * kMiB, 6));
  fake_.mode = FakeTranscoder::Mode::kFailAfterSpec;
  fake_.status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "64 sessions running");
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Run({"transcode", Path("big.mp4"), "-o", Path("frames")}), kExitFailed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(err_.find("conveyorctl: RESOURCE_EXHAUSTED: 64 sessions running"), std::string::npos)
      << err_;
}

TEST_F(ConveyorctlTest, EarlyServerErrorWhileStdinIsIdle) {
  // stdin is a pipe that stays open and silent, like a live source that has paused: the
  // writer thread must stop waiting for it once the call is over.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int saved = dup(STDIN_FILENO);
  dup2(fds[0], STDIN_FILENO);
  close(fds[0]);
  fake_.mode = FakeTranscoder::Mode::kFailAfterSpec;
  fake_.status = grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "no decoder for this input");
  const auto start = std::chrono::steady_clock::now();
  const int rc = Run({"transcode", "-", "-o", Path("frames")});
  const auto took = std::chrono::steady_clock::now() - start;
  dup2(saved, STDIN_FILENO);
  close(saved);
  close(fds[1]);
  EXPECT_EQ(rc, kExitFailed);
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_NE(err_.find("conveyorctl: UNIMPLEMENTED: no decoder for this input"), std::string::npos)
      << err_;
}

TEST_F(ConveyorctlTest, TimeoutEndsTheCall) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.mode = FakeTranscoder::Mode::kWaitForCancel;
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames"), "--timeout", "0.3"}),
            kExitFailed);
  EXPECT_NE(err_.find("conveyorctl: DEADLINE_EXCEEDED"), std::string::npos) << err_;
}

TEST_F(ConveyorctlTest, StatusTableAndJson) {
  v1::ServerStatus& s = fake_.server_status;
  s.set_version("0.1.0");
  s.set_sessions_active(2);
  s.set_max_sessions(64);
  v1::WorkerStatus* w = s.add_workers();
  w->set_name("gpu 0");
  w->set_backend("hip-nvidia");
  w->set_device("NVIDIA H200");
  w->set_device_memory_bytes(140ull << 30);
  w->set_device_memory_used_bytes(3ull << 30);
  w->set_pinned_bytes(96ull << 20);
  w->set_sessions(2);
  w->set_frames_done(1234);
  ASSERT_EQ(Run({"status"}), 0) << err_;
  EXPECT_NE(out_.find("conveyord 0.1.0: 2 of 64 sessions\n"), std::string::npos) << out_;
  EXPECT_NE(out_.find("WORKER"), std::string::npos) << out_;
  EXPECT_NE(out_.find("NVIDIA H200"), std::string::npos) << out_;
  EXPECT_NE(out_.find("3 GiB / 140 GiB"), std::string::npos) << out_;
  EXPECT_NE(out_.find("1234"), std::string::npos) << out_;

  ASSERT_EQ(Run({"status", "--json"}), 0) << err_;
  EXPECT_EQ(std::count(out_.begin(), out_.end(), '\n'), 1) << out_;
  EXPECT_NE(out_.find("\"sessions_active\":2"), std::string::npos) << out_;
  EXPECT_NE(out_.find("\"draining\":false"), std::string::npos) << out_;  // zeros included
  EXPECT_NE(out_.find("\"device\":\"NVIDIA H200\""), std::string::npos) << out_;
}

TEST_F(ConveyorctlTest, SessionsTableAndJson) {
  ASSERT_EQ(Run({"sessions"}), 0) << err_;
  EXPECT_EQ(out_, "no sessions\n");
  v1::SessionInfo* info = fake_.sessions.add_sessions();
  info->set_session_id("abc123");
  info->set_client_label("camera 7");
  info->set_worker("cpu (2 threads)");
  info->mutable_started_at()->set_seconds(std::chrono::duration_cast<std::chrono::seconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count() -
                                          125);
  info->set_frames_in(300);
  info->set_frames_out(298);
  ASSERT_EQ(Run({"sessions"}), 0) << err_;
  EXPECT_NE(out_.find("SESSION"), std::string::npos) << out_;
  EXPECT_NE(out_.find("abc123"), std::string::npos) << out_;
  EXPECT_NE(out_.find("camera 7"), std::string::npos) << out_;
  EXPECT_NE(out_.find("2m0"), std::string::npos) << out_;  // 2m05s, give or take a second
  ASSERT_EQ(Run({"sessions", "--json"}), 0) << err_;
  EXPECT_NE(out_.find("\"session_id\":\"abc123\""), std::string::npos) << out_;
  EXPECT_NE(out_.find("\"frames_in\":\"300\""), std::string::npos) << out_;  // uint64 as string
}

TEST_F(ConveyorctlTest, Cancel) {
  fake_.known_sessions = {"abc123"};
  ASSERT_EQ(Run({"cancel", "abc123"}), 0) << err_;
  EXPECT_EQ(out_, "cancelled abc123\n");
  EXPECT_EQ(fake_.Cancelled(), std::vector<std::string>{"abc123"});
  EXPECT_EQ(Run({"cancel", "nope"}), kExitFailed);
  EXPECT_EQ(err_, "conveyorctl: NOT_FOUND: no session nope\n");
}

TEST_F(ConveyorctlTest, UnreachableServer) {
  std::vector<std::string> args = {"status", "--timeout", "5"};
  const std::string missing = "unix:" + dir_.path() + "/nobody.sock";
  args.insert(args.begin(), "conveyorctl");
  args.push_back("--target");
  args.push_back(missing);
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  EXPECT_EQ(RunConveyorctl(static_cast<int>(argv.size()), argv.data(), out, err), kExitFailed);
  EXPECT_NE(err.str().find("conveyorctl: UNAVAILABLE: "), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("is conveyord listening on " + missing), std::string::npos) << err.str();

  // A transcode to an unreachable daemon makes no output directory.
  WriteWholeFile(Path("in.mp4"), "container");
  const std::vector<std::string> transcode = {"conveyorctl", "transcode", Path("in.mp4"), "-o", Path("frames"),
                                              "--target", missing, "--timeout", "5"};
  argv.clear();
  for (const std::string& a : transcode) argv.push_back(a.c_str());
  EXPECT_EQ(RunConveyorctl(static_cast<int>(argv.size()), argv.data(), out, err), kExitFailed);
  EXPECT_FALSE(std::filesystem::exists(Path("frames")));
}

TEST_F(ConveyorctlTest, UsageErrorsExitTwoAndSendNothing) {
  WriteWholeFile(Path("in.mp4"), "x");
  EXPECT_EQ(Run({"transcode", Path("in.mp4")}), kExitUsage);  // no -o
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("f"), "--rendition", "big"}), kExitUsage);
  EXPECT_NE(err_.find("--rendition 'big'"), std::string::npos) << err_;
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("f"), "--container", "mp4"}), kExitUsage);
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("f"), "--audio"}), kExitUsage);
  EXPECT_EQ(Run({"transcode", Path("in.yuv"), "-o", Path("f"), "--raw", "yuv420p:64x48", "--strict"}), kExitUsage);
  EXPECT_NE(err_.find("--strict is for container input"), std::string::npos) << err_;
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", "-"}), kExitUsage);
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", "-", "--container", "mkv", "--rendition", "1x1",
                 "--rendition", "2x2"}),
            kExitUsage);
  EXPECT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("f"), "--raw", "yuv420p:0x10"}),
            kExitUsage);
  EXPECT_EQ(Run({"status", "--bogus"}), kExitUsage);
  EXPECT_EQ(Run({}), kExitUsage);
  EXPECT_TRUE(fake_.Requests().empty());
  EXPECT_EQ(Run({"transcode", Path("missing.mp4"), "-o", Path("f")}), kExitFailed);
  EXPECT_NE(err_.find("conveyorctl: NOT_FOUND: cannot open input"), std::string::npos) << err_;
  EXPECT_FALSE(std::filesystem::exists(Path("f")));  // nothing created for a failed start
}

// --size 1280 is 1280x0, as the ffmpeg CLI's scale=1280:-2; a bad size names the flag
// the user typed.
TEST_F(ConveyorctlTest, ASizeIsAWidthAloneAndItsErrorNamesTheFlag) {
  WriteWholeFile(Path("in.mp4"), "container");
  fake_.responses = {Started(), Summary()};
  ASSERT_EQ(Run({"transcode", Path("in.mp4"), "-o", Path("frames"), "--size", "1280"}), 0) << err_;
  ASSERT_EQ(fake_.Requests().at(0).spec().renditions_size(), 1);
  EXPECT_EQ(fake_.Requests().at(0).spec().renditions(0).width(), 1280u);
  EXPECT_EQ(fake_.Requests().at(0).spec().renditions(0).height(), 0u);
  EXPECT_NE(Run({"transcode", Path("in.mp4"), "-o", Path("frames"), "--size", "1280y"}), 0);
  EXPECT_NE(err_.find("--size '1280y': '1280y' is not WxH (expected WxH, or W to keep the aspect ratio"),
            std::string::npos)
      << err_;
  EXPECT_NE(Run({"transcode", Path("in.mp4"), "-o", Path("frames"), "--renditions", "1920x1080,640,x5"}), 0);
  EXPECT_NE(err_.find("--renditions 'x5'"), std::string::npos) << err_;
  EXPECT_NE(Run({"transcode", Path("in.mp4"), "-o", Path("frames"), "--rendition", "640x:80"}), 0);
  EXPECT_NE(err_.find("--rendition '640x:80'"), std::string::npos) << err_;
}

TEST(ConveyorctlParse, RenditionsRawAndPaths) {
  auto r = ParseRendition("1920x1080:75:4:2:2");
  EXPECT_FALSE(r.ok());  // the colon form of subsampling is ambiguous here
  r = ParseRendition("1920x1080:75:422");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->subsampling(), v1::SUBSAMPLING_422);
  EXPECT_EQ(r->name(), "1920x1080");
  EXPECT_FALSE(ParseRendition("0x720").ok());
  EXPECT_FALSE(ParseRendition("100x100:0").ok());
  EXPECT_FALSE(ParseRendition("100x100:101").ok());
  EXPECT_FALSE(ParseRendition("100x100:80:411").ok());
  EXPECT_FALSE(ParseRendition("20000x100").ok());

  auto raw = ParseRawInput("nv12:1280x720:29.97");
  ASSERT_TRUE(raw.ok()) << raw.status().ToString();
  EXPECT_EQ(raw->pixel_format(), v1::PIXEL_FORMAT_NV12);
  EXPECT_EQ(raw->frame_rate().num(), 2997);
  EXPECT_EQ(raw->frame_rate().den(), 100);
  EXPECT_FALSE(ParseRawInput("yuv410p:10x10").ok());
  EXPECT_FALSE(ParseRawInput("rgb24:10x10:0").ok());
  EXPECT_FALSE(ParseRawInput("rgb24:10x10:fast").ok());
  EXPECT_FALSE(ParseRawInput("rgb24").ok());

  EXPECT_EQ(JpegFramePath("out", 2, 17), "out/2-000017.jpg");
  EXPECT_EQ(JpegFramePath("out", 0, 1234567), "out/0-1234567.jpg");
  EXPECT_EQ(ContainerOutputPath("dir/out.mkv", 0, "mkv"), "dir/out.mkv");
  EXPECT_EQ(ContainerOutputPath("dir/out.mkv", 2, "mkv"), "dir/out.2.mkv");
  EXPECT_EQ(ContainerOutputPath("dir/out", 1, "mov"), "dir/out.1.mov");
}

}  // namespace
}  // namespace conveyor::ctl

// End-to-end: conveyorctl writing a container to a file gets it finished as the ffmpeg CLI
// finishes one (ContainerOutput.seekable): a duration, an index to seek with, MOV not
// fragmented and with its moov in front (+faststart); and the same JPEG payloads as the
// live output that goes to stdout.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "test_files.h"

#ifdef CONVEYORCTL_PATH

namespace conveyor::e2e {
namespace {

using conveyor::testing::ReadText;

// 100 frames of H.264 at 25 frames/s: 4 s, a keyframe every 25 frames.
const std::string& Input() {
  static const std::string path = [] {
    const std::string p = MakeTempDir() + "/in.mp4";
    if (Shell("ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 100 -g 25 "
              "-c:v libx264 -pix_fmt yuv420p " + p) != 0) {
      return std::string();
    }
    return p;
  }();
  return path;
}

class FinishedContainerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Input().empty()) << "ffmpeg could not make the input";
    ASSERT_TRUE(daemon_.ready());
    dir_ = MakeTempDir();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Ctl() const {
    return std::string(CONVEYORCTL_PATH) + " --target " + daemon_.target() + " transcode " + Input() +
           " --no-progress-bar";
  }
  // `command`'s stdout, trailing line breaks dropped.
  std::string Run(const std::string& command) {
    Shell(command + " > " + dir_ + "/run.out 2>" + dir_ + "/run.err");
    std::string text = ReadText(dir_ + "/run.out");
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }
  // The md5 of each video packet, in order.
  std::string PacketSums(const std::string& path) {
    return Run("ffmpeg -v error -i " + path + " -map 0:v -c copy -f framemd5 - | grep -v '^#' | sed 's/.*,//'");
  }

  std::string TopLevelBoxes(const std::string& path);

  DaemonProcess daemon_;
  std::string dir_;
};

TEST_P(FinishedContainerTest, AFileGetsItsDurationAndIndexAndTheLivePayloads) {
  const std::string ext = GetParam();
  const std::string file = dir_ + "/out." + ext;
  const std::string live = dir_ + "/live." + ext;
  ASSERT_EQ(Shell(Ctl() + " -o " + file + " > /dev/null 2>" + dir_ + "/err"), 0) << ReadText(dir_ + "/err");
  ASSERT_EQ(Shell(Ctl() + " -o - --container " + ext + " > " + live + " 2>" + dir_ + "/err"), 0)
      << ReadText(dir_ + "/err");

  EXPECT_EQ(Run("ffprobe -v error -show_entries format=duration -of csv=p=0 " + file), "4.000000") << ext;
  const std::string sums = PacketSums(file);
  EXPECT_EQ(std::count(sums.begin(), sums.end(), '\n'), 99) << sums;
  EXPECT_EQ(sums, PacketSums(live)) << "the JPEG payloads differ from the live output's";
  // Seeking by the index: the packet at 2 s is read first, and ffmpeg -ss decodes from it.
  EXPECT_EQ(Run("ffprobe -v error -read_intervals 2%+#1 -select_streams v:0 -show_entries packet=pts_time "
                "-of csv=p=0 " + file),
            "2.000000")
      << ext;
  EXPECT_EQ(Run("ffmpeg -v error -ss 3 -i " + file + " -f framemd5 - | grep -vc '^#'"), "25") << ext;
  if (ext == "mov") {
    EXPECT_EQ(Run("grep -c moof " + file), "0") << "a plain MOV has no fragments";
    EXPECT_EQ(TopLevelBoxes(file), "ftyp moov wide mdat") << "the moov goes in front (+faststart)";
  }
}

// The top-level boxes of an MP4/MOV in file order, as FFmpeg's demuxer reads them.
std::string FinishedContainerTest::TopLevelBoxes(const std::string& path) {
  return Run("ffprobe -v trace " + path + " 2>&1 | sed -n \"s/.*type:'\\(....\\)' parent:'root'.*/\\1/p\" | xargs");
}

// --no-faststart leaves the moov after mdat, as the ffmpeg CLI writes a MOV by default,
// and the CLI's own +faststart of that file puts the same bytes after its moov as ours.
TEST_F(FinishedContainerTest, NoFaststartLeavesTheMoovAtTheEndAndTheCliMovesItAsWeDo) {
  const std::string fast = dir_ + "/fast.mov", end = dir_ + "/end.mov", cli = dir_ + "/cli.mov";
  ASSERT_EQ(Shell(Ctl() + " -o " + fast + " > /dev/null 2>" + dir_ + "/err"), 0) << ReadText(dir_ + "/err");
  ASSERT_EQ(Shell(Ctl() + " -o " + end + " --no-faststart > /dev/null 2>" + dir_ + "/err"), 0)
      << ReadText(dir_ + "/err");
  EXPECT_EQ(TopLevelBoxes(end), "ftyp wide mdat moov");
  EXPECT_EQ(TopLevelBoxes(fast), "ftyp moov wide mdat");
  EXPECT_EQ(PacketSums(fast), PacketSums(end));
  ASSERT_EQ(Shell("ffmpeg -v error -i " + end + " -c copy -movflags +faststart " + cli), 0);
  EXPECT_EQ(TopLevelBoxes(cli), "ftyp moov wide mdat");
  // The bytes from wide on: the file less ftyp and moov, whose sizes lead each box.
  auto after_moov = [](const std::string& bytes) {
    auto be32 = [&](size_t at) {
      if (at + 4 > bytes.size()) return bytes.size();
      size_t v = 0;
      for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(bytes[at + i]);
      return v;
    };
    const size_t ftyp = be32(0);
    const size_t moov = be32(ftyp);
    return ftyp + moov <= bytes.size() ? bytes.substr(ftyp + moov) : std::string();
  };
  const std::string ours = after_moov(ReadText(fast));
  EXPECT_GT(ours.size(), 100000u);
  EXPECT_TRUE(ours == after_moov(ReadText(cli))) << "wide and mdat differ from the CLI's +faststart";
}

INSTANTIATE_TEST_SUITE_P(Containers, FinishedContainerTest, ::testing::Values("mkv", "mov", "avi"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace conveyor::e2e

#endif  // CONVEYORCTL_PATH

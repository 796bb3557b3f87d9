// End-to-end: conveyorctl's status line against the real daemon measures the output, not
// the bytes uploaded. Every line's share must match the frames it shows against the frames
// the output has in all (as the container's header and the selection give them), and
// only the last says 100 %.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "daemon_process.h"
#include "test_files.h"
#include "text_match.h"

#ifdef CONVEYORCTL_PATH

namespace conveyor::e2e {
namespace {

using conveyor::testing::AllMatches;
using conveyor::testing::ReadText;

// 10 s at 25 frames/s: 250 frames, which the MP4's header counts.
const std::string& Input() {
  static const std::string path = [] {
    const std::string p = MakeTempDir() + "/ten_seconds.mp4";
    if (Shell("ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=25 -frames:v 250 -c:v libx264 "
              "-preset ultrafast -g 50 " + p) != 0) {
      return std::string();
    }
    return p;
  }();
  return path;
}

struct StatusLine {
  long frame = 0;
  int percent = 0;
};

// The status lines conveyorctl drew: its stderr split at each carriage return.
std::vector<StatusLine> Lines(const std::string& err) {
  std::vector<StatusLine> lines;
  for (const auto& m : AllMatches(err, R"(frame=\s*(\d+) fps=\s*\d+ time=\S+ speed=\S+\s+(\d+)%)")) {
    lines.push_back({std::stol(m[0]), std::stoi(m[1])});
  }
  return lines;
}

class ConveyorctlProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(Input().empty()) << "ffmpeg could not make the input";
    ASSERT_TRUE(daemon_.ready());
    dir_ = MakeTempDir();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Runs conveyorctl with its status line on; returns the lines it drew.
  std::vector<StatusLine> Run(const std::string& args) {
    const std::string err = dir_ + "/err";
    const int rc = Shell(std::string(CONVEYORCTL_PATH) + " --target " + daemon_.target() + " transcode " + Input() +
                         " " + args + " --progress-bar > /dev/null 2> " + err);
    EXPECT_EQ(rc, 0) << ReadText(err);
    return Lines(ReadText(err));
  }

  // Each line's share is its frames' share of `total` within a frame (a line shows the
  // time of its last frame, which is a frame short of where that frame ends) and the
  // rounding down; the last line is the whole, and no other says 100 %.
  void ExpectSharesOfFrames(const std::vector<StatusLine>& lines, long total) {
    ASSERT_FALSE(lines.empty());
    for (size_t i = 0; i < lines.size(); ++i) {
      const double expected = 100.0 * lines[i].frame / total;
      EXPECT_LE(std::abs(lines[i].percent - expected), 100.0 / total + 1.0 + 1e-9)
          << "line " << i << ": frame=" << lines[i].frame << " at " << lines[i].percent << "%";
      if (i + 1 < lines.size()) {
        EXPECT_LT(lines[i].percent, 100) << "line " << i << " says done early";
      }
    }
    EXPECT_EQ(lines.back().frame, total);
    EXPECT_EQ(lines.back().percent, 100);
    std::printf("%zu status lines, the first at frame %ld (%d%%)\n", lines.size(), lines.front().frame,
                lines.front().percent);
  }

  DaemonProcess daemon_;
  std::string dir_;
};

TEST_F(ConveyorctlProgressTest, JpegFramesShowTheShareOfTheOutputDone) {
  ExpectSharesOfFrames(Run("-o " + dir_ + "/frames"), 250);
}

TEST_F(ConveyorctlProgressTest, ASelectionIsTheWhole) {
  // 2 s to 6 s: 100 frames are the whole.
  ExpectSharesOfFrames(Run("-o " + dir_ + "/frames --ss 2 --to 6"), 100);
}

TEST_F(ConveyorctlProgressTest, ContainerOutputGoesByTheDaemonsProgress) {
  const std::vector<StatusLine> lines = Run("-o " + dir_ + "/out.mkv");
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back().frame, 250);
  EXPECT_EQ(lines.back().percent, 100);
  for (size_t i = 0; i + 1 < lines.size(); ++i) EXPECT_LT(lines[i].percent, 100) << "line " << i;
}

}  // namespace
}  // namespace conveyor::e2e

#endif  // CONVEYORCTL_PATH

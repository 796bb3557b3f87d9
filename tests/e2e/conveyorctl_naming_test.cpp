// End-to-end: how the real conveyorctl reads -o as the ffmpeg CLI reads its output (the
// container from the extension, a name pattern for JPEG frames), names frames with
// --name, and indexes them with --index; the times checked against ffprobe's reading of
// the same input, a variable-frame-rate one.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

// Sorted names of the files in `dir`.
std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// 20 frames of H.264 in Matroska: 10 at 25 frames/s, then 10 at 10 frames/s.
const std::string& VfrInput() {
  static const std::string path = [] {
    const std::string p = MakeTempDir() + "/vfr.mkv";
    if (Shell("ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=160x120:rate=25 -frames:v 20 "
              "-vf \"setpts='if(lt(N,10),N*0.04,0.4+(N-10)*0.1)/TB'\" -fps_mode passthrough -c:v libx264 "
              "-pix_fmt yuv420p " + p) != 0) {
      return std::string();
    }
    return p;
  }();
  return path;
}

// Each frame's time in seconds as ffprobe reads `path`.
std::vector<double> ProbeTimes(const std::string& path, const std::string& scratch) {
  Shell("ffprobe -v error -select_streams v:0 -show_entries frame=pts_time -of csv=p=0 " + path + " > " + scratch);
  std::vector<double> times;
  for (const std::string& line : Lines(ReadText(scratch))) times.push_back(std::atof(line.c_str()));
  return times;
}

class ConveyorctlNamingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(VfrInput().empty()) << "ffmpeg could not make the input";
    ASSERT_TRUE(daemon_.ready());
    dir_ = MakeTempDir();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // conveyorctl transcode INPUT ARGS, its exit status; stderr in dir_/err.
  int Ctl(const std::string& args) {
    return Shell(std::string(CONVEYORCTL_PATH) + " --target " + daemon_.target() + " transcode " + VfrInput() +
                 " --no-progress-bar " + args + " >" + dir_ + "/out 2>" + dir_ + "/err");
  }
  std::string Probe(const std::string& entries, const std::string& path) {
    Shell("ffprobe -v error -count_frames -select_streams v:0 -show_entries " + entries + " -of csv=p=0 " + path +
          " > " + dir_ + "/probe");
    std::string text = ReadText(dir_ + "/probe");
    while (!text.empty() && text.back() == '\n') text.pop_back();
    return text;
  }

  DaemonProcess daemon_;
  std::string dir_;
};

TEST_F(ConveyorctlNamingTest, TheExtensionPicksTheContainerAsFfmpegDoes) {
  for (const auto& [name, format] : std::vector<std::pair<std::string, std::string>>{
           {"out.mkv", "matroska,webm"}, {"out.mov", "mov,mp4,m4a,3gp,3g2,mj2"}, {"out.avi", "avi"}}) {
    const std::string path = dir_ + "/" + name;
    ASSERT_EQ(Ctl("-o " + path), 0) << ReadText(dir_ + "/err");
    ASSERT_TRUE(std::filesystem::is_regular_file(path)) << name << " is not a file";
    std::string probed = Probe("format=format_name", path);
    probed.erase(std::remove(probed.begin(), probed.end(), '"'), probed.end());  // csv quotes a name with commas
    EXPECT_EQ(probed, format) << name;
    EXPECT_EQ(Probe("stream=codec_name,nb_read_frames", path), "mjpeg,20") << name;
  }
}

TEST_F(ConveyorctlNamingTest, Mp4IsRefusedNamingTheExtensionToUseAndWritesNothing) {
  EXPECT_EQ(Ctl("-o " + dir_ + "/out.mp4"), 2) << ReadText(dir_ + "/err");  // a usage error
  EXPECT_NE(ReadText(dir_ + "/err").find(".mov"), std::string::npos) << ReadText(dir_ + "/err");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/out.mp4"));
}

TEST_F(ConveyorctlNamingTest, AnImage2PatternNumbersFramesFromOne) {
  ASSERT_EQ(Ctl("-o " + dir_ + "/frames/%04d.jpg"), 0) << ReadText(dir_ + "/err");
  std::vector<std::string> expected;
  for (int i = 1; i <= 20; ++i) {
    char name[16];
    std::snprintf(name, sizeof(name), "%04d.jpg", i);
    expected.push_back(name);
  }
  EXPECT_EQ(Names(dir_ + "/frames"), expected);
  EXPECT_EQ(Probe("stream=codec_name,width,height", dir_ + "/frames/0020.jpg"), "mjpeg,160,120");
}

TEST_F(ConveyorctlNamingTest, PtsNamesAndTheCsvIndexGiveFfprobesTimes) {
  const std::vector<double> times = ProbeTimes(VfrInput(), dir_ + "/times");
  ASSERT_EQ(times.size(), 20u);
  ASSERT_EQ(Ctl("-o " + dir_ + "/frames --name '{pts_ms}.jpg' --index csv"), 0) << ReadText(dir_ + "/err");
  const std::vector<std::string> rows = Lines(ReadText(dir_ + "/frames/frames.csv"));
  ASSERT_EQ(rows.size(), 21u) << ReadText(dir_ + "/frames/frames.csv");
  EXPECT_EQ(rows[0], "file,rendition,index,pts,time_s,bytes");
  std::vector<std::string> expected_names = {"frames.csv"};
  for (size_t i = 0; i < times.size(); ++i) {
    const std::string name = std::to_string(std::llround(times[i] * 1000)) + ".jpg";
    expected_names.push_back(name);
    std::istringstream row(rows[i + 1]);
    std::string file, rendition, index, pts, time_s, bytes;
    std::getline(row, file, ',');
    std::getline(row, rendition, ',');
    std::getline(row, index, ',');
    std::getline(row, pts, ',');
    std::getline(row, time_s, ',');
    std::getline(row, bytes, ',');
    EXPECT_EQ(file, name) << "row " << i;
    EXPECT_EQ(rendition, "0");
    EXPECT_EQ(index, std::to_string(i));
    EXPECT_NEAR(std::atof(time_s.c_str()), times[i], 0.0005) << "row " << i;
    EXPECT_EQ(std::stoull(bytes), std::filesystem::file_size(dir_ + "/frames/" + name)) << name;
  }
  std::sort(expected_names.begin(), expected_names.end());
  EXPECT_EQ(Names(dir_ + "/frames"), expected_names);
}

TEST_F(ConveyorctlNamingTest, TheJsonIndexListsEveryRenditionsFrames) {
  ASSERT_EQ(Ctl("-o " + dir_ + "/frames --renditions 160x120,80x60 --name 'r{rendition}-%03d.jpg' --index json"), 0)
      << ReadText(dir_ + "/err");
  // python3's json module as the outside reader of the file.
  ASSERT_EQ(Shell("python3 -c \"import json,sys; rows=json.load(open(sys.argv[1])); "
                  "print(len(rows), sorted({r['rendition'] for r in rows}), rows[-1]['file'], rows[-1]['index'])\" " +
                  dir_ + "/frames/frames.json > " + dir_ + "/json"),
            0);
  EXPECT_EQ(ReadText(dir_ + "/json"), "40 [0, 1] r1-020.jpg 19\n");
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/frames/r0-001.jpg"));
}

}  // namespace
}  // namespace conveyor::e2e

#endif  // CONVEYORCTL_PATH

// conveyorctl's reading of -o, --name and --index (daemon/ctl/output_naming.h): the
// container from the extension as the ffmpeg CLI picks its muxer, name patterns in the
// manner of ffmpeg's image2 output, and the index file's rows.
#include <gtest/gtest.h>

#include <filesystem>

#include "output_naming.h"

namespace conveyor::ctl {
namespace {

TEST(ResolveOutput, TheExtensionPicksTheContainer) {
  for (const auto& [output, container] : std::vector<std::pair<std::string, std::string>>{
           {"out.mkv", "mkv"}, {"dir/clip.MOV", "mov"}, {"a.avi", "avi"}, {"frames", ""}, {"x.jpg", ""}}) {
    StatusOr<OutputTarget> t = ResolveOutput(output, "", "");
    ASSERT_TRUE(t.ok()) << output << ": " << t.status().ToString();
    EXPECT_EQ(t->container, container) << output;
    EXPECT_EQ(t->output, output);
    EXPECT_EQ(t->name, "");
  }
}

TEST(ResolveOutput, ContainerWinsOverTheExtensionAndStdoutNeedsIt) {
  StatusOr<OutputTarget> t = ResolveOutput("out.avi", "mkv", "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->container, "mkv");
  t = ResolveOutput("-", "", "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->container, "") << "BuildJobSpec refuses - without --container, naming it";
}

TEST(ResolveOutput, Mp4IsRefusedNamingWhatToUse) {
  const StatusOr<OutputTarget> t = ResolveOutput("out.mp4", "", "");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find(".mov"), std::string::npos) << t.status().message();
}

TEST(ResolveOutput, APatternIsADirectoryAndNames) {
  StatusOr<OutputTarget> t = ResolveOutput("frames/%06d.jpg", "", "");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->output, "frames");
  EXPECT_EQ(t->name, "%06d.jpg");
  EXPECT_EQ(t->container, "");
  t = ResolveOutput("{pts_ms}.jpg", "", "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->output, ".");
  EXPECT_FALSE(ResolveOutput("frames/%d.jpg", "", "{index}.jpg").ok()) << "a pattern twice";
  EXPECT_FALSE(ResolveOutput("out.mkv", "", "%d.jpg").ok()) << "--name for a container";
}

TEST(ResolveOutput, AnExistingDirectoryTakesFramesWhateverItsName) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "conveyor-naming-test.mkv";
  std::filesystem::create_directories(dir);
  const StatusOr<OutputTarget> t = ResolveOutput(dir.string(), "", "");
  std::filesystem::remove(dir);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->container, "");
}

TEST(FrameNamer, NumbersFromOneAsImage2AndFieldsFromTheFrame) {
  StatusOr<FrameNamer> n = FrameNamer::Parse("%06d.jpg", 1);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->Name(0, 0, 0), "000001.jpg");
  EXPECT_EQ(n->Name(0, 41, 1400), "000042.jpg");
  n = FrameNamer::Parse("f%d-100%%.jpg", 1);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->Name(0, 1233, 0), "f1234-100%.jpg");
  n = FrameNamer::Parse("r{rendition}/x", 2);
  EXPECT_FALSE(n.ok()) << "a path";
  n = FrameNamer::Parse("r{rendition}-{pts_ms}ms-{index}.jpg", 2);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->Name(1, 7, 280), "r1-280ms-7.jpg");
  EXPECT_TRUE(FrameNamer::Parse("", 3)->empty());
}

TEST(FrameNamer, NamesThatCannotTellFramesApartAreRefused) {
  for (const char* bad :
       {"poster.jpg", "{rendition}.jpg", "%5d.jpg", "%00d.jpg", "%s.jpg", "{pts}.jpg", "{index.jpg"}) {
    const StatusOr<FrameNamer> n = FrameNamer::Parse(bad, 1);
    EXPECT_FALSE(n.ok()) << bad;
    if (!n.ok()) {
      EXPECT_NE(n.status().message().find("--name"), std::string::npos) << n.status().message();
    }
  }
  EXPECT_FALSE(FrameNamer::Parse("%d.jpg", 2).ok()) << "two renditions, one name";
}

TEST(FrameIndex, CsvAndJsonRowsCarryEachField) {
  const std::vector<FrameRecord> rows = {{"000001.jpg", 0, 0, 0, 0.0, 1200}, {"a,\"b\".jpg", 1, 1, 512, 0.04, 99}};
  EXPECT_EQ(RenderIndex("csv", rows),
            "file,rendition,index,pts,time_s,bytes\n"
            "000001.jpg,0,0,0,0.000000,1200\n"
            "\"a,\"\"b\"\".jpg\",1,1,512,0.040000,99\n");
  EXPECT_EQ(RenderIndex("json", rows),
            "[\n"
            "  {\"file\": \"000001.jpg\", \"rendition\": 0, \"index\": 0, \"pts\": 0, \"time_s\": 0.000000, "
            "\"bytes\": 1200},\n"
            "  {\"file\": \"a,\\\"b\\\".jpg\", \"rendition\": 1, \"index\": 1, \"pts\": 512, \"time_s\": 0.040000, "
            "\"bytes\": 99}\n"
            "]\n");
  EXPECT_EQ(*IndexFileName("csv"), "frames.csv");
  EXPECT_FALSE(IndexFileName("xml").ok());
}

}  // namespace
}  // namespace conveyor::ctl

// The moov that moves to the front (MoovForTheFront), checked by FFmpeg reading the files
// it makes: the packets must be the plain file's. The 4 GiB case uses sparse files, so
// that a table whose offsets cross 4 GiB only when the moov moves (stco -> co64) costs no
// disk.
#include "mov_faststart.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "media_test_util.h"

namespace {

using conveyor::StatusCode;
using conveyor::media::MoovForTheFront;
using conveyor::media::ShiftChunkOffsets;

uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

bool Holds(const std::vector<uint8_t>& bytes, const char* type) {
  return std::search(bytes.begin(), bytes.end(), type, type + 4) != bytes.end();
}

struct Piece {
  uint64_t offset;
  const uint8_t* data;
  size_t size;
};

// Writes the pieces at their offsets; what lies between them is a hole (reads as zeros,
// takes no disk).
bool WriteSparse(const std::string& path, const std::vector<Piece>& pieces) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = true;
  for (const Piece& p : pieces) {
    ok = ok && pwrite(fd, p.data, p.size, static_cast<off_t>(p.offset)) == static_cast<ssize_t>(p.size);
  }
  return close(fd) == 0 && ok;
}

std::vector<uint8_t> FreeBoxHeader(uint64_t size) {
  std::vector<uint8_t> h = {static_cast<uint8_t>(size >> 24), static_cast<uint8_t>(size >> 16),
                            static_cast<uint8_t>(size >> 8), static_cast<uint8_t>(size), 'f', 'r', 'e', 'e'};
  return h;
}

// A plain MOV from the ffmpeg CLI (moov after mdat), MJPEG and interleaved AAC: many
// chunks in two tracks.
struct PlainMov {
  std::string path;
  std::vector<uint8_t> bytes;
  size_t ftyp_end = 0, moov_at = 0;
  uint64_t last_packet_pos = 0;
};

PlainMov MakePlainMov() {
  PlainMov m;
  auto path = media_test::MakeMedia("plain.mov", media_test::TestSource(160, 120),
                                    {"-map", "0:v", "-map", "1:a", "-frames:v", "25", "-c:v", "mjpeg", "-c:a", "aac",
                                     "-shortest"},
                                    {"sine=frequency=440:sample_rate=48000"});
  if (!path.ok()) return m;
  auto bytes = media_test::ReadFile(*path);
  auto positions = media_test::Ffprobe({"-show_entries", "packet=pos", "-of", "csv=p=0", *path});
  if (!bytes.ok() || !positions.ok() || bytes->size() < 8) return m;
  m.bytes = *bytes;
  m.ftyp_end = Be32(m.bytes.data());
  for (size_t at = 0; at + 8 <= m.bytes.size();) {  // the top-level boxes: moov is the last
    if (std::memcmp(m.bytes.data() + at + 4, "moov", 4) == 0) m.moov_at = at;
    const uint32_t size = Be32(m.bytes.data() + at);
    if (size < 8) return m;
    at += size;
  }
  std::istringstream in(*positions);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) m.last_packet_pos = std::max<uint64_t>(m.last_packet_pos, std::stoull(line));
  }
  m.path = *path;
  return m;
}

TEST(MovFaststart, TheMovedMoovPointsAtTheSamePacketsAsFfmpegReadsThem) {
  const PlainMov plain = MakePlainMov();
  ASSERT_FALSE(plain.path.empty()) << "ffmpeg could not make a plain MOV";
  ASSERT_GT(plain.moov_at, plain.ftyp_end) << "moov is not after mdat";
  const uint8_t* moov = plain.bytes.data() + plain.moov_at;
  const size_t moov_size = plain.bytes.size() - plain.moov_at;
  auto front = MoovForTheFront(moov, moov_size);
  ASSERT_TRUE(front.ok()) << front.status().ToString();
  EXPECT_TRUE(Holds(*front, "stco")) << "small offsets stay 32-bit";
  EXPECT_EQ(front->size(), moov_size);

  const std::string path = media_test::TempDir() + "/front.mov";
  const uint8_t* rest = plain.bytes.data() + plain.ftyp_end;
  ASSERT_TRUE(WriteSparse(path, {{0, plain.bytes.data(), plain.ftyp_end},
                                 {plain.ftyp_end, front->data(), front->size()},
                                 {plain.ftyp_end + front->size(), rest, plain.moov_at - plain.ftyp_end}}));
  auto boxes = media_test::ProbeTopLevelBoxes(path);
  ASSERT_TRUE(boxes.ok()) << boxes.status().ToString();
  EXPECT_EQ(*boxes, (std::vector<std::string>{"ftyp", "moov", "wide", "mdat"}));
  auto sums = media_test::PacketSums(path);
  auto plain_sums = media_test::PacketSums(plain.path);
  ASSERT_TRUE(sums.ok() && plain_sums.ok());
  EXPECT_GT(sums->size(), 25u);
  EXPECT_EQ(*sums, *plain_sums);
}

// The plain file behind a free box that puts its last chunk just under 4 GiB: every
// offset still fits stco, until the moov moves to the front. The moved moov must say co64,
// be larger by it, and FFmpeg must find every packet through it.
TEST(MovFaststart, OffsetsThatPass4GiBOnlyOnceMovedBecomeCo64) {
  const PlainMov plain = MakePlainMov();
  ASSERT_FALSE(plain.path.empty()) << "ffmpeg could not make a plain MOV";
  const uint64_t gap = (uint64_t{1} << 32) - 1 - plain.last_packet_pos;
  const std::vector<uint8_t> free_box = FreeBoxHeader(gap);
  const uint8_t* moov = plain.bytes.data() + plain.moov_at;
  const size_t moov_size = plain.bytes.size() - plain.moov_at;
  const uint8_t* rest = plain.bytes.data() + plain.ftyp_end;
  const size_t rest_size = plain.moov_at - plain.ftyp_end;

  // The far file: ftyp | free (gap) | wide | mdat | moov, the moov's offsets moved on by
  // the gap. FFmpeg reading it as the plain file shows the fixture is sound.
  auto far_moov = ShiftChunkOffsets(moov, moov_size, gap);
  ASSERT_TRUE(far_moov.ok()) << far_moov.status().ToString();
  ASSERT_TRUE(Holds(*far_moov, "stco") && !Holds(*far_moov, "co64")) << "the fixture must still fit 32 bits";
  const std::string far_path = media_test::TempDir() + "/far.mov";
  ASSERT_TRUE(WriteSparse(far_path, {{0, plain.bytes.data(), plain.ftyp_end},
                                     {plain.ftyp_end, free_box.data(), free_box.size()},
                                     {plain.ftyp_end + gap, rest, rest_size},
                                     {plain.ftyp_end + gap + rest_size, far_moov->data(), far_moov->size()}}));
  auto plain_sums = media_test::PacketSums(plain.path);
  auto far_sums = media_test::PacketSums(far_path);
  ASSERT_TRUE(plain_sums.ok() && far_sums.ok()) << far_sums.status().ToString();
  ASSERT_EQ(*far_sums, *plain_sums) << "the far fixture does not read as the plain file";

  auto front = MoovForTheFront(far_moov->data(), far_moov->size());
  ASSERT_TRUE(front.ok()) << front.status().ToString();
  EXPECT_TRUE(Holds(*front, "co64"));
  EXPECT_GT(front->size(), far_moov->size());
  const std::string path = media_test::TempDir() + "/far_front.mov";
  const uint64_t at = plain.ftyp_end + front->size();
  ASSERT_TRUE(WriteSparse(path, {{0, plain.bytes.data(), plain.ftyp_end},
                                 {plain.ftyp_end, front->data(), front->size()},
                                 {at, free_box.data(), free_box.size()},
                                 {at + gap, rest, rest_size}}));
  auto boxes = media_test::ProbeTopLevelBoxes(path);
  ASSERT_TRUE(boxes.ok()) << boxes.status().ToString();
  EXPECT_EQ(*boxes, (std::vector<std::string>{"ftyp", "moov", "free", "wide", "mdat"}));
  auto sums = media_test::PacketSums(path);
  ASSERT_TRUE(sums.ok()) << sums.status().ToString();
  EXPECT_EQ(*sums, *plain_sums);
  unlink(far_path.c_str());
  unlink(path.c_str());
}

TEST(MovFaststart, RefusesWhatIsNotOneWholeMoov) {
  const PlainMov plain = MakePlainMov();
  ASSERT_FALSE(plain.path.empty()) << "ffmpeg could not make a plain MOV";
  const uint8_t* moov = plain.bytes.data() + plain.moov_at;
  const size_t moov_size = plain.bytes.size() - plain.moov_at;
  EXPECT_TRUE(MoovForTheFront(moov, moov_size).ok());
  // Cut short, and not a moov at all.
  EXPECT_EQ(MoovForTheFront(moov, moov_size - 1).status().code(), StatusCode::kInternal);
  EXPECT_EQ(MoovForTheFront(plain.bytes.data(), plain.ftyp_end).status().code(), StatusCode::kInternal);
  EXPECT_EQ(MoovForTheFront(moov, 4).status().code(), StatusCode::kInternal);
  // A second box after the moov.
  std::vector<uint8_t> two(moov, moov + moov_size);
  const std::vector<uint8_t> free_box = FreeBoxHeader(8);
  two.insert(two.end(), free_box.begin(), free_box.end());
  EXPECT_EQ(MoovForTheFront(two.data(), two.size()).status().code(), StatusCode::kInternal);
  // A chunk offset table that counts more entries than it holds.
  std::vector<uint8_t> bad(moov, moov + moov_size);
  const auto stco = std::search(bad.begin(), bad.end(), "stco", "stco" + 4);
  ASSERT_NE(stco, bad.end());
  const size_t count_at = static_cast<size_t>(stco - bad.begin()) + 8;
  bad[count_at] = 0x7f;
  auto refused = MoovForTheFront(bad.data(), bad.size());
  EXPECT_EQ(refused.status().code(), StatusCode::kInternal);
  EXPECT_NE(refused.status().message().find("fewer entries"), std::string::npos) << refused.status().ToString();
}

}  // namespace

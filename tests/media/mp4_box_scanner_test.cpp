// Mp4BoxScanner on hand-built box chains, fed whole and one byte at a time.
#include "mp4_box_scanner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using conveyor::media::Mp4BoxScanner;
using Verdict = Mp4BoxScanner::Verdict;

void Box(std::vector<uint8_t>* out, const char* type, uint32_t body) {
  const uint32_t size = body + 8;
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<uint8_t>(size >> shift));
  out->insert(out->end(), type, type + 4);
  out->insert(out->end(), body, 0xAB);
}

void LargeBox(std::vector<uint8_t>* out, const char* type, uint64_t body) {
  const uint64_t size = body + 16;
  for (int i = 0; i < 3; ++i) out->push_back(0);
  out->push_back(1);
  out->insert(out->end(), type, type + 4);
  for (int shift = 56; shift >= 0; shift -= 8) out->push_back(static_cast<uint8_t>(size >> shift));
  out->insert(out->end(), body, 0xCD);
}

Verdict Scan(const std::vector<uint8_t>& data, bool byte_by_byte) {
  Mp4BoxScanner s;
  if (byte_by_byte) {
    for (uint8_t b : data) s.Feed(&b, 1);
  } else {
    s.Feed(data.data(), data.size());
  }
  return s.verdict();
}

class Mp4BoxScannerTest : public ::testing::TestWithParam<bool> {};

TEST_P(Mp4BoxScannerTest, MdatBeforeMoovIsCaught) {
  std::vector<uint8_t> d;
  Box(&d, "ftyp", 24);
  Box(&d, "free", 0);
  Box(&d, "mdat", 300);
  Box(&d, "moov", 50);
  EXPECT_EQ(Scan(d, GetParam()), Verdict::kMdatFirst);
}

TEST_P(Mp4BoxScannerTest, MoovFirstIsStreamable) {
  std::vector<uint8_t> d;
  Box(&d, "ftyp", 24);
  Box(&d, "moov", 50);
  Box(&d, "mdat", 300);
  EXPECT_EQ(Scan(d, GetParam()), Verdict::kMoovFirst);
}

TEST_P(Mp4BoxScannerTest, LargeSizeBoxesAreSkippedWhole) {
  std::vector<uint8_t> d;
  Box(&d, "ftyp", 16);
  LargeBox(&d, "free", 40);  // a 64-bit size; its body holds bytes that look like nothing
  Box(&d, "moov", 8);
  EXPECT_EQ(Scan(d, GetParam()), Verdict::kMoovFirst);
}

TEST_P(Mp4BoxScannerTest, OtherInputIsLeftAlone) {
  // Matroska's EBML magic, then random-ish bytes that contain "mdat".
  std::vector<uint8_t> d = {0x1A, 0x45, 0xDF, 0xA3, 0x9F, 0x42, 0x86, 0x81, 0x01};
  const std::string noise = "....mdat....moov";
  d.insert(d.end(), noise.begin(), noise.end());
  EXPECT_EQ(Scan(d, GetParam()), Verdict::kNotMp4);
}

TEST_P(Mp4BoxScannerTest, UndecidedUntilABoxSaysSo) {
  std::vector<uint8_t> d;
  Box(&d, "ftyp", 24);
  d.resize(d.size() + 4, 0);  // half of the next box header
  EXPECT_EQ(Scan(d, GetParam()), Verdict::kScanning);
}

INSTANTIATE_TEST_SUITE_P(Feeding, Mp4BoxScannerTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "ByteByByte" : "Whole";
                         });

}  // namespace

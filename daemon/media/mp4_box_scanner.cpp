// Mp4BoxScanner: walks the chain of top-level box headers (32-bit size + type, with the
// 64-bit "largesize" form), skipping each box's body as it streams past.
#include "mp4_box_scanner.h"

#include <algorithm>
#include <cstring>

namespace conveyor::media {
namespace {

uint64_t Be32(const uint8_t* p) {
  return (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | p[3];
}

bool TypeIs(const uint8_t* type, const char* name) { return std::memcmp(type, name, 4) == 0; }

// Boxes an ISO BMFF / QuickTime file starts with. Old QuickTime files may begin with
// wide, free, skip, mdat or moov instead of ftyp.
bool IsLeadingBox(const uint8_t* type) {
  for (const char* name : {"ftyp", "moov", "mdat", "wide", "free", "skip", "pnot"}) {
    if (TypeIs(type, name)) return true;
  }
  return false;
}

}  // namespace

void Mp4BoxScanner::Feed(const uint8_t* data, size_t size) {
  while (size > 0 && verdict_ == Verdict::kScanning) {
    if (pos_ < box_start_) {  // inside a box body: skip it
      const uint64_t skip = std::min<uint64_t>(size, box_start_ - pos_);
      data += skip;
      size -= skip;
      pos_ += skip;
      continue;
    }
    // Collecting the header of the box at box_start_: 8 bytes, or 16 with a largesize.
    const size_t want = (header_len_ >= 8 && Be32(header_) == 1) ? 16 : 8;
    const size_t n = std::min(size, want - header_len_);
    std::memcpy(header_ + header_len_, data, n);
    header_len_ += n;
    data += n;
    size -= n;
    pos_ += n;
    if (header_len_ == 8 && Be32(header_) == 1) continue;  // read the largesize too
    if (header_len_ == want) OnHeader();
  }
}

void Mp4BoxScanner::OnHeader() {
  const uint8_t* type = header_ + 4;
  uint64_t size = Be32(header_);
  if (size == 1) size = (Be32(header_ + 8) << 32) | Be32(header_ + 12);
  if (first_box_ && !IsLeadingBox(type)) {
    verdict_ = Verdict::kNotMp4;
    return;
  }
  first_box_ = false;
  if (TypeIs(type, "moov")) {
    verdict_ = Verdict::kMoovFirst;
    return;
  }
  if (TypeIs(type, "mdat")) {
    verdict_ = Verdict::kMdatFirst;
    return;
  }
  // size 0: the box runs to the end of the file, so nothing follows it. A size smaller than
  // its own header is malformed; leave that to the demuxer.
  if (size == 0 || size < header_len_) {
    verdict_ = Verdict::kNotMp4;
    return;
  }
  box_start_ += size;
  header_len_ = 0;
}

}  // namespace conveyor::media

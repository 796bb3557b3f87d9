// Watches the top-level boxes of an input as its bytes stream past, to tell early that an
// MP4/MOV has its moov atom after mdat. libavformat cannot demux such a file from a
// non-seekable stream: it reads (and discards) all of mdat to find moov, then fails on the
// first packet ("partial file") because it cannot seek back. Seeing mdat first lets the
// decoder refuse the input after a few bytes with advice, instead of after the whole upload.
#pragma once

#include <cstddef>
#include <cstdint>

namespace conveyor::media {

class Mp4BoxScanner {
 public:
  enum class Verdict {
    kScanning,   // no decision yet
    kNotMp4,     // the first box is not one an MP4/MOV starts with: not our business
    kMoovFirst,  // moov came before any mdat: streamable
    kMdatFirst,  // mdat came before moov: cannot be demuxed from a stream
  };

  // Feeds the next bytes of the input, in order, from its first byte.
  void Feed(const uint8_t* data, size_t size);
  Verdict verdict() const { return verdict_; }

 private:
  void OnHeader();

  Verdict verdict_ = Verdict::kScanning;
  uint64_t pos_ = 0;        // input offset of the next byte fed
  uint64_t box_start_ = 0;  // offset of the box whose header is being collected
  uint8_t header_[16] = {};
  size_t header_len_ = 0;
  bool first_box_ = true;
};

}  // namespace conveyor::media

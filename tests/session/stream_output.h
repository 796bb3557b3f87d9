// What a stream wrote, as a client reassembles it: the packets of each rendition joined
// into frames, with the Started and Summary messages, and a JPEG check by libjpeg-turbo.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "conveyor/v1/transcoder.pb.h"

namespace conveyor::session_test {

struct OutputFrame {
  uint64_t index = 0;
  int64_t pts = 0;
  std::vector<uint8_t> jpeg;
};

struct StreamOutput {
  bool started_first = false;
  std::string source_codec;
  std::vector<std::vector<OutputFrame>> renditions;  // frames of each, in arrival order
  bool has_summary = false;
  v1::Summary summary;
  std::string problems;  // packets out of place; empty when the stream is well formed
  // The last frame of a rendition has packets but no end_of_frame. Only a stream that
  // failed may end so: its close can overtake a frame the worker was delivering.
  bool ends_inside_frame = false;
};

StreamOutput Reassemble(const std::vector<v1::TranscodeResponse>& written, size_t renditions);

struct Decoded {
  bool ok = false;
  int width = 0, height = 0;
};

// Decodes a whole JPEG (header and pixels) with libjpeg-turbo.
Decoded DecodeJpeg(const std::vector<uint8_t>& jpeg);

}  // namespace conveyor::session_test

// The reference that `ffmpeg -i IN -c:v mjpeg -q:v Q -f null -` measures, rebuilt on
// libavformat, libavcodec, libswscale and libavutil alone, so that it runs from the
// conveyord bundle on a host without the ffmpeg CLI (libavfilter and libavdevice are
// too big to carry). It mirrors what FFmpeg 5.1's CLI does, step for step; see the .cpp.
#pragma once

#include <cstdint>
#include <string>

#include "status.h"

namespace conveyor::bench {

struct LibavMjpegOptions {
  std::string input;
  int q = 5;                // -q:v: global_quality = q * FF_QP2LAMBDA with AV_CODEC_FLAG_QSCALE
  int decoder_threads = 0;  // `-threads N` before -i; 0 is the CLI's "auto"
  std::string output;       // when set, the packets as `-f mjpeg FILE` writes them (validation)
};

struct LibavMjpegResult {
  uint64_t frames = 0;  // packets out of the encoder
  uint64_t bytes = 0;   // their payload, what the CLI reports as "video:"
  double seconds = 0;   // from opening the input to the last packet
  int width = 0, height = 0;
  std::string decoder;  // name and thread count as opened, for the log
  int encoder_threads = 0;
  int scaler_threads = 0;
};

StatusOr<LibavMjpegResult> TranscodeToMjpeg(const LibavMjpegOptions& options);

}  // namespace conveyor::bench

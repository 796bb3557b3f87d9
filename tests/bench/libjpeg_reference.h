// libjpeg-turbo encoding of the same frames, single-threaded, as the benchmark's
// in-run reference: the libjpeg API for RGB inputs (same quality, subsampling and restart
// interval, ISLOW DCT, standard Huffman tables) and TurboJPEG's YUV-planes entry for
// planar YUV inputs whose chroma layout matches the output.
#pragma once

#include <string>
#include <vector>

#include "encode_params.h"
#include "frame.h"
#include "status.h"

namespace conveyor::bench {

// Returns an empty string when libjpeg-turbo can encode this frame, or why not.
std::string ReferenceUnsupportedReason(const FrameView& frame, const EncodeParams& params);

StatusOr<std::vector<uint8_t>> EncodeWithLibjpegTurbo(const FrameView& frame, const EncodeParams& params,
                                                      int restart_interval);

}  // namespace conveyor::bench

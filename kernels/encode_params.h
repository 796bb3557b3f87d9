// What a caller asks of the encoder: quality, chroma subsampling and restart interval.
#pragma once

#include <string>

#include "status.h"

namespace conveyor {

enum class Subsampling : uint8_t { k420, k422, k444 };

const char* SubsamplingName(Subsampling s);
StatusOr<Subsampling> ParseSubsampling(const std::string& name);  // "420", "4:2:0", ...

// Restart interval in MCUs. kRestartAuto lets the encoder pick (see encode_plan.cpp);
// 0 writes no restart markers, which leaves one entropy segment per frame and so gives
// the GPU no parallelism in the Huffman stage.
constexpr int kRestartAuto = -1;
constexpr int kMaxRestartInterval = 65535;  // DRI holds 16 bits

struct EncodeParams {
  int quality = 85;                        // 1..100, IJG scaling of the Annex K tables
  Subsampling subsampling = Subsampling::k420;
  int restart_interval = kRestartAuto;     // MCUs per entropy segment
  // 2..8: an Exif APP1 segment with this Orientation tag follows APP0, for a frame whose
  // pixels stay as stored while the display turns them; 0 or 1: none.
  int exif_orientation = 0;
};

Status ValidateParams(const EncodeParams& p);

}  // namespace conveyor

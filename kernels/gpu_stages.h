// Launchers for the four encoder stages on the GPU, one band at a time, all on the
// stream the caller passes. Each stage is one kernel over the same band descriptor; the
// math inside is the CONVEYOR_HD stage functions the CPU path runs too.
#pragma once

#include <cstdint>

#include "encode_plan.h"
#include "hip_compat.h"
#include "jpeg_tables.h"
#include "stage_color.h"
#include "status.h"

namespace conveyor {

// Device pointers one band's stages read and write. Band-local buffers (planes, levels,
// segments) are reused from band to band, which is safe because every stage of a frame
// runs on one stream in order.
struct BandDeviceBuffers {
  SourcePlanes source;          // the uploaded frame
  uint8_t* planes[3];           // stage 1 -> 2, BandPlaneSize(c) each
  int16_t* levels;              // stage 2 -> 3, BandBlocks() * 64
  uint32_t* block_words;        // stage 3: each block's raw bits, kMaxWordsPerBlock words
  uint32_t* block_bits;         // stage 3: each block's bit count
  uint32_t* segment_words;      // stage 3: SegmentWordCapacity() per band-local segment
  uint8_t* segments;            // stage 3 -> 4, segment_capacity per band-local segment
  uint32_t* segment_bytes;      // stage 3 -> 4, one per band-local segment
  uint8_t* band_out;            // stage 4 output for this band (band_capacity)
  uint32_t* band_bytes;         // stage 4: this band's byte count (mapped host memory)
  const EncodeTables* tables;   // device copy
};

// Bytes of each band-local scratch buffer above for this plan (planes excluded).
struct BandScratchSizes {
  size_t levels, block_words, block_bits, segment_words, segments, segment_bytes;
};
BandScratchSizes ScratchSizes(const EncodePlan& plan);

// Stages 1-4 of `band`, enqueued on `stream`. Returns launch errors only; execution
// errors surface at the next wait on the stream or an event recorded after.
Status EnqueueBandStages(const EncodePlan& plan, const BandDeviceBuffers& buffers, int band,
                         hipStream_t stream);

}  // namespace conveyor

// Launchers for the encoder stages on the GPU, one band at a time, all on the stream the
// caller passes. Two kernels per band: colour conversion fused with the DCT and
// quantiser, then entropy coding fused with segment assembly, stuffing and packing. The
// math inside is the CONVEYOR_HD stage functions the CPU path runs too.
#pragma once

#include <cstdint>

#include "encode_plan.h"
#include "hip_compat.h"
#include "jpeg_tables.h"
#include "stage_color.h"
#include "status.h"

namespace conveyor {

// Device pointers one band's stages read and write. Band-local buffers (levels, block
// bits, segment words) are reused from band to band, which is safe because every stage
// of a frame runs on one stream in order.
struct BandDeviceBuffers {
  SourcePlanes source;          // the uploaded frame
  int16_t* levels;              // colour+DCT -> coding, BandBlocks() * 64
  uint32_t* block_words;        // coding: each block's raw bits, kMaxWordsPerBlock words
  uint32_t* block_bits;         // coding: each block's bit count
  uint32_t* segment_words;      // coding: SegmentWordCapacity() per band-local segment
  // Coding kernel's cross-CTA state: [0] segment ticket counter, [1] finished-CTA
  // counter, then one published size per band-local segment. Zero between launches
  // (the last CTA of each launch clears it; BandScratch zeroes it when allocated).
  uint32_t* coordination;
  uint8_t* band_out;            // this band's packed bitstream (band_capacity)
  uint32_t* band_bytes;         // this band's byte count (mapped host memory)
  const EncodeTables* tables;   // device copy
};

// Bytes of each band-local scratch buffer above for this plan.
struct BandScratchSizes {
  size_t levels, block_words, block_bits, segment_words, coordination;
};
BandScratchSizes ScratchSizes(const EncodePlan& plan);

// Every stage of `band`, enqueued on `stream`. Returns launch errors only; execution
// errors surface at the next wait on the stream or an event recorded after.
Status EnqueueBandStages(const EncodePlan& plan, const BandDeviceBuffers& buffers, int band,
                         hipStream_t stream);

}  // namespace conveyor

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

// Frames one launch may carry (grid.y picks the frame): the worker can put queued
// frames of the same shape into one launch. Four bounds the kernels' parameter block;
// more did not pay on the H200 (BENCHMARKS.md).
constexpr int kMaxLaunchFrames = 4;

// What one frame of a launch reads and writes besides the scratch.
struct BandFrame {
  SourcePlanes source;   // the uploaded (or scaled) frame
  uint8_t* band_out;     // this band's packed bitstream (band_capacity)
  uint32_t* band_bytes;  // this band's byte count (mapped host memory)
};

// Elements of each band-local scratch buffer that one frame of a launch uses.
struct BandScratchSizes {
  size_t levels, block_words, block_bits, segment_words, coordination;
};
CONVEYOR_HD inline BandScratchSizes ScratchElements(const EncodePlan& p) {
  BandScratchSizes s;
  const size_t blocks = p.BandBlocks();
  const size_t segments = p.MaxBandSegments();
  s.levels = blocks * 64;
  s.block_words = blocks * kMaxWordsPerBlock;  // two halves of kMaxWordsPerBlock / 2
  s.block_bits = blocks * 2;                   // a count per half block
  s.segment_words = segments * p.SegmentWordCapacity();
  s.coordination = 2 + segments;
  return s;
}

// Device pointers one band's stages read and write, for the `frames` frames of one
// launch. The scratch buffers hold a region per frame, ScratchElements() apart. They are
// reused from band to band and launch to launch, which is safe because every stage runs
// on one stream in order.
struct BandDeviceBuffers {
  BandFrame frame[kMaxLaunchFrames];
  int frames;                   // 1 .. kMaxLaunchFrames, all with the same plan
  int16_t* levels;              // colour+DCT -> coding, BandBlocks() * 64
  uint32_t* block_words;        // coding: each half block's raw bits
  uint32_t* block_bits;         // coding: each half block's bit count
  uint32_t* segment_words;      // coding: SegmentWordCapacity() per band-local segment
  // Coding kernel's cross-CTA state, per frame: [0] segment ticket counter, [1]
  // finished-CTA counter, then one published size per band-local segment. Zero between
  // launches (the last CTA of each frame clears it; BandScratch zeroes it when allocated).
  uint32_t* coordination;
  const EncodeTables* tables;   // device copy
};

// Bytes of each scratch buffer above for `frames` frames of this plan.
BandScratchSizes ScratchSizes(const EncodePlan& plan, int frames);

// Every stage of `band` for every frame of `buffers`, enqueued on `stream`. Returns launch errors only; execution
// errors surface at the next wait on the stream or an event recorded after.
Status EnqueueBandStages(const EncodePlan& plan, const BandDeviceBuffers& buffers, int band,
                         hipStream_t stream);

}  // namespace conveyor

// Launchers for the encoder stages on the GPU, a launch of bands at a time, all on the
// stream the caller passes. Two kernels per band: colour conversion fused with the DCT and
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

// Frames one launch may carry: the worker can put queued frames of the same shape into
// one launch. More than four did not pay on the GPU host (docs/benchmarks-history.md).
constexpr int kMaxLaunchFrames = 4;
// A launch carries bands of up to kMaxLaunchPlans encodes (a frame's renditions) for up
// to kMaxLaunchFrames frames: kMaxLaunchItems (frame, encode, band) items in all. The
// bounds keep the kernels' parameter block near 3 KB, under the 4 KB HIP and CUDA take.
constexpr int kMaxLaunchPlans = 4;
constexpr int kMaxLaunchItems = 16;

// What one frame of a launch reads and writes besides the scratch.
struct BandFrame {
  SourcePlanes source;   // the uploaded (or scaled) frame
  uint8_t* band_out;     // this band's packed bitstream (band_capacity)
  uint32_t* band_bytes;  // this band's byte count (mapped host memory)
};

// Elements (ScratchElements) or bytes (ScratchSizes) of each band-local scratch buffer.
struct BandScratchSizes {
  size_t levels, block_words, block_bits, segment_words, coordination;
};
inline BandScratchSizes operator+(BandScratchSizes a, const BandScratchSizes& b) {
  return {a.levels + b.levels, a.block_words + b.block_words, a.block_bits + b.block_bits,
          a.segment_words + b.segment_words, a.coordination + b.coordination};
}
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

// The device scratch buffers the stages of a launch pass to each other, whole.
struct BandScratchBuffers {
  int16_t* levels;          // colour+DCT -> coding, BandBlocks() * 64 an item
  uint32_t* block_words;    // coding: each half block's raw bits
  uint32_t* block_bits;     // coding: each half block's bit count
  uint32_t* segment_words;  // coding: SegmentWordCapacity() per band-local segment
  // Coding kernel's cross-CTA state, per item: [0] segment ticket counter, [1]
  // finished-CTA counter, then one published size per band-local segment. Zero between
  // launches (the last CTA of each item clears it; BandScratch zeroes it when allocated).
  uint32_t* coordination;
};

// One band of one encode of one frame. EnqueueBandStages fills the rest: the item's
// regions of the scratch buffers (ScratchElements() of its plan each, item after item)
// and its first CTA in each kernel's grid.
struct BandItem {
  BandFrame io;
  int plan;  // index into BandLaunch::plan
  int band;
  int first_dct_cta, first_code_cta;
  BandScratchBuffers scratch;
};

// Everything one launch of each stage does: bands of different encodes (sizes,
// qualities, subsamplings) of frames of one pixel format, as one grid per stage with the
// items' CTAs end to end, so that small bands share the SMs instead of waiting for each
// other's launches. The scratch is reused from launch to launch, which is safe because
// every stage runs on one stream in order.
struct BandLaunch {
  EncodePlan plan[kMaxLaunchPlans];
  const EncodeTables* tables[kMaxLaunchPlans];  // device copies, per plan
  int plans;
  BandItem item[kMaxLaunchItems];
  int items;
  int dct_ctas, code_ctas;  // grid sizes, filled by EnqueueBandStages
};

// Bytes of each scratch buffer for `frames` items of a band of this plan. A launch needs
// the sum over its items.
BandScratchSizes ScratchSizes(const EncodePlan& plan, int frames);

// Every stage of every item of `launch`, enqueued on `stream`, with the items' scratch
// regions carved from `scratch` (which must hold the items' ScratchSizes). Returns argument
// and launch errors only; execution errors surface at the next wait on the stream or an
// event recorded after.
Status EnqueueBandStages(BandLaunch& launch, const BandScratchBuffers& scratch, hipStream_t stream);

// The launch of one band of one frame: the common case, and the standalone encoder's.
BandLaunch SingleBandLaunch(const EncodePlan& plan, const EncodeTables* tables, const SourcePlanes& source,
                            int band, uint8_t* band_out, uint32_t* band_bytes);

}  // namespace conveyor

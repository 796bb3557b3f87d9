// The encoder's host path: the same stage functions the GPU kernels call, run over the
// bands of a frame on a thread pool. It is the CPU worker's engine and the reference the
// GPU output is compared with byte for byte.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "encode_params.h"
#include "encode_plan.h"
#include "frame.h"
#include "host_simd.h"
#include "jpeg_tables.h"
#include "stage_color.h"
#include "status.h"
#include "thread_pool.h"

namespace conveyor {

// Runs stages 1-4 for one band on the calling thread and appends the band's bitstream
// (segments, each followed by its RST marker unless it is the frame's last) to `out`.
void EncodeBandOnHost(const EncodePlan& plan, const EncodeTables& tables,
                      const SourcePlanes& source, int band, std::vector<uint8_t>* out);

// Stage 1 alone, as the CPU runs it (row by row); `planes` hold BandPlaneSize(c) each.
// Exposed so tests can hold it to the per-sample definition in stage_color.h.
void ColorBandOnHost(const EncodePlan& plan, const SourcePlanes& source, int band, uint8_t* const planes[3]);

// Stage 2 alone, as the CPU runs it with `simd`'s code: the band's levels in scan order,
// zigzag within each block, and where that code gives them (AVX2, AVX-512: returns true)
// each block's mask of nonzero AC levels in `nonzero` (BandBlocks() entries, or null).
// Exposed so tests can hold every variant to FdctRow and FdctColumnQuantize, the
// functions the GPU kernel runs.
bool DctBandOnHost(const EncodePlan& plan, const EncodeTables& tables, int band, const uint8_t* const planes[3],
                   int16_t* levels, HostSimd simd = BestHostSimd(), uint64_t* nonzero = nullptr);

SourcePlanes SourcePlanesOf(const FrameView& frame);

class CpuJpegEncoder {
 public:
  // threads <= 0: one per hardware thread.
  explicit CpuJpegEncoder(int threads = 0);

  int threads() const { return pool_.size(); }

  // Encodes a whole frame into a JFIF file. The band hints (MakeEncodePlan) only change
  // how the work is split, never the bytes.
  StatusOr<std::vector<uint8_t>> Encode(const FrameView& frame, const EncodeParams& params,
                                        int band_rows_hint = 0, int first_band_rows_hint = 0);

 private:
  ThreadPool pool_;
};

}  // namespace conveyor

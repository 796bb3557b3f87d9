// The geometry of one encode, derived once from the frame and the parameters: MCU grid,
// component planes, restart segments and row bands. It is a flat POD passed by value to
// every GPU kernel and used unchanged by the CPU path, so both walk the same blocks.
//
// Bands are whole MCU rows whose MCU count is a multiple of the restart interval, so a
// band starts and ends on a segment boundary. Each band's bitstream is therefore final on
// its own (it ends with the RST marker that follows it) and can be read back as soon as
// that band's stages have run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "color_xform.h"
#include "encode_params.h"
#include "frame.h"
#include "hd.h"
#include "status.h"

namespace conveyor {

constexpr int kMaxBlocksPerMcu = 6;  // 4:2:0 -> 4 Y + Cb + Cr
// Worst case of one block in the standard tables: DC 11-bit code + 11 bits, then 63 AC
// coefficients of a 16-bit code + 10 bits.
constexpr uint32_t kMaxBitsPerBlock = (11 + 11) + 63 * (16 + 10);
constexpr uint32_t kMaxWordsPerBlock = (kMaxBitsPerBlock + 31) / 32;

struct ComponentPlan {
  int h, v;         // sampling factors (luma 2x2 for 4:2:0, chroma always 1x1)
  int plane_w;      // samples per row of the MCU-padded plane
  int rows_per_mcu_row;  // 8 * v
  int quant;        // 0 luma tables, 1 chroma tables
};

struct EncodePlan {
  int width, height;
  PixelFormat format;
  FormatLayout layout;
  Subsampling subsampling;
  int quality;
  int exif_orientation;  // EncodeParams::exif_orientation

  int mcu_w, mcu_h;  // MCU size in pixels
  int mcus_x, mcus_y;
  int blocks_per_mcu;
  int8_t block_comp[kMaxBlocksPerMcu];  // for each block of an MCU: component,
  int8_t block_dx[kMaxBlocksPerMcu];    // and its block column/row inside the MCU
  int8_t block_dy[kMaxBlocksPerMcu];
  ComponentPlan comp[3];

  int restart_interval;  // as written in DRI; 0 = none
  int segment_mcus;      // MCUs per entropy segment (the whole frame when no restarts)
  int num_segments;

  int band_mcu_rows;        // every band's MCU rows but the first's, and the most any band has
  int first_band_mcu_rows;  // band 0's (<= band_mcu_rows): a small one brings the first byte sooner
  int num_bands;

  uint32_t segment_capacity;  // worst-case bytes of one coded segment
  uint64_t band_capacity;     // worst-case bytes of one band's packed bitstream

  ColorXform xform;
  // The source's chroma grid is the output's and chroma does not depend on luma, so each
  // chroma sample is one source sample converted: the box average of identical values.
  bool chroma_direct;

  CONVEYOR_HD int TotalMcus() const { return mcus_x * mcus_y; }
  CONVEYOR_HD int BandFirstMcuRow(int band) const {
    return band == 0 ? 0 : first_band_mcu_rows + (band - 1) * band_mcu_rows;
  }
  CONVEYOR_HD int BandMcuRows(int band) const {
    const int rows = band == 0 ? first_band_mcu_rows : band_mcu_rows;
    const int rest = mcus_y - BandFirstMcuRow(band);
    return rest < rows ? rest : rows;
  }
  CONVEYOR_HD int BandFirstMcu(int band) const { return BandFirstMcuRow(band) * mcus_x; }
  CONVEYOR_HD int BandMcus(int band) const { return BandMcuRows(band) * mcus_x; }
  CONVEYOR_HD int BandFirstSegment(int band) const { return BandFirstMcu(band) / segment_mcus; }
  CONVEYOR_HD int BandSegments(int band) const {
    const int first = BandFirstMcu(band);
    const int end = first + BandMcus(band);
    return (end + segment_mcus - 1) / segment_mcus - first / segment_mcus;
  }
  // Samples per band-local component plane (plane_w x rows of the band).
  CONVEYOR_HD size_t BandPlaneSize(int c) const {
    return static_cast<size_t>(comp[c].plane_w) * comp[c].rows_per_mcu_row * band_mcu_rows;
  }
  CONVEYOR_HD size_t BandBlocks() const {
    return static_cast<size_t>(band_mcu_rows) * mcus_x * blocks_per_mcu;
  }
  // Most segments any band can hold (a band may start and end mid-segment only when
  // it is the frame's last).
  CONVEYOR_HD size_t MaxBandSegments() const {
    return static_cast<size_t>(band_mcu_rows) * mcus_x / segment_mcus + 2;
  }
  // 32-bit words of one segment's unstuffed bitstream, worst case, plus slack for the
  // padding bits.
  CONVEYOR_HD size_t SegmentWordCapacity() const {
    return static_cast<size_t>(segment_mcus) * blocks_per_mcu * kMaxWordsPerBlock + 2;
  }
};

// Validates frame and parameters and derives the plan. `band_rows_hint` > 0 asks for
// bands of about that many pixel rows, and `first_band_rows_hint` > 0 for a first band
// of about that many, if fewer (both change scheduling only, never the bytes).
StatusOr<EncodePlan> MakeEncodePlan(const FrameView& frame, const EncodeParams& params,
                                    int band_rows_hint = 0, int first_band_rows_hint = 0);

// The restart interval kRestartAuto resolves to for this geometry.
int AutoRestartInterval(int mcus_x, int mcus_y);

// Pixel rows per band for bands of at most about `most_blocks` blocks: as few bands as
// that allows, split evenly (1080p 4:2:0 at 32768 blocks: two bands of 34 MCU rows).
int EvenBandRows(const FrameView& frame, Subsampling sub, int64_t most_blocks);

// Pixel rows of a first band of about `first_band_blocks` blocks for a frame in bands of
// `band_rows` pixel rows, or 0 (band 0 as large as the others) when the frame has fewer
// than three such bands.
int SmallFirstBandRows(const FrameView& frame, Subsampling sub, int band_rows, int first_band_blocks);

}  // namespace conveyor

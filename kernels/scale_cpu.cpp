// Host rendition scaling, a row at a time: each destination row first sums its source
// rows with the vertical weights (one pass over the bytes, which vectorises), then each
// sample sums that row with its horizontal weights. ScaleSample, which the GPU runs per
// sample, sums the other way round; integer sums are exact in any order, so the bytes
// are the same (the unit tests compare the two).
#include "scale_cpu.h"

#include <string>
#include <utility>
#include <vector>

#include "stage_scale.h"

namespace conveyor {
namespace {

// The horizontal taps of every destination column of a plane, computed once per plane
// instead of once per sample: column x reads source pixels first[x] .. first[x] +
// count[x] - 1 with weights weight[start[x] ...].
struct ColumnTaps {
  std::vector<int> first, count, start;
  std::vector<int32_t> weight;
  int32_t total = 1;
};

ColumnTaps MakeColumnTaps(const ScalePlaneGeom& g) {
  ColumnTaps t;
  t.first.resize(g.dst_w);
  t.count.resize(g.dst_w);
  t.start.resize(g.dst_w);
  for (int x = 0; x < g.dst_w; ++x) {
    const AxisTaps a = AxisTapsFor(g.src_w, g.dst_w, g.filter_x, x);
    t.first[x] = a.first;
    t.count[x] = a.last - a.first + 1;
    t.start[x] = static_cast<int>(t.weight.size());
    for (int i = a.first; i <= a.last; ++i) t.weight.push_back(AxisWeight(a, i, g.dst_w));
    t.total = a.total;  // the same for every column
  }
  return t;
}

// One plane. `g` comes by value: the byte stores may alias anything behind a reference.
void ScalePlaneRows(const ScalePlaneGeom g, const uint8_t* src, int src_stride, uint8_t* dst,
                    int dst_stride) {
  const ColumnTaps tx = MakeColumnTaps(g);
  const int ch = g.channels;
  const int src_bytes = g.src_w * ch;
  // Vertical sums of one destination row: at most 255 * 2^14 each, so int32.
  std::vector<int32_t> column(src_bytes);
  // Raw pointers in locals: the byte stores below may alias anything the compiler would
  // otherwise reload through the vectors every sample.
  int32_t* const col = column.data();
  const int* const first = tx.first.data();
  const int* const count = tx.count.data();
  const int* const start = tx.start.data();
  const int32_t* const weight = tx.weight.data();
  for (int y = 0; y < g.dst_h; ++y) {
    const AxisTaps ty = AxisTapsFor(g.src_h, g.dst_h, g.filter_y, y);
    for (int j = ty.first; j <= ty.last; ++j) {
      const uint8_t* row = src + static_cast<size_t>(j) * src_stride;
      const int32_t w = AxisWeight(ty, j, g.dst_h);
      if (j == ty.first) {
        for (int b = 0; b < src_bytes; ++b) col[b] = w * row[b];
      } else {
        for (int b = 0; b < src_bytes; ++b) col[b] += w * row[b];
      }
    }
    const uint64_t half = (static_cast<uint64_t>(tx.total) * ty.total) >> 1;
    uint8_t* out = dst + static_cast<size_t>(y) * dst_stride;
    for (int x = 0; x < g.dst_w; ++x) {
      const int32_t* w = weight + start[x];
      const int32_t* in = col + static_cast<size_t>(first[x]) * ch;
      const int n = count[x];
      for (int c = 0; c < ch; ++c) {
        int64_t sum = 0;
        for (int k = 0; k < n; ++k) sum += static_cast<int64_t>(w[k]) * in[k * ch + c];
        const uint64_t v = DivideByTotal(static_cast<uint64_t>(sum) + half, g.reciprocal);
        out[x * ch + c] = static_cast<uint8_t>(v > 255 ? 255 : v);
      }
    }
  }
}

}  // namespace

Status ScaleFrameOnHost(const FrameView& src, const ScalePlan& plan, uint8_t* dst_packed) {
  RETURN_IF_ERROR(ValidateFrame(src));
  if (src.format != plan.format || src.width != plan.src_width || src.height != plan.src_height) {
    return InvalidArgument("source frame " + std::to_string(src.width) + "x" +
                           std::to_string(src.height) + " " + PixelFormatName(src.format) +
                           " does not match the scale plan's " + std::to_string(plan.src_width) +
                           "x" + std::to_string(plan.src_height) + " " +
                           PixelFormatName(plan.format));
  }
  if (dst_packed == nullptr) return InvalidArgument("destination buffer is null");
  for (int p = 0; p < plan.num_planes; ++p) {
    ScalePlaneRows(plan.plane[p], src.plane[p], src.stride[p], dst_packed + plan.dst_offset[p],
                   plan.dst_row_bytes[p]);
  }
  return OkStatus();
}

StatusOr<ScaledFrame> ScaleFrameToOwned(const FrameView& src, const ScalePlan& plan) {
  ScaledFrame out;
  out.bytes.resize(plan.dst_size);
  RETURN_IF_ERROR(ScaleFrameOnHost(src, plan, out.bytes.data()));
  ASSIGN_OR_RETURN(out.view, MakePackedFrameView(out.bytes.data(), out.bytes.size(), plan.dst_width,
                                                 plan.dst_height, plan.format, src.matrix, src.range));
  // Moved, never copied: a vector's move keeps its buffer, so the view stays valid.
  return StatusOr<ScaledFrame>(std::move(out));
}

}  // namespace conveyor

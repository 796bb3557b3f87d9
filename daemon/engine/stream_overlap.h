// How much the GPU's engines (upload, encode, readback) overlap, from the event times a
// worker records with stage timing on: the benchmark's overlap column and the daemon's
// conveyor_stream_overlap_ratio gauge use the same arithmetic.
#pragma once

#include <deque>
#include <mutex>
#include <vector>

#include "worker.h"

namespace conveyor {

// Total length covered by the intervals (overlaps counted once).
double UnionLength(std::vector<GpuInterval> v);

// Time during which at least two of the three engines were busy.
double OverlapLength(const std::vector<GpuInterval> engines[3]);

// The last `frames` frames' engine intervals; thread-safe.
class OverlapWindow {
 public:
  explicit OverlapWindow(size_t frames = 256) : capacity_(frames) {}

  // Keeps the frame's upload, encode and band readback intervals (none without stage
  // timing, in which case the frame is ignored).
  void Add(const FrameTimes& t);

  // Share of the window's span (first upload to last readback) in which two or more
  // engines were busy; 0 for an empty window.
  double Ratio() const;

 private:
  struct Frame {
    GpuInterval upload, encode;
    std::vector<GpuInterval> readback;
  };
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Frame> frames_;
};

}  // namespace conveyor

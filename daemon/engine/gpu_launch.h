// The issue side of the GPU worker: for a group of same-shape frames, each frame's plans,
// tables and upload on the upload stream, then the band stages on the group's encode
// lane, with an event after each band that the band's readback waits for
// (docs/DESIGN.md, Events). A launch of each stage carries bands of several encodes: a
// frame's renditions (the small ones beside the large one's last band) and, optionally,
// up to max_launch_frames queued frames of the same shape (a single 1080p band fills too
// few SMs on its own). Nothing here waits for the device.
#pragma once

#include <map>
#include <vector>

#include "gpu_scale.h"
#include "gpu_slot.h"
#include "gpu_stages.h"
#include "worker.h"

namespace conveyor {

// Pixel rows per band: the options' band_rows, or bands of at most about kGpuBandBlocks
// blocks (kGpuLadderBandBlocks for the renditions of a frame that has several).
int GpuBandRows(const WorkerOptions& options, const FrameView& f, const EncodeParams& params, bool ladder = false);
// Pixel rows of band 0 when it is smaller than the others (first_band_blocks), else 0.
int GpuFirstBandRows(const WorkerOptions& options, const FrameView& f, const EncodeParams& params,
                     bool ladder = false);

// Whether two frames can share launches: the same plans, so the same size, format,
// colour signalling and renditions.
bool SameShape(const FrameRequest& a, const FrameRequest& b);

class GpuLauncher {
 public:
  // `streams` and `counters` are the worker's and outlive this.
  GpuLauncher(const WorkerOptions& options, GpuStreams& streams, GpuCounters* counters)
      : options_(options), streams_(streams), counters_(counters) {}

  // Queues everything the GPU does for a group of same-shape frames, which share the
  // encode lane of the first one, and sets each frame's status. A frame whose planning
  // or upload fails gets its own status and leaves the group; a failed launch fails
  // every frame still in it (they shared it). Issue thread only.
  void Issue(const std::vector<GpuSlot*>& group);

 private:
  struct TablesEntry {
    PinnedBuffer host;
    DeviceBuffer device;
  };

  Status Plan(GpuSlot& s);
  StatusOr<const EncodeTables*> TablesFor(int quality, int slot);
  Status Upload(GpuSlot& s);
  // Device input (FrameRequest::device): after the decoder's copies, the surfaces into
  // the slot's source in the packed layout (P010 narrowed), on the upload stream.
  Status CopyFromDevice(GpuSlot& s);
  Status Launch(const std::vector<GpuSlot*>& group);
  Status PlaceTiles(GpuSlot& s, EncodeLane& lane);

  const WorkerOptions& options_;
  GpuStreams& streams_;
  GpuCounters* const counters_;
  std::map<int, TablesEntry> tables_;  // device tables by quality
};

}  // namespace conveyor

// The readback side of the GPU worker: a group's frames come back band by band, each
// band's copy queued once that band's event has completed (docs/DESIGN.md, Band
// readback), into the pinned readback ring or, when the ring is full, through the slot's
// own band buffers. The results get the JPEG header and trailer around the bands and, for
// timed frames, the GPU times of each stage.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "gpu_slot.h"
#include "worker.h"

namespace conveyor {

class BandReadback {
 public:
  // `streams`, `reference` (the time zero of stage timing) and `counters` are the
  // worker's and outlive this; results keep `ring` while they lend from it.
  BandReadback(const WorkerOptions& options, GpuStreams& streams, const Event& reference,
               std::shared_ptr<RingMemory> ring, GpuCounters* counters)
      : options_(options), streams_(streams), reference_(reference), ring_(std::move(ring)), counters_(counters) {}

  // Reads a group's frames back, band k of every frame before band k+1 of any, into
  // `results` (one per frame of the group). Once each frame's upload has completed, its
  // input is released. Any delivery thread, each with its own group.
  Status Read(const std::vector<GpuSlot*>& group, const std::vector<FrameResult*>& results);

 private:
  // A copy into one of the slot's band buffers, appended to the result once it completes.
  struct InFlight {
    int buffer;
    uint32_t bytes;
    size_t rendition;
    bool last_band;  // the rendition's JPEG is complete once this piece is appended
  };
  // One frame's readback.
  struct FrameReadback {
    GpuSlot& slot;
    FrameResult& result;
    int next_buffer = 0;  // the band buffers are taken in turn
    std::deque<InFlight> in_flight;
    std::shared_ptr<RingLease> lease;  // the frame's room in the ring
    bool fallback = false;             // the ring was full: the rest goes through the band buffers
    bool ring_unsynced = false;        // ring copies queued since the last wait
  };
  // One band's copy to the host.
  struct BandCopy {
    const uint8_t* from;  // the band's bitstream on the device
    uint32_t bytes;
    size_t rendition;
    int flat;   // the band's index over every rendition (the slot's band events)
    bool last;  // the rendition's last band: the trailer follows it
  };

  Status ReadBand(FrameReadback& f, const EncodePlan& p, size_t rendition, int band, int flat);
  Status CopyToRing(FrameReadback& f, const BandCopy& band, size_t at);
  Status CopyThroughBandBuffers(FrameReadback& f, const BandCopy& band);
  Status AppendOldest(FrameReadback& f);
  Status SyncRing(FrameReadback& f);
  void RecordTimes(const GpuSlot& s, int bands_total, FrameTimes* t) const;
  double SinceStart(const Event& e) const;

  const WorkerOptions& options_;
  GpuStreams& streams_;
  const Event& reference_;
  const std::shared_ptr<RingMemory> ring_;
  GpuCounters* const counters_;
};

}  // namespace conveyor

// The types the GPU worker's parts share: a frame's slot (its pinned and device buffers,
// its events and its plans), the encode lanes and the streams, the pinned readback ring,
// the counters behind WorkerStats, and the helpers that turn a runtime call's result into
// a Status naming the slot.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "encode_plan.h"
#include "gpu_band_scratch.h"
#include "gpu_runtime.h"
#include "jpeg_tables.h"
#include "readback_ring.h"
#include "scale_plan.h"
#include "stage_deinterlace.h"
#include "stage_orient.h"
#include "worker.h"

namespace conveyor {

constexpr int kMaxBandsPerFrame = 4096;  // mapped counters per slot, summed over renditions
// Band buffers per slot on the host side of readback: band k's copy is queued while
// band k-1's may still be in flight.
constexpr int kReadbackBuffers = 2;

// One frame in flight, from Submit() until its bytes are read back. Its buffers are sized
// at start for the largest frame the limits allow (AllocateInput, AllocateOutput), since
// growing one frees and allocates pinned or device memory, which waits for the whole
// device (docs/DESIGN.md, Memory bounds).
struct GpuSlot {
  int index = 0;
  bool direct = false;      // upload straight from the caller's registered memory
  bool device = false;      // copy from the caller's device memory (FrameRequest::device)
  bool input_released = false;
  PinnedBuffer input;       // the packed frame, source of the H2D copy
  PinnedBuffer band_bytes;  // mapped: each band's byte count, written by SegmentCodeKernel
  PinnedBuffer output;      // kReadbackBuffers band buffers, destinations of the D2H copies
  Event copied[kReadbackBuffers];  // recorded after the copy into each band buffer
  Event ring_copied;               // recorded after copies into the readback ring, to wait on
  DeviceBuffer source;      // the uploaded frame
  // The uploaded frame deinterlaced (FrameRequest::deinterlace) and turned
  // (FrameRequest::orientation), each made on the encode lane's stream before the
  // renditions; reserved at the first such frame the slot takes.
  DeviceBuffer whole;
  DeviceBuffer turned;
  DeviceBuffer out;         // every band of every rendition, at fixed offsets
  Event uploaded;
  // Device input: recorded on the decode stream at Submit(), so the upload stream waits
  // for the decoder's copies into the surfaces and for nothing else.
  Event decoded;
  std::vector<Event> band_done;  // flattened over renditions
  // Timing events (created with stage timing on, recorded for timed frames only; the
  // events above never carry timing, which costs throughput):
  std::vector<Event> band_end;         // beside band_done
  std::vector<Event> band_copy_start;  // around band k's D2H
  std::vector<Event> band_copy_end;
  Event upload_start, upload_end, encode_start;

  FrameRequest request;
  SteadyTime submitted, started;
  size_t frame_bytes = 0;
  // The frame the renditions are made from, as a shape (no planes): the request's frame,
  // or its turn, whose plan orient_plan holds. deinterlace_plan: the frame is made whole
  // first, from the upload of it and of the frames before and after (frame_bytes each).
  FrameView shape;
  std::optional<DeinterlacePlan> deinterlace_plan;
  std::optional<OrientPlan> orient_plan;
  std::vector<EncodePlan> plans;
  std::vector<const EncodeTables*> tables;  // per rendition, on the device
  std::vector<size_t> out_offset;  // per rendition, into `out`
  std::vector<std::optional<ScalePlan>> scale_plans;  // per rendition; empty: source size
  std::vector<size_t> scaled_offset;  // per scaled rendition, into the frame's part of the lane's `scaled`
  size_t scaled_bytes = 0;  // every scaled rendition of the frame, end to end
  // Storyboards: the tiling stage's plans, one per cell of the frame's tiled rendition,
  // which then has no encode (`plans` is empty, and band_done[0] marks the tiles placed).
  std::vector<ScalePlan> tile_plans;
  Status status;
  int lane = 0;             // the encode lane (and delivery thread) this frame uses
  int64_t lane_pixels = 0;  // its share of its lane's pixels until it is read back
  uint64_t timing_run = 0;  // the frame's run of timed frames; 0: not timed
  uint64_t sequence = 0;    // submission order within the request's stream, for in-order delivery

  // The buffers that feed the upload: `max_input` bytes of pinned input and of device
  // source, and the mapped band counts.
  Status AllocateInput(size_t max_input);
  // The readback's buffers: kReadbackBuffers pinned band buffers of `band_buffer` bytes
  // and their events, and `out_capacity` device bytes of encoded bands.
  Status AllocateOutput(uint64_t band_buffer, uint64_t out_capacity);
  // The events every frame records; the timing ones with stage timing on.
  Status CreateEvents(bool stage_timing);
  // Band events for `bands` bands, created once and kept.
  Status ReserveBandEvents(size_t bands, bool stage_timing);
  // Tells the caller its registered memory is no longer read (once per frame).
  void ReleaseInput();
};

// An encode stream with its own scratch. Consecutive frames take turns on the lanes, so
// the small launches of two frames can share the SMs.
struct EncodeLane {
  Stream stream;
  BandScratch scratch;
  DeviceBuffer scaled;  // the rendition being encoded, when it is scaled

  // Scratch of this lane, shared by the frames encoded on it and ordered by its stream. Growing waits for
  // that stream first; it happens only when a frame needs more than any before it.
  Status ReserveScratch(const BandScratchSizes& bytes, std::atomic<uint64_t>* device_bytes);
  // The scaled frames renditions are encoded from; grows like the scratch.
  Status ReserveScaled(size_t bytes, std::atomic<uint64_t>* device_bytes);
};

// The worker's streams: one upload, one readback and the encode lanes, all non-blocking
// (docs/DESIGN.md, Stream roles). Recovery re-creates them in place, so the parts that
// use them hold a reference to this.
struct GpuStreams {
  Stream upload, readback;
  std::vector<EncodeLane> lanes;

  // Creates every stream, or re-creates it; the lanes keep their scratch.
  Status Create(int encode_streams);
  std::vector<Stream*> All();
};

// The pinned readback ring and its memory, shared by the worker and the leases of the
// results that still lend from it (which may outlive the worker).
struct RingMemory {
  explicit RingMemory(PinnedBuffer b) : buffer(std::move(b)), ring(buffer.size()) {}
  PinnedBuffer buffer;
  ReadbackRing ring;
};

// A frame's room in the ring, given back when the last rendition lending from it is
// dropped.
struct RingLease {
  explicit RingLease(std::shared_ptr<RingMemory> m) : memory(std::move(m)) {}
  ~RingLease() {
    for (size_t offset : offsets) memory->ring.Release(offset);
  }
  std::shared_ptr<RingMemory> memory;
  std::vector<size_t> offsets;
};

// What WorkerStats reports, counted by the parts that do the work.
struct GpuCounters {
  std::atomic<uint64_t> done{0}, failed{0}, restarts{0}, device_bytes{0};
  std::atomic<uint64_t> pinned_bytes{0};  // grows on the issue thread, read by Stats()
  std::atomic<int64_t> issue_busy_ns{0}, delivery_busy_ns{0};
  std::atomic<int64_t> band_wait_ns{0}, copy_wait_ns{0}, append_ns{0};  // parts of delivery_busy_ns
  std::atomic<uint64_t> ring_fallbacks{0};  // frames that found the ring full
  std::atomic<uint64_t> launch_groups{0}, launch_group_frames{0};
};

int64_t Nanoseconds(SteadyTime from, SteadyTime to);

// A runtime call's result as a Status that names the call and the slot.
Status Check(const std::string& what, int slot, hipError_t err);
// The test hook's fault for a runtime call, if it injects one (WorkerOptions::test_fault).
Status Injected(const WorkerOptions& options, const std::string& what, int slot);

}  // namespace conveyor

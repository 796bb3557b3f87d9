// Band-by-band readback of a group of frames into their results.
#include "gpu_readback.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "jfif_writer.h"

namespace conveyor {
namespace {

void AppendTrailer(JpegBytes* jpeg) {
  std::vector<uint8_t> trailer;
  AppendJfifTrailer(&trailer);
  jpeg->AppendCopy(trailer.data(), trailer.size());
}

}  // namespace

// A band is copied into the readback ring when it has room: the result then lends those
// bytes to the caller, and no host copy follows. When the ring is full (callers hold many
// results), the frame's remaining bands take the fallback path: the slot's two band
// buffers, in turn, each read into the result, and reused, only after its copy's event
// has completed; a band larger than a buffer (a ladder's) goes through them in pieces. A
// frame never goes back to the ring, so its pieces stay in order. Copies stay in flight
// across renditions: waiting for each rendition's last copy before queuing the next
// rendition's first would serialise a ladder frame's copies.
Status BandReadback::Read(const std::vector<GpuSlot*>& group, const std::vector<FrameResult*>& results) {
  for (GpuSlot* s : group) {
    RETURN_IF_ERROR(Check("hipEventSynchronize(uploaded)", s->index, hipEventSynchronize(s->uploaded.get())));
    // The upload has completed: the input, pinned slot, caller memory or a decoder's
    // surface, may be written again from here on (docs/DESIGN.md, Slot reuse). A device
    // frame's surface goes back to its decoder now, not once the frame is encoded and
    // read back, so that a decoder's few surfaces are held only for their copy.
    if (s->direct || s->device) {
      s->ReleaseInput();
    } else if (options_.test_on_input_free) {
      options_.test_on_input_free(s->index, s->input.get<uint8_t>(), s->frame_bytes);
    }
  }
  const std::vector<EncodePlan>& plans = group.front()->plans;  // the group's frames share them
  if (plans.empty()) {
    // Tiles placed in a sprite (a storyboard's frame goes alone): nothing to read back, but
    // the slot's source is read until the tiling stage is done.
    GpuSlot& s = *group.front();
    return Check("hipEventSynchronize(tiles placed)", s.index, hipEventSynchronize(s.band_done[0].get()));
  }
  int bands_total = 0;
  for (const EncodePlan& p : plans) bands_total += p.num_bands;
  if (!options_.progress_events) {
    // Readback only after the whole frame is encoded: the stall that band events avoid,
    // kept to measure them against.
    for (GpuSlot* s : group) {
      RETURN_IF_ERROR(Check("hipEventSynchronize(frame encoded)", s->index,
                            hipEventSynchronize(s->band_done[bands_total - 1].get())));
    }
  }
  std::vector<FrameReadback> frames;
  frames.reserve(group.size());
  for (size_t i = 0; i < group.size(); ++i) frames.push_back({*group[i], *results[i]});
  int flat = 0;
  for (size_t r = 0; r < plans.size(); ++r) {
    const EncodePlan& p = plans[r];
    std::vector<uint8_t> header;
    AppendJfifHeader(p, &header);
    for (FrameResult* result : results) result->jpeg[r].AppendCopy(header.data(), header.size());
    for (int band = 0; band < p.num_bands; ++band, ++flat) {
      for (FrameReadback& f : frames) RETURN_IF_ERROR(ReadBand(f, p, r, band, flat));
    }
  }
  for (FrameReadback& f : frames) {
    while (!f.in_flight.empty()) RETURN_IF_ERROR(AppendOldest(f));
    if (f.ring_unsynced) RETURN_IF_ERROR(SyncRing(f));
  }
  for (FrameReadback& f : frames) {
    if (f.slot.timing_run) RecordTimes(f.slot, bands_total, &f.result.times);
  }
  return OkStatus();
}

// Waits for the band's event, then queues the band's copy behind it on the readback
// stream: into the ring while it has room, else through the band buffers.
Status BandReadback::ReadBand(FrameReadback& f, const EncodePlan& p, size_t rendition, int band, int flat) {
  GpuSlot& s = f.slot;
  Event& done = s.band_done[flat];
  const SteadyTime wait_start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(Check("hipEventSynchronize(band_done " + std::to_string(band) + ")", s.index,
                        hipEventSynchronize(done.get())));
  counters_->band_wait_ns += Nanoseconds(wait_start, std::chrono::steady_clock::now());
  const volatile uint32_t* counts = s.band_bytes.get<uint32_t>();  // mapped
  const uint32_t n = counts[flat];
  if (n > p.band_capacity) {
    return Internal("band " + std::to_string(band) + " overflowed its buffer (slot " + std::to_string(s.index) + ")");
  }
  std::optional<size_t> at;
  const bool was_fallback = f.fallback;
  if (!f.fallback) {
    at = ring_->ring.Allocate(n);
    if (at) {
      if (!f.lease) f.lease = std::make_shared<RingLease>(ring_);
      f.lease->offsets.push_back(*at);
    } else {
      f.fallback = true;
      counters_->ring_fallbacks.fetch_add(1);
    }
  }
  if (!at && (band == 0 || !was_fallback)) {
    // The rest of the rendition is copied into the result: room for it at once, guessed
    // from this band with a quarter to spare (growing band by band copies a 4K frame's
    // bytes twice over).
    f.result.jpeg[rendition].ReserveOwned(static_cast<size_t>(n) * (p.num_bands - band) * 5 / 4 + 2);
  }
  const BandCopy copy{s.out.get<uint8_t>() + s.out_offset[rendition] + band * p.band_capacity, n, rendition, flat,
                      band == p.num_bands - 1};
  RETURN_IF_ERROR(Check("hipStreamWaitEvent(readback, band_done)", s.index,
                        hipStreamWaitEvent(streams_.readback.get(), done.get(), 0)));
  if (s.timing_run) (void)hipEventRecord(s.band_copy_start[flat].get(), streams_.readback.get());
  return at ? CopyToRing(f, copy, *at) : CopyThroughBandBuffers(f, copy);
}

// The result lends the band's bytes from the ring.
Status BandReadback::CopyToRing(FrameReadback& f, const BandCopy& band, size_t at) {
  GpuSlot& s = f.slot;
  uint8_t* dst = ring_->buffer.get<uint8_t>() + at;
  RETURN_IF_ERROR(Injected(options_, "hipMemcpyAsync(readback)", s.index));
  RETURN_IF_ERROR(Check("hipMemcpyAsync(readback)", s.index,
                        hipMemcpyAsync(dst, band.from, band.bytes, hipMemcpyDeviceToHost, streams_.readback.get())));
  if (s.timing_run) (void)hipEventRecord(s.band_copy_end[band.flat].get(), streams_.readback.get());
  JpegBytes& jpeg = f.result.jpeg[band.rendition];
  jpeg.AppendLent(dst, band.bytes, f.lease);
  if (band.last) AppendTrailer(&jpeg);
  f.ring_unsynced = true;
  // The frame's first bytes: waited for now, while its next band encodes.
  if (f.result.times.first_byte == SteadyTime{}) RETURN_IF_ERROR(SyncRing(f));
  return OkStatus();
}

// The band goes through the slot's band buffers in pieces of at most one buffer, each
// buffer reused only after its last piece was appended to the result.
Status BandReadback::CopyThroughBandBuffers(FrameReadback& f, const BandCopy& band) {
  GpuSlot& s = f.slot;
  const uint32_t piece = static_cast<uint32_t>(s.output.size() / kReadbackBuffers);
  uint32_t copied = 0;
  do {
    if (f.in_flight.size() == kReadbackBuffers) RETURN_IF_ERROR(AppendOldest(f));
    const int buffer = f.next_buffer;
    f.next_buffer = (buffer + 1) % kReadbackBuffers;
    const uint32_t bytes = std::min(piece, band.bytes - copied);
    RETURN_IF_ERROR(Injected(options_, "hipMemcpyAsync(readback)", s.index));
    RETURN_IF_ERROR(Check("hipMemcpyAsync(readback)", s.index,
                          hipMemcpyAsync(s.output.get<uint8_t>() + buffer * piece, band.from + copied, bytes,
                                         hipMemcpyDeviceToHost, streams_.readback.get())));
    RETURN_IF_ERROR(Check("hipEventRecord(copied)", s.index,
                          hipEventRecord(s.copied[buffer].get(), streams_.readback.get())));
    copied += bytes;
    f.in_flight.push_back({buffer, bytes, band.rendition, band.last && copied == band.bytes});
  } while (copied < band.bytes);
  if (s.timing_run) (void)hipEventRecord(s.band_copy_end[band.flat].get(), streams_.readback.get());
  return OkStatus();
}

// Waits for the oldest copy into a band buffer and appends its bytes to the result.
Status BandReadback::AppendOldest(FrameReadback& f) {
  GpuSlot& s = f.slot;
  const InFlight c = f.in_flight.front();
  f.in_flight.pop_front();
  const SteadyTime wait_start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(Check("hipEventSynchronize(copied)", s.index, hipEventSynchronize(s.copied[c.buffer].get())));
  const SteadyTime copied = std::chrono::steady_clock::now();
  f.ring_unsynced = false;  // the ring's copies of the frame were queued before this one
  if (f.result.times.first_byte == SteadyTime{}) f.result.times.first_byte = copied;
  JpegBytes& jpeg = f.result.jpeg[c.rendition];
  jpeg.AppendCopy(s.output.get<uint8_t>() + c.buffer * (s.output.size() / kReadbackBuffers), c.bytes);
  if (c.last_band) AppendTrailer(&jpeg);
  counters_->copy_wait_ns += Nanoseconds(wait_start, copied);
  counters_->append_ns += Nanoseconds(copied, std::chrono::steady_clock::now());
  return OkStatus();
}

// Waits for the frame's ring copies queued so far (and the fallback ones before them).
Status BandReadback::SyncRing(FrameReadback& f) {
  GpuSlot& s = f.slot;
  const SteadyTime wait_start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(
      Check("hipEventRecord(ring copied)", s.index, hipEventRecord(s.ring_copied.get(), streams_.readback.get())));
  RETURN_IF_ERROR(Check("hipEventSynchronize(ring copied)", s.index, hipEventSynchronize(s.ring_copied.get())));
  const SteadyTime copied = std::chrono::steady_clock::now();
  f.ring_unsynced = false;
  if (f.result.times.first_byte == SteadyTime{}) f.result.times.first_byte = copied;
  counters_->copy_wait_ns += Nanoseconds(wait_start, copied);
  return OkStatus();
}

// A timed frame's GPU intervals, once its last copy has completed.
void BandReadback::RecordTimes(const GpuSlot& s, int bands_total, FrameTimes* t) const {
  t->timing_run = s.timing_run;
  t->upload = {SinceStart(s.upload_start), SinceStart(s.upload_end)};
  t->encode = {SinceStart(s.encode_start), SinceStart(s.band_end[bands_total - 1])};
  for (int k = 0; k < bands_total; ++k) {
    t->band_done.push_back(SinceStart(s.band_end[k]));
    t->band_readback.push_back({SinceStart(s.band_copy_start[k]), SinceStart(s.band_copy_end[k])});
  }
}

// Seconds from the worker's reference event to a completed timing event.
double BandReadback::SinceStart(const Event& e) const {
  float ms = 0;
  return hipEventElapsedTime(&ms, reference_.get(), e.get()) == hipSuccess ? ms / 1e3 : 0;
}

}  // namespace conveyor

// Planning, upload and band launches of a group of frames on the GPU.
#include "gpu_launch.h"

#include <algorithm>
#include <optional>
#include <string>

#include "device_sprite.h"
#include "gpu_deinterlace.h"
#include "gpu_narrow.h"
#include "gpu_orient.h"
#include "scale_plan.h"
#include "tile_plan.h"

namespace conveyor {
namespace {

std::string SlotNames(const std::vector<GpuSlot*>& group) {
  std::string names = group.size() == 1 ? "slot " : "slots ";
  for (size_t i = 0; i < group.size(); ++i) names += (i ? "," : "") + std::to_string(group[i]->index);
  return names;
}

// The frame the renditions (and tiles) are made from: the upload, made whole and turned
// where the slot's plans say.
const uint8_t* MadeFrame(const GpuSlot& s) {
  return s.orient_plan ? s.turned.get<uint8_t>() : s.deinterlace_plan ? s.whole.get<uint8_t>() : s.source.get<uint8_t>();
}

// The device frame rendition r of frame `s` (the i-th of its launch group) is encoded
// from: the upload itself, or a scaled copy in the lane's buffer, whose scale is added
// to `scales`.
SourcePlanes SourceOf(GpuSlot& s, int r, int i, EncodeLane& lane, std::vector<ScaleJob>* scales) {
  const FrameView& f = s.shape;
  const EncodePlan& p = s.plans[r];
  const uint8_t* frame = MadeFrame(s);
  if (s.scale_plans[r]) {
    uint8_t* scaled = lane.scaled.get<uint8_t>() + i * s.scaled_bytes + s.scaled_offset[r];
    scales->push_back({&*s.scale_plans[r], PackedSourcePlanes(frame, f.format, f.width, f.height), scaled});
    frame = scaled;
  }
  return PackedSourcePlanes(frame, f.format, p.width, p.height);
}

}  // namespace

int GpuBandRows(const WorkerOptions& options, const FrameView& f, const EncodeParams& params, bool ladder) {
  if (options.band_rows > 0) return options.band_rows;
  return EvenBandRows(f, params.subsampling, ladder ? kGpuLadderBandBlocks : kGpuBandBlocks);
}

int GpuFirstBandRows(const WorkerOptions& options, const FrameView& f, const EncodeParams& params, bool ladder) {
  if (options.first_band_blocks <= 0 || options.band_rows > 0) return 0;
  return SmallFirstBandRows(f, params.subsampling, GpuBandRows(options, f, params, ladder), options.first_band_blocks);
}

bool SameShape(const FrameRequest& a, const FrameRequest& b) {
  // A storyboard's frames go alone: each writes or reads its sprite in turn.
  const auto storyboard = [](const FrameRequest& r) { return r.sprite != nullptr || r.renditions.front().tiled(); };
  if (storyboard(a) || storyboard(b)) return false;
  const FrameView &x = a.frame, &y = b.frame;
  if (x.width != y.width || x.height != y.height || x.format != y.format || x.matrix != y.matrix ||
      x.EffectiveRange() != y.EffectiveRange() || a.orientation != b.orientation ||
      a.deinterlace.enabled != b.deinterlace.enabled ||
      a.deinterlace.top_field_first != b.deinterlace.top_field_first ||
      a.renditions.size() != b.renditions.size()) {
    return false;
  }
  for (size_t i = 0; i < a.renditions.size(); ++i) {
    const EncodeParams &p = a.renditions[i].params, &q = b.renditions[i].params;
    if (RenditionWidth(a, i) != RenditionWidth(b, i) || RenditionHeight(a, i) != RenditionHeight(b, i) ||
        p.quality != q.quality || p.subsampling != q.subsampling || p.restart_interval != q.restart_interval) {
      return false;
    }
  }
  return true;
}

void GpuLauncher::Issue(const std::vector<GpuSlot*>& group) {
  std::vector<GpuSlot*> live;
  for (GpuSlot* s : group) {
    if (s->status.ok()) s->status = Plan(*s);  // Submit() may have failed it already
    if (s->status.ok()) s->status = Upload(*s);
    if (s->status.ok()) live.push_back(s);
  }
  if (live.empty()) return;
  const Status launched = Launch(live);
  if (!launched.ok()) {
    for (GpuSlot* s : live) s->status = launched;
  }
}

// The plans of a frame's renditions, and the buffers and events its slot needs.
Status GpuLauncher::Plan(GpuSlot& s) {
  // The renditions are made from the frame, deinterlaced where asked, then turned where
  // asked.
  s.shape = s.request.frame;
  s.deinterlace_plan.reset();
  if (s.request.deinterlace.enabled) {
    const FrameView& in = s.request.frame;
    ASSIGN_OR_RETURN(DeinterlacePlan dp, MakeDeinterlacePlan(in.format, in.width, in.height,
                                                             s.request.deinterlace.top_field_first));
    if (s.whole.size() < dp.dst_size) {
      counters_->device_bytes += dp.dst_size - s.whole.size();
      RETURN_IF_ERROR(s.whole.Reserve(dp.dst_size, "slot whole"));
    }
    s.deinterlace_plan = dp;
  }
  s.orient_plan.reset();
  if (!s.request.orientation.identity()) {
    const FrameView& in = s.request.frame;
    ASSIGN_OR_RETURN(OrientPlan op, MakeOrientPlan(in.format, in.width, in.height, s.request.orientation));
    s.shape.format = op.dst_format;
    s.shape.width = op.dst_width;
    s.shape.height = op.dst_height;
    if (s.turned.size() < op.dst_size) {
      counters_->device_bytes += op.dst_size - s.turned.size();
      RETURN_IF_ERROR(s.turned.Reserve(op.dst_size, "slot turned"));
    }
    s.orient_plan = op;
  }
  const FrameView& f = s.shape;
  s.plans.clear();
  s.out_offset.clear();
  s.scale_plans.assign(s.request.renditions.size(), std::nullopt);
  s.scaled_offset.assign(s.request.renditions.size(), 0);
  s.scaled_bytes = 0;
  s.tile_plans.clear();
  size_t out_total = 0, bands_total = 0;
  for (size_t i = 0; i < s.request.renditions.size(); ++i) {
    const Rendition& r = s.request.renditions[i];
    if (r.tiled()) {  // the tiling stage only: the sprite is encoded by a request of its own
      const FrameView& sprite = r.tiles.sprite->frame();
      for (const auto& [x, y] : r.tiles.cells) {
        ASSIGN_OR_RETURN(ScalePlan tp, MakeTilePlan(f.format, f.width, f.height, r.width, r.height, sprite.width,
                                                    sprite.height, x, y));
        s.tile_plans.push_back(tp);
      }
      continue;
    }
    FrameView shape = f;  // the frame this rendition encodes, as a shape: plane pointers are not read
    if (RenditionIsScaled(s.request, i)) {
      ASSIGN_OR_RETURN(ScalePlan sp, MakeScalePlan(f.format, f.width, f.height, RenditionWidth(s.request, i),
                                                   RenditionHeight(s.request, i)));
      shape.width = sp.dst_width;
      shape.height = sp.dst_height;
      s.scaled_offset[i] = s.scaled_bytes;
      s.scaled_bytes += (sp.dst_size + 255) / 256 * 256;  // each rendition's planes aligned as an allocation's
      s.scale_plans[i] = sp;
    }
    const PlaneGeometry g = PackedPlaneGeometry(f.format, shape.width, shape.height);
    for (int p = 0; p < 3; ++p) {
      shape.plane[p] = s.input.get<uint8_t>();
      shape.stride[p] = g.row_bytes[p];
    }
    const bool ladder = s.request.renditions.size() > 1;
    ASSIGN_OR_RETURN(EncodePlan plan, MakeEncodePlan(shape, r.params, GpuBandRows(options_, shape, r.params, ladder),
                                                     GpuFirstBandRows(options_, shape, r.params, ladder)));
    s.out_offset.push_back(out_total);
    out_total += plan.band_capacity * plan.num_bands;
    bands_total += plan.num_bands;
    s.plans.push_back(plan);
  }
  if (bands_total > kMaxBandsPerFrame) return InvalidArgument("too many bands in one frame");
  // Tables first: a quality's first use queues their copy on the upload stream, and it
  // must come before this frame's upload, whose event is all the encode stream waits for.
  s.tables.clear();
  for (const Rendition& r : s.request.renditions) {
    if (r.tiled()) continue;
    ASSIGN_OR_RETURN(const EncodeTables* t, TablesFor(r.params.quality, s.index));
    s.tables.push_back(t);
  }

  // Slot buffers: the slot is ours, nothing in flight uses them. The pinned band
  // buffers keep their size from the start: a larger band is read back through them
  // in pieces.
  if (s.out.size() < out_total) counters_->device_bytes += out_total - s.out.size();
  RETURN_IF_ERROR(s.out.Reserve(out_total, "slot out"));
  // A frame of tiles only still has an event: band_done[0], its tiles placed.
  return s.ReserveBandEvents(std::max<size_t>(bands_total, 1), options_.stage_timing.on());
}

// Device tables for one quality, uploaded once on the upload stream.
StatusOr<const EncodeTables*> GpuLauncher::TablesFor(int quality, int slot) {
  auto it = tables_.find(quality);
  if (it != tables_.end()) return it->second.device.get<const EncodeTables>();
  TablesEntry e;
  ASSIGN_OR_RETURN(e.host, PinnedBuffer::Allocate(sizeof(EncodeTables), false, "tables"));
  ASSIGN_OR_RETURN(e.device, DeviceBuffer::Allocate(sizeof(EncodeTables), "tables"));
  BuildEncodeTables(quality, e.host.get<EncodeTables>());
  RETURN_IF_ERROR(Injected(options_, "hipMemcpyAsync(tables)", slot));
  RETURN_IF_ERROR(Check("hipMemcpyAsync(tables)", slot,
                        hipMemcpyAsync(e.device.get(), e.host.get(), sizeof(EncodeTables),
                                       hipMemcpyHostToDevice, streams_.upload.get())));
  counters_->pinned_bytes += e.host.size();
  auto& entry = tables_[quality] = std::move(e);
  return entry.device.get<const EncodeTables>();
}

Status GpuLauncher::CopyFromDevice(GpuSlot& s) {
  hipStream_t stream = streams_.upload.get();
  if (s.request.sprite != nullptr) {  // a storyboard's sprite, once its tiles are written
    auto* sprite = static_cast<const DeviceSprite*>(s.request.sprite.get());
    RETURN_IF_ERROR(Check("hipStreamWaitEvent(upload, sprite written)", s.index,
                          hipStreamWaitEvent(stream, sprite->written(), 0)));
    RETURN_IF_ERROR(Injected(options_, "hipMemcpyAsync(sprite)", s.index));
    return Check("hipMemcpyAsync(sprite)", s.index,
                 hipMemcpyAsync(s.source.get(), sprite->data(), s.frame_bytes, hipMemcpyDeviceToDevice, stream));
  }
  RETURN_IF_ERROR(Injected(options_, "hipStreamWaitEvent(upload, decoded)", s.index));
  RETURN_IF_ERROR(Check("hipStreamWaitEvent(upload, decoded)", s.index, hipStreamWaitEvent(stream, s.decoded.get(), 0)));
  const FrameRequest& r = s.request;
  const FrameView* frames[3] = {&r.frame, &r.deinterlace.prev, &r.deinterlace.next};
  const int count = s.deinterlace_plan ? 3 : 1;
  const FrameView& f = r.frame;
  const PlaneGeometry g = PackedPlaneGeometry(f.format, f.width, f.height);
  for (int k = 0; k < count; ++k) {
    const FrameView& in = *frames[k];
    uint8_t* dst = s.source.get<uint8_t>() + k * s.frame_bytes;
    if (r.device.p010) {  // narrowed to 8 bits on the way, as libswscale narrows yuv420p10
      RETURN_IF_ERROR(Injected(options_, "launch narrow", s.index));
      const NarrowPlan plan = MakeNarrowPlan(f.width, f.height, f.EffectiveRange() == ColorRange::kFull);
      RETURN_IF_ERROR(EnqueueNarrowP010(plan, in.plane[0], in.stride[0], in.plane[1], in.stride[1], dst, stream)
                          .WithContext("slot " + std::to_string(s.index)));
      continue;
    }
    for (int p = 0; p < 2; ++p) {  // NV12: the luma plane, then the interleaved chroma
      RETURN_IF_ERROR(Injected(options_, "hipMemcpy2DAsync(device input)", s.index));
      RETURN_IF_ERROR(Check("hipMemcpy2DAsync(device input)", s.index,
                            hipMemcpy2DAsync(dst + g.offset[p], g.row_bytes[p], in.plane[p], in.stride[p],
                                             g.row_bytes[p], g.rows[p], hipMemcpyDeviceToDevice, stream)));
    }
  }
  return OkStatus();
}

Status GpuLauncher::Upload(GpuSlot& s) {
  if (s.timing_run) (void)hipEventRecord(s.upload_start.get(), streams_.upload.get());
  if (s.device) {
    RETURN_IF_ERROR(CopyFromDevice(s));
    if (s.timing_run) (void)hipEventRecord(s.upload_end.get(), streams_.upload.get());
    return Check("hipEventRecord(uploaded)", s.index, hipEventRecord(s.uploaded.get(), streams_.upload.get()));
  }
  RETURN_IF_ERROR(Injected(options_, "hipMemcpyAsync(upload)", s.index));
  RETURN_IF_ERROR(Check("hipMemcpyAsync(upload)", s.index,
                        hipMemcpyAsync(s.source.get(), s.direct ? s.request.frame.plane[0] : s.input.get<uint8_t>(),
                                       s.frame_bytes * (s.deinterlace_plan ? 3 : 1), hipMemcpyHostToDevice,
                                       streams_.upload.get())));
  if (s.timing_run) (void)hipEventRecord(s.upload_end.get(), streams_.upload.get());
  return Check("hipEventRecord(uploaded)", s.index, hipEventRecord(s.uploaded.get(), streams_.upload.get()));
}

// The tiling stage: the frame (made whole and turned) scaled into its cells of the
// sprite, after the sprite's earlier writes, then `written` and the frame's band_done[0]
// recorded behind it.
Status GpuLauncher::PlaceTiles(GpuSlot& s, EncodeLane& lane) {
  const FrameView& f = s.shape;
  auto* sprite = static_cast<DeviceSprite*>(s.request.renditions.front().tiles.sprite.get());
  const SourcePlanes frame = PackedSourcePlanes(MadeFrame(s), f.format, f.width, f.height);
  std::vector<ScaleJob> jobs;
  for (const ScalePlan& p : s.tile_plans) jobs.push_back({&p, frame, sprite->data()});
  RETURN_IF_ERROR(Check("hipStreamWaitEvent(encode, sprite written)", s.index,
                        hipStreamWaitEvent(lane.stream.get(), sprite->written(), 0)));
  Status placed = Injected(options_, "launch tiles", s.index);
  if (placed.ok()) placed = EnqueueScales(jobs.data(), static_cast<int>(jobs.size()), lane.stream.get());
  if (!placed.ok()) return placed.WithContext("slot " + std::to_string(s.index));
  RETURN_IF_ERROR(Check("hipEventRecord(sprite written)", s.index, hipEventRecord(sprite->written(), lane.stream.get())));
  return Check("hipEventRecord(tiles placed)", s.index, hipEventRecord(s.band_done[0].get(), lane.stream.get()));
}

// Encodes a group's renditions in waves of launches. Wave w carries, for every frame,
// band w - (waves - bands) of each rendition that has it: renditions end with the
// largest one's last band, so its first bands go out alone (the soonest first byte) and
// the small renditions share the last launch instead of adding launches of their own.
// A coding launch costs about 20 us of critical path however little it holds
// (docs/benchmarks-history.md), so launches, not work, set the ladder's pace.
Status GpuLauncher::Launch(const std::vector<GpuSlot*>& group) {
  GpuSlot& first = *group.front();
  const int frames = static_cast<int>(group.size());
  const int renditions = static_cast<int>(first.plans.size());
  EncodeLane& lane = streams_.lanes[first.lane];
  if (first.scaled_bytes > 0) RETURN_IF_ERROR(lane.ReserveScaled(first.scaled_bytes * frames, &counters_->device_bytes));
  for (GpuSlot* s : group) {
    RETURN_IF_ERROR(Check("hipStreamWaitEvent(encode, uploaded)", s->index,
                          hipStreamWaitEvent(lane.stream.get(), s->uploaded.get(), 0)));
    if (s->timing_run) (void)hipEventRecord(s->encode_start.get(), lane.stream.get());
    const FrameView& in = s->request.frame;
    const uint8_t* upload = s->source.get<uint8_t>();
    if (s->deinterlace_plan) {  // the deinterlace stage: the upload is the frame, then the ones before and after
      Status whole = Injected(options_, "launch deinterlace", s->index);
      if (whole.ok()) {
        auto planes = [&](int k) { return PackedSourcePlanes(upload + k * s->frame_bytes, in.format, in.width, in.height); };
        whole = EnqueueDeinterlace(*s->deinterlace_plan, planes(1), planes(0), planes(2), s->whole.get<uint8_t>(),
                                   lane.stream.get());
      }
      if (!whole.ok()) return whole.WithContext("slot " + std::to_string(s->index));
      upload = s->whole.get<uint8_t>();
    }
    if (s->orient_plan) {  // the orientation stage: the upload turned, before any rendition reads it
      Status turned = Injected(options_, "launch orient", s->index);
      if (turned.ok()) {
        turned = EnqueueOrient(*s->orient_plan, PackedSourcePlanes(upload, in.format, in.width, in.height),
                               s->turned.get<uint8_t>(), lane.stream.get());
      }
      if (!turned.ok()) return turned.WithContext("slot " + std::to_string(s->index));
    }
    if (!s->tile_plans.empty()) RETURN_IF_ERROR(PlaceTiles(*s, lane));
  }
  std::vector<int> flat_base(renditions);  // rendition r's band k is band_done[flat_base[r] + k]
  int waves = 0;
  for (int r = 0, flat = 0; r < renditions; ++r) {
    flat_base[r] = flat;
    flat += first.plans[r].num_bands;
    waves = std::max(waves, first.plans[r].num_bands);
  }
  // The frame rendition r of frame i is encoded from: the upload, or its scaled copy in
  // the lane's buffer (queued before the rendition's first wave; encode-stream work).
  std::vector<SourcePlanes> source(static_cast<size_t>(renditions) * frames);
  struct Pending {
    int rendition, frame, band;
  };
  for (int wave = 0; wave < waves; ++wave) {
    std::vector<Pending> pending;
    std::vector<ScaleJob> scales;  // the renditions that start in this wave, scaled in one go
    for (int r = 0; r < renditions; ++r) {
      const int band = wave - (waves - first.plans[r].num_bands);
      if (band < 0) continue;
      for (int i = 0; i < frames; ++i) {
        if (band == 0) source[r * frames + i] = SourceOf(*group[i], r, i, lane, &scales);
        pending.push_back({r, i, band});
      }
    }
    if (!scales.empty()) {
      Status scaled = Injected(options_, "launch scale", first.index);
      if (scaled.ok()) scaled = EnqueueScales(scales.data(), static_cast<int>(scales.size()), lane.stream.get());
      if (!scaled.ok()) return scaled.WithContext(SlotNames(group));
    }
    for (size_t next = 0; next < pending.size();) {
      BandLaunch launch{};
      BandScratchSizes need{};  // the launch's scratch so far
      std::vector<int> launch_plan(renditions, -1);
      const size_t begin = next;
      for (; next < pending.size(); ++next) {
        const Pending& item = pending[next];
        const int r = item.rendition;
        const EncodePlan& p = first.plans[r];
        if (launch.items == kMaxLaunchItems || (launch_plan[r] < 0 && launch.plans == kMaxLaunchPlans)) break;
        // Items join while the lane's scratch holds them all; a lone item grows it.
        const BandScratchSizes more = need + ScratchSizes(p, 1);
        if (launch.items > 0 && !lane.scratch.Holds(more)) break;
        need = more;
        if (launch_plan[r] < 0) {
          launch_plan[r] = launch.plans;
          launch.plan[launch.plans] = p;
          launch.tables[launch.plans++] = first.tables[r];
        }
        const GpuSlot& s = *group[item.frame];
        BandItem& b = launch.item[launch.items++];
        b.io.source = source[r * frames + item.frame];
        b.io.band_out = s.out.get<uint8_t>() + s.out_offset[r] + item.band * p.band_capacity;
        b.io.band_bytes = s.band_bytes.device_get<uint32_t>() + flat_base[r] + item.band;
        b.plan = launch_plan[r];
        b.band = item.band;
      }
      RETURN_IF_ERROR(lane.ReserveScratch(need, &counters_->device_bytes));
      Status launched = Injected(options_, "launch band stages", first.index);
      if (launched.ok()) launched = EnqueueBandStages(launch, lane.scratch.buffers(), lane.stream.get());
      if (!launched.ok()) return launched.WithContext(SlotNames(group));  // names built only on failure
      for (size_t k = begin; k < next; ++k) {
        GpuSlot& s = *group[pending[k].frame];
        const int flat = flat_base[pending[k].rendition] + pending[k].band;
        // The timing event first, so that band k's copy, which waits for band_done, never
        // appears to start before the band ended.
        if (s.timing_run) (void)hipEventRecord(s.band_end[flat].get(), lane.stream.get());
        RETURN_IF_ERROR(Check("hipEventRecord(band_done)", s.index,
                              hipEventRecord(s.band_done[flat].get(), lane.stream.get())));
      }
    }
  }
  return OkStatus();
}

}  // namespace conveyor

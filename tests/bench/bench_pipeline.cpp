// The pipeline benchmark. Each mode encodes the same frame sequence; the table reports
// frames/s, GPU engine busy time and overlap (from event timestamps), time-to-first-byte
// and whole-frame latency, and the ratio to the pinned H2D bound for this input.
#include "bench_pipeline.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

#include "frame_source.h"
#include "gpu_encoder.h"
#include "gpu_reference.h"
#include "stream_overlap.h"
#include "worker.h"

namespace conveyor::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(SteadyTime a, SteadyTime b) { return std::chrono::duration<double>(b - a).count(); }

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * (v.size() - 1) + 0.5));
  return v[i];
}

constexpr size_t kMaxTimedFrames = 20000;

// Resident set size of this process, from /proc/self/statm.
uint64_t RssBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &pages, &resident);
  std::fclose(f);
  return n == 2 ? static_cast<uint64_t>(resident) * 4096 : 0;
}

struct ModeResult {
  std::string mode;
  // RSS after the warm-up, half way through the timed frames (growth that stops early
  // is the allocator settling; growth in the second half would be a leak), and at the end.
  uint64_t rss_after_warmup = 0, rss_half = 0, rss_after = 0, pinned_bytes = 0, device_bytes = 0;
  double issue_busy = 0, delivery_busy = 0;  // share of wall time, GPU worker's host threads
  // Per frame, the delivery threads' time waiting for bands, for their copies, and
  // copying bytes into results (seconds).
  double band_wait = 0, copy_wait = 0, append = 0;
  uint64_t ring_fallbacks = 0;  // frames that found the readback ring full
  double frames_per_group = 0;               // GPU worker: mean frames a launch carried
  double jpeg_bytes = 0;                     // mean JPEG bytes a frame, all renditions
  double fps = 0, wall = 0;
  double busy[3] = {0, 0, 0};  // upload, encode, readback (GPU event time)
  double overlap = 0, gpu_span = 0;
  // Each frame's encode interval (first kernel to last band event), and the share of the
  // GPU span in which two or more frames were encoding at once (the encode streams).
  double encode_mean = 0, encode_concurrent = 0;
  double ttfb_p50 = 0, ttfb_p99 = 0, latency_p50 = 0, latency_p99 = 0;
  double light_ttfb_p99 = 0;  // stall scenario: the light frames only
  double light_handover_p99 = 0;  // and their time from submission to on_done
  size_t timed_frames = 0, timed_runs = 0;  // frames with GPU times, and their runs (stage timing)
  double offered_late_p50 = 0, offered_late_p99 = 0;  // paced: Submit() called after the arrival time
};

// Waits until `t`: sleeps to within kSpin of it, then spins. A plain sleep_until wakes
// 50-60 us late (the kernel's default timer slack), which in a paced run added that much
// to every frame's latency, counted from its arrival (61-62 us, in both modes alike,
// which shrinks their ratio).
void PaceUntil(SteadyTime t) {
  constexpr auto kSpin = std::chrono::microseconds(200);
  if (t - Clock::now() > kSpin) std::this_thread::sleep_until(t - kSpin);
  while (Clock::now() < t) {
  }
}

// Engine busy time, overlap and concurrent encoding of one run of timed frames, added to r.
void AddTimedRun(const std::vector<const FrameTimes*>& run, ModeResult* r) {
  std::vector<GpuInterval> engines[3];
  double lo = 1e30, hi = 0;
  for (const FrameTimes* t : run) {
    engines[0].push_back(t->upload);
    engines[1].push_back(t->encode);
    for (const auto& b : t->band_readback) engines[2].push_back(b);
    lo = std::min(lo, t->upload.start);
    for (const auto& b : t->band_readback) hi = std::max(hi, b.end);
  }
  if (hi <= lo) return;
  for (int e = 0; e < 3; ++e) r->busy[e] += UnionLength(engines[e]);
  r->overlap += OverlapLength(engines);
  r->gpu_span += hi - lo;
  std::vector<std::pair<double, int>> edges;
  for (const GpuInterval& e : engines[1]) {
    edges.push_back({e.start, +1});
    edges.push_back({e.end, -1});
  }
  std::sort(edges.begin(), edges.end());
  int encoding = 0;
  double last = 0;
  for (const auto& [t, d] : edges) {
    if (encoding >= 2) r->encode_concurrent += t - last;
    encoding += d;
    last = t;
  }
}

ModeResult Summarise(const std::string& mode, const std::vector<FrameTimes>& times,
                     const std::vector<bool>& heavy, SteadyTime start, SteadyTime end) {
  ModeResult r;
  r.mode = mode;
  r.wall = Seconds(start, end);
  r.fps = times.empty() ? 0 : times.size() / r.wall;
  std::vector<double> ttfb, latency, light_ttfb, light_handover;
  std::map<uint64_t, std::vector<const FrameTimes*>> runs;  // timed frames by their run
  for (size_t i = 0; i < times.size(); ++i) {
    const FrameTimes& t = times[i];
    ttfb.push_back(Seconds(t.submitted, t.first_byte));
    latency.push_back(Seconds(t.submitted, t.done));
    if (!heavy.empty() && !heavy[i]) {
      light_ttfb.push_back(ttfb.back());
      light_handover.push_back(Seconds(t.submitted, t.handed_over));
    }
    if (t.timing_run > 0) {
      runs[t.timing_run].push_back(&t);
      r.encode_mean += t.encode.seconds();
      ++r.timed_frames;
    }
  }
  r.ttfb_p50 = Percentile(ttfb, 0.5);
  r.ttfb_p99 = Percentile(ttfb, 0.99);
  r.latency_p50 = Percentile(latency, 0.5);
  r.latency_p99 = Percentile(latency, 0.99);
  r.light_ttfb_p99 = Percentile(light_ttfb, 0.99);
  r.light_handover_p99 = Percentile(light_handover, 0.99);
  // Runs are apart in time (sampled timing): each is measured over its own span, so the
  // untimed time between them does not read as idle.
  for (const auto& [run, frames] : runs) AddTimedRun(frames, &r);
  r.timed_runs = runs.size();
  if (r.timed_frames > 0) r.encode_mean /= r.timed_frames;
  if (r.gpu_span > 0) r.encode_concurrent /= r.gpu_span;
  return r;
}

// One row per timed frame: host times from the start of the timed run, GPU times on the
// worker's clock, in microseconds. Appends, so that every mode lands in one file.
void WriteTimesCsv(const std::string& path, const std::string& mode, const std::vector<FrameTimes>& times,
                   const std::vector<bool>& heavy, SteadyTime start) {
  if (path.empty()) return;
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return;
  if (std::ftell(f) == 0) {
    std::fprintf(f, "mode,frame,heavy,submitted,started,first_byte,done,upload_start,upload_end,encode_start,"
                    "encode_end,first_band_done,last_readback_end\n");
  }
  auto us = [&](SteadyTime t) { return 1e6 * Seconds(start, t); };
  for (size_t i = 0; i < times.size(); ++i) {
    const FrameTimes& t = times[i];
    const double first_band = t.band_done.empty() ? 0 : t.band_done.front();
    const double last_copy = t.band_readback.empty() ? 0 : t.band_readback.back().end;
    std::fprintf(f, "\"%s\",%zu,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", mode.c_str(), i,
                 heavy.empty() ? 0 : static_cast<int>(heavy[i]), us(t.submitted), us(t.started), us(t.first_byte),
                 us(t.done), 1e6 * t.upload.start, 1e6 * t.upload.end, 1e6 * t.encode.start, 1e6 * t.encode.end,
                 1e6 * first_band, 1e6 * last_copy);
  }
  std::fclose(f);
}

// The renditions of frame i: the ladder for ordinary frames, the source size otherwise.
std::vector<Rendition> RenditionsFor(const EncodeParams& params, const std::vector<std::pair<int, int>>& ladder,
                                     bool heavy) {
  if (ladder.empty() || heavy) return {Rendition{0, 0, params}};
  std::vector<Rendition> out;
  for (auto [w, h] : ladder) out.push_back(Rendition{w, h, params});
  return out;
}

StatusOr<ModeResult> RunWorkerMode(const std::string& mode, std::unique_ptr<Worker> worker,
                                   const std::vector<const OwnedFrame*>& seq,
                                   const std::vector<EncodeParams>& params, const std::vector<bool>& heavy,
                                   const std::vector<std::pair<int, int>>& ladder, Orientation orientation,
                                   bool registered, bool heavy_stream, double rate, const std::string& times_csv) {
  // Registered: the frames are page-locked where they are and uploaded from there, the
  // "pinned host frames" case. Otherwise the worker copies each into a pinned slot.
  std::vector<std::unique_ptr<HostMemoryRegistration>> registrations;
  if (registered) {
    std::vector<const OwnedFrame*> distinct(seq.begin(), seq.end());
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    for (const OwnedFrame* f : distinct) {
      ASSIGN_OR_RETURN(auto r, worker->RegisterHostMemory(const_cast<uint8_t*>(f->bytes.data()), f->bytes.size()));
      registrations.push_back(std::move(r));
    }
  }
  std::mutex mu;
  // Long runs (the RSS check) keep no per-frame times, so the benchmark's own
  // bookkeeping does not grow with the frame count.
  const bool keep_times = seq.size() <= kMaxTimedFrames;
  std::vector<FrameTimes> times(keep_times ? seq.size() : 0);
  Status failure;
  uint64_t jpeg_bytes = 0;
  // Warm-up, not timed: enough frames that every slot has been used once (a slot's
  // events are created on its first frame).
  for (size_t i = 0; i < std::min<size_t>(seq.size(), 64); ++i) {
    FrameRequest req;
    req.id = i;
    req.frame = seq[i]->view;
    req.renditions = RenditionsFor(params[i], ladder, heavy[i]);
    req.orientation = orientation;
    req.on_done = [](FrameResult&&) {};
    RETURN_IF_ERROR(worker->Submit(std::move(req)));
  }
  worker->Flush();
  const uint64_t rss_warm = RssBytes();
  const WorkerStats before = worker->Stats();
  const SteadyTime start = Clock::now();
  uint64_t rss_half = 0;
  // Paced (rate > 0): frame i arrives at start + i / rate, as a live source's would, and
  // its latencies count from then, so time spent blocked in Submit() (a full worker)
  // is not left out (coordinated omission).
  auto arrival = [&](size_t i) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(i / rate));
  };
  std::vector<double> offered_late;  // paced: how long after its arrival each frame was offered
  if (rate > 0) offered_late.reserve(seq.size());
  for (size_t i = 0; i < seq.size(); ++i) {
    if (i == seq.size() / 2) rss_half = RssBytes();
    if (rate > 0) {
      PaceUntil(arrival(i));
      offered_late.push_back(Seconds(arrival(i), Clock::now()));
    }
    FrameRequest req;
    req.id = i;
    req.frame = seq[i]->view;
    req.renditions = RenditionsFor(params[i], ladder, heavy[i]);
    req.orientation = orientation;
    req.stream = heavy_stream && heavy[i] ? 1 : 0;  // the heavy frames as another session's
    req.on_done = [&](FrameResult&& r) {
      std::lock_guard<std::mutex> lock(mu);
      if (!r.status.ok() && failure.ok()) failure = r.status;
      for (const auto& j : r.jpeg) jpeg_bytes += j.size();
      if (keep_times) times[r.id] = r.times;
      if (keep_times && rate > 0) times[r.id].submitted = arrival(r.id);
    };
    RETURN_IF_ERROR(worker->Submit(std::move(req)));
  }
  worker->Flush();
  const SteadyTime end = Clock::now();
  RETURN_IF_ERROR(failure);
  ModeResult r = Summarise(mode, times, heavy, start, end);
  r.offered_late_p50 = Percentile(offered_late, 0.5);
  r.offered_late_p99 = Percentile(offered_late, 0.99);
  WriteTimesCsv(times_csv, mode, times, heavy, start);
  r.fps = seq.size() / r.wall;
  r.rss_after_warmup = rss_warm;
  r.rss_half = rss_half;
  r.rss_after = RssBytes();
  r.jpeg_bytes = static_cast<double>(jpeg_bytes) / seq.size();
  const WorkerStats after = worker->Stats();
  r.pinned_bytes = after.pinned_bytes;
  r.device_bytes = after.device_bytes;
  r.issue_busy = (after.issue_busy_s - before.issue_busy_s) / r.wall;
  r.delivery_busy = (after.delivery_busy_s - before.delivery_busy_s) / r.wall;
  r.band_wait = (after.delivery_band_wait_s - before.delivery_band_wait_s) / seq.size();
  r.copy_wait = (after.delivery_copy_wait_s - before.delivery_copy_wait_s) / seq.size();
  r.append = (after.delivery_append_s - before.delivery_append_s) / seq.size();
  r.ring_fallbacks = after.readback_ring_fallbacks - before.readback_ring_fallbacks;
  const uint64_t groups = after.launch_groups - before.launch_groups;
  if (groups > 0) r.frames_per_group = double(after.launch_group_frames - before.launch_group_frames) / groups;
  return r;
}

Status Run(const PipelineBenchOptions& o) {
  SourceOptions so;
  so.input = o.input;
  if (std::sscanf(o.size.c_str(), "%dx%d", &so.width, &so.height) != 2) return InvalidArgument("--size must be WxH");
  ASSIGN_OR_RETURN(so.format, ParsePixelFormat(o.format));
  ASSIGN_OR_RETURN(std::vector<OwnedFrame> light, LoadFrames(so));
  std::vector<OwnedFrame> heavy_frames;
  EncodeParams base;
  base.quality = o.quality;
  base.restart_interval = o.restart;  // -1 is kRestartAuto
  ASSIGN_OR_RETURN(base.subsampling, ParseSubsampling(o.subsampling));
  EncodeParams heavy_params = base;
  heavy_params.quality = o.stall_quality;
  if (o.stall_every > 0) {
    SourceOptions hs = so;
    hs.input.clear();
    hs.max_frames = 2;
    if (std::sscanf(o.stall_size.c_str(), "%dx%d", &hs.width, &hs.height) != 2)
      return InvalidArgument("--stall-size must be WxH");
    ASSIGN_OR_RETURN(heavy_frames, LoadFrames(hs));
  }
  std::vector<const OwnedFrame*> seq;
  std::vector<EncodeParams> params;
  std::vector<bool> heavy;
  for (int i = 0; i < o.frames; ++i) {
    const bool h = o.stall_every > 0 && i % o.stall_every == o.stall_every - 1;
    seq.push_back(h ? &heavy_frames[i % heavy_frames.size()] : &light[i % light.size()]);
    params.push_back(h ? heavy_params : base);
    heavy.push_back(h);
  }
  std::vector<std::pair<int, int>> ladder;
  if (!o.renditions.empty()) {
    std::stringstream list(o.renditions);
    std::string item;
    while (std::getline(list, item, ',')) {
      int w = 0, h = 0;
      if (std::sscanf(item.c_str(), "%dx%d", &w, &h) != 2) return InvalidArgument("--renditions: bad size " + item);
      ladder.emplace_back(w, h);
    }
  }
  const FrameView& first = light[0].view;
  const size_t frame_bytes = light[0].bytes.size();

  const GpuProbe probe = ProbeGpus();
  std::string worker = o.worker == "auto" ? (probe.devices.empty() ? "cpu" : "gpu") : o.worker;
  WorkerOptions wo;
  wo.slots = o.slots;
  wo.band_rows = o.band_rows;
  wo.encode_streams = o.encode_streams;
  wo.delivery_threads_per_stream = o.delivery_threads;
  if (o.first_band_blocks >= 0) wo.first_band_blocks = o.first_band_blocks;
  if (o.balance_lanes != "on" && o.balance_lanes != "off") return InvalidArgument("--balance-lanes must be on or off");
  wo.balance_encode_streams = o.balance_lanes == "on";
  wo.readback_ring_bytes = static_cast<size_t>(o.readback_ring_mib) << 20;
  wo.max_launch_frames = o.launch_frames;
  if (o.stage_timing == "runs") {
    wo.stage_timing = StageTiming::Sampled();
    wo.stage_timing.every = std::chrono::milliseconds(o.timing_every_ms);
  } else if (o.stage_timing == "all") {
    wo.stage_timing = StageTiming::EveryFrame();
  } else if (o.stage_timing != "off") {
    return InvalidArgument("--stage-timing must be runs, all or off");
  }
  for (const auto* f : seq) {
    wo.max_width = std::max(wo.max_width, f->view.width);
    wo.max_height = std::max(wo.max_height, f->view.height);
  }

  std::vector<ModeResult> results;
  double bound_fps = 0, registered_fps = 0;
  CopyBandwidth bw;
  std::string device = "cpu";
  if (worker == "gpu") {
    if (probe.devices.empty()) return Unavailable("--worker gpu: " + probe.unavailable_reason);
    device = probe.devices[0].name;
    ASSIGN_OR_RETURN(bound_fps, MeasureH2dBoundFps(0, frame_bytes, 2000));
    if (o.input_memory == "registered") {
      std::vector<uint8_t*> frames;
      for (OwnedFrame& f : light) frames.push_back(f.bytes.data());
      ASSIGN_OR_RETURN(registered_fps, MeasureRegisteredH2dFps(0, frames, frame_bytes, 2000));
    }
    ASSIGN_OR_RETURN(bw, MeasureCopyBandwidth(0, 256 << 20, 20));
    std::stringstream modes(o.modes);
    std::string mode;
    while (std::getline(modes, mode, ',')) {
      if (mode == "serial" && !ladder.empty()) {
        std::printf("serial mode skipped: it encodes one rendition per frame\n");
      } else if (mode == "serial") {
        const SteadyTime start = Clock::now();
        ASSIGN_OR_RETURN(auto times, RunSerial(0, seq, params));
        results.push_back(Summarise("serial", times, heavy, start, Clock::now()));
      } else if (mode == "off" || mode == "on") {
        WorkerOptions m = wo;
        m.progress_events = mode == "on";
        ASSIGN_OR_RETURN(auto w, MakeGpuWorker(0, m));
        ASSIGN_OR_RETURN(ModeResult r, RunWorkerMode("pipelined, progress events " + mode, std::move(w), seq, params,
                                                     heavy, ladder, OrientationFromExif(o.orientation),
                                                     o.input_memory == "registered", o.stall_streams,
                                                     o.rate, o.times_csv));
        results.push_back(r);
      } else {
        return InvalidArgument("--modes: unknown mode " + mode);
      }
    }
  } else {
    wo.stage_timing = StageTiming::Off();
    ASSIGN_OR_RETURN(ModeResult r,
                     RunWorkerMode("cpu worker", MakeCpuWorker(wo), seq, params, heavy, ladder,
                                   OrientationFromExif(o.orientation), false, o.stall_streams,
                                   o.rate, o.times_csv));
    results.push_back(r);
  }

  // The duplex bound needs the output size, known once a pipelined mode has run.
  double duplex_fps = 0, duplex_output = 0;
  for (const auto& r : results) {
    if (r.jpeg_bytes > 0) duplex_output = r.jpeg_bytes;
  }
  if (worker == "gpu" && duplex_output > 0) {
    ASSIGN_OR_RETURN(duplex_fps, MeasureDuplexBoundFps(0, frame_bytes, static_cast<size_t>(duplex_output), 2000));
  }

  std::printf("\nconveyor-bench pipeline  %dx%d %s q%d %s, %d frames, %d slots, %d encode streams (%s), "
              "%d delivery threads each, %d frames a launch at most, band rows %s, first band %d blocks, "
              "worker %s (%s)\n",
              first.width, first.height, PixelFormatName(first.format), o.quality, o.subsampling.c_str(), o.frames,
              o.slots, o.encode_streams, wo.balance_encode_streams ? "balanced" : "in turn", o.delivery_threads,
              o.launch_frames, o.band_rows > 0 ? std::to_string(o.band_rows).c_str() : "auto", wo.first_band_blocks,
              worker.c_str(), device.c_str());
  if (!ladder.empty()) std::printf("renditions per frame: %s\n", o.renditions.c_str());
  if (o.orientation != 1) {
    std::printf("orientation: %s (EXIF %d), turned on the worker before the renditions\n",
                OrientationName(OrientationFromExif(o.orientation)), o.orientation);
  }
  if (worker == "gpu") std::printf("input frames: %s\n", o.input_memory == "registered"
                                                          ? "registered caller memory, uploaded in place"
                                                          : "copied into the worker's pinned slots");
  if (o.stall_every > 0)
    std::printf("stall scenario: every %dth frame is %s q%d\n", o.stall_every, o.stall_size.c_str(), o.stall_quality);
  if (o.rate > 0)
    std::printf("paced: frames arrive at %.0f/s and latencies count from arrival (the serial mode is not paced)\n",
                o.rate);
  if (bound_fps > 0) {
    std::printf("pinned H2D bound for this input: %.0f frames/s (%.1f GB/s)\n", bound_fps, bound_fps * frame_bytes / 1e9);
    std::printf("copy bandwidth GB/s: H2D pinned %.1f, pageable %.1f; D2H pinned %.1f, pageable %.1f\n",
                bw.h2d_pinned_gbs, bw.h2d_pageable_gbs, bw.d2h_pinned_gbs, bw.d2h_pageable_gbs);
    if (registered_fps > 0) {
      std::printf("H2D from the %zu input frames, registered where they are: %.0f frames/s (%.1f GB/s)\n",
                  light.size(), registered_fps, registered_fps * frame_bytes / 1e9);
    }
    if (duplex_fps > 0) {
      std::printf("pinned H2D + D2H bound (the frame up, %.0f output bytes down, at once): %.0f frames/s\n",
                  duplex_output, duplex_fps);
    }
  }
  std::printf("%-30s %9s %7s %9s %9s %9s %8s %10s %10s %10s %10s\n", "mode", "frames/s", "xbound", "upload%",
              "encode%", "readbk%", "overlap%", "ttfb p50", "ttfb p99", "lat p50", "lat p99");
  for (const auto& r : results) {
    const double span = r.gpu_span > 0 ? r.gpu_span : 1;
    std::printf("%-30s %9.1f %7.3f %9.1f %9.1f %9.1f %8.1f %9.2fms %9.2fms %9.2fms %9.2fms\n", r.mode.c_str(), r.fps,
                bound_fps > 0 ? r.fps / bound_fps : 0, 100 * r.busy[0] / span, 100 * r.busy[1] / span,
                100 * r.busy[2] / span, 100 * r.overlap / span, 1e3 * r.ttfb_p50, 1e3 * r.ttfb_p99,
                1e3 * r.latency_p50, 1e3 * r.latency_p99);
  }
  for (const auto& r : results) {
    if (r.rss_after == 0) continue;
    std::printf("%-30s pinned %.1f MiB, device %.1f MiB (fixed at start); RSS %.1f -> %.1f MiB over %d frames\n",
                r.mode.c_str(), r.pinned_bytes / 1048576.0, r.device_bytes / 1048576.0,
                r.rss_after_warmup / 1048576.0, r.rss_after / 1048576.0, o.frames);
    std::printf("%-30s RSS half way %.1f MiB: second half %+.1f MiB\n", r.mode.c_str(), r.rss_half / 1048576.0,
                (static_cast<double>(r.rss_after) - static_cast<double>(r.rss_half)) / 1048576.0);
    if (o.rate > 0)
      std::printf("%-30s paced: each frame offered (Submit called) p50 %.1f us, p99 %.1f us after its arrival\n",
                  r.mode.c_str(), 1e6 * r.offered_late_p50, 1e6 * r.offered_late_p99);
    if (r.timed_frames > 0)
      std::printf("%-30s engine columns from %zu timed frames in %zu runs\n", r.mode.c_str(), r.timed_frames,
                  r.timed_runs);
    if (r.timed_frames > 0)
      std::printf("%-30s encode per frame %.1f us; two or more frames encoding %.0f%% of the time\n", r.mode.c_str(),
                  1e6 * r.encode_mean, 100 * r.encode_concurrent);
    if (duplex_fps > 0 && r.jpeg_bytes > 0)
      std::printf("%-30s %.3fx of the H2D + D2H bound\n", r.mode.c_str(), r.fps / duplex_fps);
    if (r.issue_busy > 0)
      std::printf("%-30s host threads busy: issue %.0f%%, delivery %.0f%% of wall time; %.2f frames a launch; "
                  "%.0f JPEG bytes a frame\n",
                  r.mode.c_str(), 100 * r.issue_busy, 100 * r.delivery_busy, r.frames_per_group, r.jpeg_bytes);
    if (r.issue_busy > 0)
      std::printf("%-30s delivery per frame: %.1f us waiting for bands, %.1f us for their copies, %.1f us "
                  "copying bytes into the result; %llu frames found the readback ring full\n",
                  r.mode.c_str(), 1e6 * r.band_wait, 1e6 * r.copy_wait, 1e6 * r.append,
                  static_cast<unsigned long long>(r.ring_fallbacks));
  }
  const ModeResult* serial = nullptr;
  const ModeResult* off = nullptr;
  const ModeResult* on = nullptr;
  for (const auto& r : results) {
    if (r.mode == "serial") serial = &r;
    if (r.mode == "pipelined, progress events off") off = &r;
    if (r.mode == "pipelined, progress events on") on = &r;
  }
  if (serial && on) std::printf("pipelined (events on) / serial: %.2fx frames/s\n", on->fps / serial->fps);
  if (off && on) {
    std::printf("progress events on vs off: p99 ttfb %.1f%% lower, frames/s %+.1f%%\n",
                100 * (1 - on->ttfb_p99 / off->ttfb_p99), 100 * (on->fps / off->fps - 1));
    if (o.stall_every > 0)
      std::printf("stall scenario, light frames: p99 ttfb %.2fms (off) -> %.2fms (on); p99 to hand-over %.2fms "
                  "(off) -> %.2fms (on)\n",
                  1e3 * off->light_ttfb_p99, 1e3 * on->light_ttfb_p99, 1e3 * off->light_handover_p99,
                  1e3 * on->light_handover_p99);
  }
  std::printf("{\"bench\":\"pipeline\",\"worker\":\"%s\",\"device\":\"%s\",\"width\":%d,\"height\":%d,\"format\":\"%s\","
              "\"quality\":%d,\"frames\":%d,\"slots\":%d,\"stall_every\":%d,\"h2d_bound_fps\":%.1f,"
              "\"duplex_bound_fps\":%.1f,\"modes\":[",
              worker.c_str(), device.c_str(), first.width, first.height, PixelFormatName(first.format), o.quality,
              o.frames, o.slots, o.stall_every, bound_fps, duplex_fps);
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    std::printf("%s{\"mode\":\"%s\",\"fps\":%.2f,\"overlap_s\":%.4f,\"gpu_span_s\":%.4f,\"ttfb_p50_ms\":%.3f,"
                "\"ttfb_p99_ms\":%.3f,\"latency_p50_ms\":%.3f,\"latency_p99_ms\":%.3f,\"light_ttfb_p99_ms\":%.3f}",
                i ? "," : "", r.mode.c_str(), r.fps, r.overlap, r.gpu_span, 1e3 * r.ttfb_p50, 1e3 * r.ttfb_p99,
                1e3 * r.latency_p50, 1e3 * r.latency_p99, 1e3 * r.light_ttfb_p99);
  }
  std::printf("]}\n");
  return OkStatus();
}

}  // namespace

void AddPipelineCommand(CLI::App& app, PipelineBenchOptions* o, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("pipeline", "The worker pipeline: serial vs pipelined, progress events off vs on");
  cmd->add_option("--input", o->input, "Input .ppm, .y4m or raw frames; synthetic frames when omitted");
  cmd->add_option("--size", o->size, "WxH of raw input or synthetic frames")->capture_default_str();
  cmd->add_option("--format", o->format, "Pixel format of raw input or synthetic frames")->capture_default_str();
  cmd->add_option("--quality", o->quality, "JPEG quality")->capture_default_str();
  cmd->add_option("--subsampling", o->subsampling, "420, 422 or 444")->capture_default_str();
  cmd->add_option("--restart", o->restart, "Restart interval in MCUs; -1 auto, 0 none")->capture_default_str();
  cmd->add_option("--frames", o->frames, "Frames per mode")->capture_default_str();
  cmd->add_option("--worker", o->worker, "cpu, gpu or auto")->capture_default_str();
  cmd->add_option("--modes", o->modes, "Comma-separated: serial, off, on")->capture_default_str();
  cmd->add_option("--renditions", o->renditions, "Comma-separated WxH ladder encoded from each upload");
  cmd->add_option("--orientation", o->orientation,
                  "EXIF orientation 1..8 each frame is turned by before its renditions (6: rotate 90)")
      ->check(CLI::Range(1, 8))
      ->capture_default_str();
  cmd->add_option("--input-memory", o->input_memory, "registered (uploaded in place) or copied")
      ->capture_default_str();
  cmd->add_option("--slots", o->slots, "Slots in the worker's ring")->capture_default_str();
  cmd->add_option("--encode-streams", o->encode_streams, "GPU encode streams frames take turns on")
      ->capture_default_str();
  cmd->add_option("--delivery-threads", o->delivery_threads, "GPU readback threads per encode stream")
      ->capture_default_str();
  cmd->add_option("--first-band-blocks", o->first_band_blocks,
                  "GPU: blocks in band 0 of frames of three or more bands (0: as in the others; -1: the worker's "
                  "default)")
      ->capture_default_str();
  cmd->add_option("--balance-lanes", o->balance_lanes,
                  "GPU: on: a frame skips an encode stream loaded with more than another's plus it; off: plain turns")
      ->capture_default_str();
  cmd->add_option("--readback-ring-mib", o->readback_ring_mib,
                  "GPU pinned readback ring results lend from (0: copy every band into the result)")
      ->capture_default_str();
  cmd->add_option("--launch-frames", o->launch_frames, "Most frames of one shape a GPU launch carries")
      ->capture_default_str();
  cmd->add_option("--band-rows", o->band_rows, "Pixel rows per band; 0: the worker's default")->capture_default_str();
  cmd->add_option("--stall-every", o->stall_every, "Every Nth frame is heavy (0: off)")->capture_default_str();
  cmd->add_flag("--stall-streams", o->stall_streams,
                "Submit the heavy frames as another stream (session) than the light ones");
  cmd->add_option("--stall-size", o->stall_size, "Size of the heavy frames")->capture_default_str();
  cmd->add_option("--stall-quality", o->stall_quality, "Quality of the heavy frames")->capture_default_str();
  cmd->add_option("--stage-timing", o->stage_timing,
                  "GPU timing events, which the engine columns read: runs (as the daemon: 64 frames at a "
                  "time, at most every --timing-every-ms), all (every frame; costs frames/s) or off")
      ->capture_default_str();
  cmd->add_option("--timing-every-ms", o->timing_every_ms, "With --stage-timing runs: a run starts at most this often")
      ->capture_default_str();
  cmd->add_option("--rate", o->rate,
                  "Frames/s at which frames arrive, paced like a live source; latencies count from each "
                  "frame's arrival (0: as fast as the worker takes them)")
      ->capture_default_str();
  cmd->add_option("--times-csv", o->times_csv, "Append each timed frame's host and GPU times (us) to this CSV");
  cmd->callback([o, exit_code] {
    const Status s = Run(*o);
    if (!s.ok()) {
      std::fprintf(stderr, "conveyor-bench pipeline: %s\n", s.ToString().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace conveyor::bench

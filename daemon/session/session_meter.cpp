// Session-side metric counting; see session_meter.h.
#include "session_meter.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

namespace conveyor {

SessionMeter::SessionMeter(const SessionMetricsContext* context, int worker_index, bool gpu_worker)
    : gpu_worker_(gpu_worker) {
  if (context == nullptr || context->daemon == nullptr || worker_index < 0 ||
      worker_index >= static_cast<int>(context->devices.size())) {
    return;
  }
  context_ = context;
  worker_index_ = worker_index;
  daemon_ = context->daemon;
  device_ = &context->devices[worker_index];
}

void SessionMeter::SetRenditions(const std::vector<std::string>& renditions) {
  frames_out_.clear();
  if (daemon_ == nullptr) return;
  for (const std::string& r : renditions) {
    StatusOr<metrics::Counter*> c = daemon_->FramesOut(context_->device_labels[worker_index_], r);
    if (!c.ok()) spdlog::warn("metrics: frames out of rendition {}: {}", r, c.status().ToString());
    frames_out_.push_back(c.ok() ? *c : nullptr);
  }
}

void SessionMeter::SetCodec(const std::string& codec) {
  if (daemon_ == nullptr) return;
  const auto take = [&](StatusOr<metrics::Counter*> c, const char* what) -> metrics::Counter* {
    if (!c.ok()) spdlog::warn("metrics: {} of codec {}: {}", what, codec, c.status().ToString());
    return c.ok() ? *c : nullptr;
  };
  decode_errors_ = take(daemon_->DecodeErrors(codec), "decode errors");
  frames_dropped_ = take(daemon_->FramesDropped(codec), "frames dropped");
  inputs_truncated_ = take(daemon_->InputsTruncated(codec), "truncated inputs");
}

void SessionMeter::DecodeErrors(uint64_t n) const {
  if (decode_errors_ != nullptr && n > 0) decode_errors_->Inc(n);
}

void SessionMeter::FrameDropped() const {
  if (frames_dropped_ != nullptr) frames_dropped_->Inc();
}

void SessionMeter::InputTruncated() const {
  if (inputs_truncated_ != nullptr) inputs_truncated_->Inc();
}

void SessionMeter::BytesIn(size_t n) const {
  if (device_ != nullptr) device_->bytes_in->Inc(n);
}

void SessionMeter::FrameIn() const {
  if (device_ != nullptr) device_->frames_in->Inc();
}

void SessionMeter::BytesOut(size_t n) const {
  if (device_ != nullptr) device_->bytes_out->Inc(n);
}

void SessionMeter::SetDecoder(bool gpu) {
  if (daemon_ == nullptr) return;
  decoder_ = gpu ? metrics::DaemonMetrics::DecoderKind::kGpu : metrics::DaemonMetrics::DecoderKind::kCpu;
  daemon_->DecodeSessions(*decoder_).Inc();
}

void SessionMeter::FailedOver(metrics::DaemonMetrics::FailoverReason reason) {
  if (daemon_ == nullptr) return;
  decoder_ = metrics::DaemonMetrics::DecoderKind::kCpu;
  daemon_->DecodeFailovers(reason).Inc();
}

void SessionMeter::Decoded(double seconds) const {
  if (device_ != nullptr) device_->stage(metrics::Stage::kDecode).Observe(seconds);
  if (daemon_ != nullptr && decoder_) daemon_->DecodeDuration(*decoder_).Observe(seconds);
}

void SessionMeter::Muxed(double seconds) const {
  if (device_ != nullptr) device_->stage(metrics::Stage::kMux).Observe(seconds);
}

void SessionMeter::FrameDone(const FrameResult& r) const {
  if (device_ == nullptr) return;
  for (size_t i = 0; i < r.jpeg.size() && i < frames_out_.size(); ++i) {
    if (frames_out_[i] != nullptr) frames_out_[i]->Inc();
  }
  const FrameTimes& t = r.times;
  device_->frame_latency_seconds->Observe(std::chrono::duration<double>(t.done - t.submitted).count());
  if (t.timing_run > 0) {  // GPU event times: a timed frame (StageTiming)
    device_->stage(metrics::Stage::kUpload).Observe(t.upload.seconds());
    device_->stage(metrics::Stage::kEncode).Observe(t.encode.seconds());
    if (!t.band_readback.empty()) {
      double first = t.band_readback.front().start, last = t.band_readback.front().end;
      for (const GpuInterval& b : t.band_readback) {
        first = std::min(first, b.start);
        last = std::max(last, b.end);
      }
      device_->stage(metrics::Stage::kReadback).Observe(last - first);
    }
  } else if (!gpu_worker_) {  // the CPU worker: its encode, on the host clock
    device_->stage(metrics::Stage::kEncode).Observe(std::chrono::duration<double>(t.done - t.started).count());
  }  // an untimed GPU frame: its host times would mix queueing into the stage histograms
}

void SessionMeter::FrameFailed(const Status& status) const {
  if (daemon_ == nullptr) return;
  metrics::FrameFailure reason = metrics::FrameFailure::kInternal;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      reason = metrics::FrameFailure::kInvalidArgument;
      break;
    case StatusCode::kCancelled:
      reason = metrics::FrameFailure::kCancelled;
      break;
    default:
      reason = gpu_worker_ ? metrics::FrameFailure::kGpuError : metrics::FrameFailure::kInternal;
  }
  daemon_->FramesFailed(reason).Inc();
}

}  // namespace conveyor

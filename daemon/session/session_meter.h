// What one session counts into the daemon's Prometheus metrics: frames and bytes in and
// out, failures by reason, and the per-stage and end-to-end latency histograms. The
// handles are looked up once when the session's output begins; counting is atomic adds.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "daemon_metrics.h"
#include "status.h"
#include "worker.h"

namespace conveyor {

// The daemon-wide handles sessions count into, owned by conveyord.
struct SessionMetricsContext {
  metrics::DaemonMetrics* daemon = nullptr;
  std::vector<metrics::DeviceMetrics> devices;  // by the scheduler's worker index
  std::vector<std::string> device_labels;       // the `device` label of each: "cpu", "gpu0"
};

class SessionMeter {
 public:
  SessionMeter() = default;  // counts nothing (no metrics configured)
  SessionMeter(const SessionMetricsContext* context, int worker_index, bool gpu_worker);
  // Each output's label ("1280x720"), once the source size is known; before any frame
  // is submitted.
  void SetRenditions(const std::vector<std::string>& renditions);

  void BytesIn(size_t n) const;
  void FrameIn() const;
  void BytesOut(size_t n) const;
  // Container input: where the video decodes (the video engines or the CPU), once the
  // decoder is open; each frame's decode time then counts under that decoder too.
  void SetDecoder(bool gpu);
  // The engines gave the stream up mid-stream: counted once, and the frames after it
  // count under the CPU decoder.
  void FailedOver(metrics::DaemonMetrics::FailoverReason reason);
  void Decoded(double seconds) const;
  void Muxed(double seconds) const;
  // A frame the worker finished: frames out per rendition, the latency and the worker's
  // own stages (upload, encode and readback from the GPU events; encode on the CPU).
  void FrameDone(const FrameResult& result) const;
  void FrameFailed(const Status& status) const;
  // Container input: the video codec, once the decoder is open; then the damage counts.
  void SetCodec(const std::string& codec);
  void DecodeErrors(uint64_t n) const;
  void FrameDropped() const;
  void InputTruncated() const;

 private:
  const SessionMetricsContext* context_ = nullptr;
  int worker_index_ = 0;
  metrics::DaemonMetrics* daemon_ = nullptr;
  const metrics::DeviceMetrics* device_ = nullptr;
  std::vector<metrics::Counter*> frames_out_;
  metrics::Counter* decode_errors_ = nullptr;
  metrics::Counter* frames_dropped_ = nullptr;
  metrics::Counter* inputs_truncated_ = nullptr;
  bool gpu_worker_ = false;
  std::optional<metrics::DaemonMetrics::DecoderKind> decoder_;
};

}  // namespace conveyor

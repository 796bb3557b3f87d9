// DaemonConfig → SessionOptions and SessionLimits (see session_settings.h).
#include "session_settings.h"

#include <spdlog/spdlog.h>

#include "host_memory.h"

namespace conveyor {

SessionOptions SessionOptionsFromConfig(const config::DaemonConfig& c) {
  SessionOptions so;
  so.limits.max_width = c.max_width;
  so.limits.max_height = c.max_height;
  so.limits.max_frame_rate = c.max_frame_rate;
  so.queue_frames = c.session_queue_frames;
  so.output_bytes = c.session_output_bytes;
  so.input_bytes = static_cast<size_t>(c.input_queue_bytes);
  so.max_input_bytes = c.max_session_bytes;
  so.decode_threads = c.decode_threads;
  so.spool_directory = c.spool_directory;
  so.spool_bytes = c.input_spool_bytes;
  // Validate() accepts only the names ParseUntaggedMatrix knows.
  so.untagged_matrix = media::ParseUntaggedMatrix(c.untagged_matrix).value_or(media::UntaggedMatrix::kBt601);
  so.pinned_input_bytes = c.pinned_input_bytes;
  // Validate() accepts only the names these parse.
  StatusOr<media::DecodeMode> mode = media::ParseDecodeMode(c.decode_mode);
  so.decode = mode.ok() ? *mode : media::DecodeMode::kAuto;
  so.vaapi_device = c.vaapi_device;
  StatusOr<media::DecodedFrames> frames = media::ParseDecodedFrames(c.decode_frames);
  so.decoded_frames = frames.ok() ? *frames : media::DecodedFrames::kDevice;
  so.decode_fault_at_packet = c.decode_fault_at_packet;
  so.held_device_frames = c.decode_held_frames;
  so.engines_full_percent = c.decode_engines_full_percent;
  return so;
}

SessionLimits SessionLimitsFromConfig(const config::DaemonConfig& c) {
  SessionLimits limits{c.max_sessions, c.idle_timeout_s};
  if (c.memory_budget_bytes > 0) {
    limits.memory_budget_bytes = c.memory_budget_bytes;
    return limits;
  }
  // auto: read again at every load, so a reload follows a MemoryMax= changed meanwhile.
  StatusOr<config::HostMemory> host = config::ReadHostMemory();
  if (!host.ok()) {
    spdlog::warn("limits.memory_budget_bytes auto: {}; sessions are admitted by count only", host.status().ToString());
    return limits;
  }
  limits.memory_budget_bytes = config::EffectiveMemoryBudget(0, *host);
  spdlog::info("limits.memory_budget_bytes auto: {} MiB, {:.0f} % of {} ({} MiB)", limits.memory_budget_bytes >> 20,
               config::kAutoBudgetShare * 100, host->source, host->bytes >> 20);
  return limits;
}

}  // namespace conveyor

// A session's memory estimate from its job and the daemon's bounds (see session_memory.h).
#include "session_memory.h"

#include <algorithm>
#include <thread>
#include <utility>
#include <vector>

#include "session.h"
#include "shared_jpegs.h"

namespace conveyor {
namespace {

// The renditions' output sizes for this source (a storyboard's: its sprite's); a
// rendition the limits refuse (the session fails on it later) counts at the source size.
std::vector<std::pair<int, int>> RenditionSizes(const Job& job, const JobLimits& limits, int width, int height) {
  std::vector<std::pair<int, int>> sizes;
  StatusOr<std::vector<Rendition>> resolved = ResolveRenditions(job, width, height, limits);
  for (size_t i = 0; i < job.renditions.size(); ++i) {
    const bool known = resolved.ok() && (*resolved)[i].width > 0;
    const int grid_w = std::max(1, job.renditions[i].tile_columns), grid_h = std::max(1, job.renditions[i].tile_rows);
    sizes.emplace_back(known ? (*resolved)[i].width * grid_w : width, known ? (*resolved)[i].height * grid_h : height);
  }
  return sizes;
}

}  // namespace

std::string SessionMemoryEstimate::Describe() const {
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  return provisional ? "container input (" + size + " until probed)" : size;
}

int DecoderThreads(int decode_threads) {
  if (decode_threads > 0) return decode_threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::min(cores + 1, 16);
}

uint64_t JpegBytesBound(int width, int height) {
  const uint64_t padded_w = (static_cast<uint64_t>(width) + 15) / 16 * 16;
  const uint64_t padded_h = (static_cast<uint64_t>(height) + 15) / 16 * 16;
  return padded_w * padded_h * 3 / 2 + 4096;
}

SessionMemoryEstimate EstimateSessionMemory(const Job& job, const SessionOptions& options, int source_width,
                                            int source_height) {
  SessionMemoryEstimate e;
  e.width = source_width;
  e.height = source_height;
  const uint64_t queue = static_cast<uint64_t>(std::max(1, options.queue_frames));
  e.overhead_bytes = kSessionOverheadBytes;
  if (job.container_input) {
    const int threads = DecoderThreads(options.decode_threads);
    const uint64_t frame = PackedFrameSize(PixelFormat::kYuv420p, source_width, source_height);
    // The decoder's references and a frame a thread, those decoded ahead, the lane's,
    // the one with the worker, and the two a deinterlaced frame waits with (its previous
    // and its next).
    const uint64_t window = job.deinterlace == Job::Deinterlace::kOff ? 0 : 2;
    e.input_bytes = static_cast<uint64_t>(options.input_bytes) + kProbeBytes;
    e.frame_bytes =
        (kDecoderReferenceFrames + static_cast<uint64_t>(threads) + kDecodeAheadFrames + queue + 1 + window) * frame;
    e.overhead_bytes += static_cast<uint64_t>(threads) * kDecoderThreadBytes;
  } else if (job.shared_memory_slots == 0) {
    // Frames from messages: queued here, in the lane, with the worker and being assembled
    // (the frame-assembly ring's count). Shared-memory frames are the client's memfd.
    e.input_bytes = (2 * queue + 2) * PackedFrameSize(job.raw_format, source_width, source_height);
  }
  const std::vector<std::pair<int, int>> sizes = RenditionSizes(job, options.limits, source_width, source_height);
  uint64_t jpegs = 0;
  for (const auto& [w, h] : sizes) jpegs += JpegBytesBound(w, h);
  // Past the output bound the session submits no more frames, but those in the lane and
  // the one with the worker still finish.
  e.output_bytes = static_cast<uint64_t>(options.output_bytes) + (queue + 1) * jpegs;
  if (job.storyboard()) {
    // The sprite being filled and the one being encoded (4:2:0; the worker's memory).
    e.frame_bytes += 2 * PackedFrameSize(PixelFormat::kYuv420p, sizes[0].first, sizes[0].second);
  }
  if (job.output_shared_slots > 0) {
    e.output_bytes += static_cast<uint64_t>(job.output_shared_slots) * SharedJpegSlotBytes(sizes);
  }
  return e;
}

SessionMemoryEstimate EstimateAtAdmission(const Job& job, const SessionOptions& options) {
  if (!job.container_input) return EstimateSessionMemory(job, options, job.raw_width, job.raw_height);
  const int w = std::min(kProvisionalWidth, options.limits.max_width);
  const int h = std::min(kProvisionalHeight, options.limits.max_height);
  SessionMemoryEstimate e = EstimateSessionMemory(job, options, w, h);
  e.provisional = true;
  return e;
}

}  // namespace conveyor

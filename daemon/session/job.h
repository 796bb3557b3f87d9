// A validated Transcode job: what the first request of a stream asked for, in the
// engine's and the media layer's terms. Built from the proto by ParseJobSpec, which names
// the offending field in every INVALID_ARGUMENT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "conveyor/v1/transcoder.pb.h"
#include "frame.h"
#include "frame_selection.h"
#include "hw_decode.h"
#include "muxer.h"
#include "status.h"
#include "worker.h"

namespace conveyor {

struct JobLimits {
  int max_width = 3840;
  int max_height = 2160;
  double max_frame_rate = 240;
};

inline constexpr int kMaxSharedMemorySlots = 16;

struct RequestedRendition {
  std::string name;
  int width = 0, height = 0;  // as asked; 0 means "from the source" (see the proto)
  EncodeParams params;
  // A storyboard (RenditionSpec.tile): width x height is a cell's size, in a grid of
  // tile_columns x tile_rows cells a sprite. 0: an ordinary rendition.
  int tile_columns = 0, tile_rows = 0;
};

inline constexpr int kMaxTileGrid = 100;  // columns and rows each

struct Job {
  bool container_input = true;
  std::string format_hint;
  bool strict = false;  // ContainerInput.strict: damaged input fails instead of being concealed
  bool seekable = false;     // ContainerInput.seekable: ContainerRange input, ReadRequests
  uint64_t input_size = 0;   // ContainerInput.size
  // Raw input only.
  PixelFormat raw_format = PixelFormat::kYuv420p;
  int raw_width = 0, raw_height = 0;
  int frame_rate_num = 0, frame_rate_den = 1;
  ColorMatrix raw_matrix = ColorMatrix::kBt601;
  ColorRange raw_range = ColorRange::kLimited;
  int shared_memory_slots = 0;  // > 0: frames come through shared memory (shared_frames.h)

  std::vector<RequestedRendition> renditions;
  bool container_output = false;
  int output_shared_slots = 0;  // > 0: JPEGs go into shared-memory slots (shared_jpegs.h)
  media::ContainerFormat container = media::ContainerFormat::kMatroska;
  // The client writes each chunk at its offset (ContainerOutput.seekable): the muxer goes
  // back to finish the container (ContainerMuxer::OpenAt).
  bool container_seekable = false;
  bool container_faststart = false;  // ContainerOutput.faststart: MOV's moov before mdat
  bool audio = false;
  bool autorotate = true;  // JobSpec.autorotate (absent: true)
  enum class Deinterlace { kAuto, kOn, kOff } deinterlace = Deinterlace::kAuto;  // JobSpec.deinterlace
  std::optional<media::DecodeMode> decode;  // JobSpec.decode; none: the daemon's decode.mode
  SelectionSpec selection;  // JobSpec's start/end/duration_seconds, max_frames, keyframes_only
  std::string label;

  size_t RawFrameBytes() const { return PackedFrameSize(raw_format, raw_width, raw_height); }
  // Sprites of tiles instead of frames (its only rendition has a tile grid).
  bool storyboard() const { return renditions.size() == 1 && renditions[0].tile_columns > 0; }
};

StatusOr<Job> ParseJobSpec(const v1::JobSpec& spec, const JobLimits& limits);

// The renditions' output sizes for a source of this size: 0x0 is the source, one side 0
// keeps the aspect ratio (rounded to even). INVALID_ARGUMENT past the limits, and for a
// storyboard whose sprite would be. A storyboard's rendition is its cell size, always
// set (the tiling stage scales every frame, even to its own size).
StatusOr<std::vector<Rendition>> ResolveRenditions(const Job& job, int source_width, int source_height,
                                                   const JobLimits& limits);

}  // namespace conveyor

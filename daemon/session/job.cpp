// JobSpec validation (see job.h).
#include "job.h"

#include <cmath>
#include <sstream>
#include <string>

namespace conveyor {
namespace {

StatusOr<PixelFormat> FromProto(v1::PixelFormat f) {
  switch (f) {
    case v1::PIXEL_FORMAT_YUV420P: return PixelFormat::kYuv420p;
    case v1::PIXEL_FORMAT_YUVJ420P: return PixelFormat::kYuvj420p;
    case v1::PIXEL_FORMAT_NV12: return PixelFormat::kNv12;
    case v1::PIXEL_FORMAT_YUV422P: return PixelFormat::kYuv422p;
    case v1::PIXEL_FORMAT_YUV444P: return PixelFormat::kYuv444p;
    case v1::PIXEL_FORMAT_RGB24: return PixelFormat::kRgb24;
    case v1::PIXEL_FORMAT_BGR24: return PixelFormat::kBgr24;
    case v1::PIXEL_FORMAT_RGBA: return PixelFormat::kRgba;
    case v1::PIXEL_FORMAT_BGRA: return PixelFormat::kBgra;
    default: return InvalidArgument("spec.raw.pixel_format: unspecified or unknown (" + std::to_string(f) + ")");
  }
}

StatusOr<Subsampling> FromProto(v1::Subsampling s, const std::string& field) {
  switch (s) {
    case v1::SUBSAMPLING_UNSPECIFIED:
    case v1::SUBSAMPLING_420: return Subsampling::k420;
    case v1::SUBSAMPLING_422: return Subsampling::k422;
    case v1::SUBSAMPLING_444: return Subsampling::k444;
    default: return InvalidArgument(field + ": unknown value " + std::to_string(s));
  }
}

// The limits bound a picture landscape or portrait: a phone's 2160x3840 fits 3840x2160.
Status CheckSize(int w, int h, const JobLimits& limits, const std::string& field) {
  const bool fits = (w <= limits.max_width && h <= limits.max_height) || (w <= limits.max_height && h <= limits.max_width);
  if (w < 1 || h < 1 || !fits) {
    return InvalidArgument(field + ": " + std::to_string(w) + "x" + std::to_string(h) + " is outside 1x1.." +
                           std::to_string(limits.max_width) + "x" + std::to_string(limits.max_height) +
                           " (either way round)");
  }
  return OkStatus();
}

// A time in seconds the client sent: finite and not negative.
Status CheckSeconds(double seconds, const std::string& field) {
  if (!std::isfinite(seconds) || seconds < 0) {
    return InvalidArgument(field + ": " + std::to_string(seconds) + " is not a finite number of seconds >= 0");
  }
  return OkStatus();
}

// A limit in frames/s as a person writes it: 240, 59.94.
std::string FormatRate(double fps) {
  std::ostringstream out;
  out << fps;
  return out.str();
}

StatusOr<SelectionSpec> ParseSelection(const v1::JobSpec& spec, bool container_input, double max_frame_rate) {
  SelectionSpec s;
  const double start = spec.has_start_seconds() ? spec.start_seconds() : 0;
  if (spec.has_start_seconds()) {
    RETURN_IF_ERROR(CheckSeconds(start, "spec.start_seconds"));
    s.start_seconds = start;
  }
  if (spec.has_end_seconds() && spec.has_duration_seconds()) {
    return InvalidArgument("spec.end_seconds: set end_seconds or duration_seconds, not both");
  }
  if (spec.has_end_seconds()) {
    RETURN_IF_ERROR(CheckSeconds(spec.end_seconds(), "spec.end_seconds"));
    if (spec.end_seconds() <= start) {
      return InvalidArgument("spec.end_seconds: " + std::to_string(spec.end_seconds()) +
                             " is not after start_seconds (" + std::to_string(start) + ")");
    }
    s.end_seconds = spec.end_seconds();
  }
  if (spec.has_duration_seconds()) {
    RETURN_IF_ERROR(CheckSeconds(spec.duration_seconds(), "spec.duration_seconds"));
    if (spec.duration_seconds() <= 0) return InvalidArgument("spec.duration_seconds: must be > 0");
    s.end_seconds = start + spec.duration_seconds();
  }
  if (spec.max_frames() < 0) {
    return InvalidArgument("spec.max_frames: " + std::to_string(spec.max_frames()) + " is negative");
  }
  s.max_frames = spec.max_frames();
  s.keyframes_only = spec.keyframes_only();
  if (s.keyframes_only && !container_input) {
    return InvalidArgument("spec.keyframes_only: needs container input (raw frames are not coded)");
  }
  if (spec.has_frame_rate() && (spec.frame_rate().num() != 0 || spec.frame_rate().den() != 0)) {
    const v1::Rational& r = spec.frame_rate();
    if (r.num() <= 0 || r.den() <= 0) {
      return InvalidArgument("spec.frame_rate: " + std::to_string(r.num()) + "/" + std::to_string(r.den()) +
                             " is not a positive rate");
    }
    if (static_cast<double>(r.num()) / r.den() > max_frame_rate) {
      return InvalidArgument("spec.frame_rate: " + std::to_string(r.num()) + "/" + std::to_string(r.den()) +
                             " fps is above the limit of " + FormatRate(max_frame_rate));
    }
    s.frame_rate_num = r.num();
    s.frame_rate_den = r.den();
  }
  return s;
}

}  // namespace

StatusOr<Job> ParseJobSpec(const v1::JobSpec& spec, const JobLimits& limits) {
  Job job;
  switch (spec.input_case()) {
    case v1::JobSpec::kContainer:
      job.container_input = true;
      job.format_hint = spec.container().format_hint();
      job.strict = spec.container().strict();
      job.seekable = spec.container().seekable();
      job.input_size = spec.container().size();
      if (job.input_size > 0 && !job.seekable) {
        return InvalidArgument("spec.container.size: only for seekable input (spec.container.seekable)");
      }
      break;
    case v1::JobSpec::kRaw: {
      const v1::RawInput& raw = spec.raw();
      job.container_input = false;
      ASSIGN_OR_RETURN(job.raw_format, FromProto(raw.pixel_format()));
      if (raw.width() > static_cast<uint32_t>(kMaxDimension) || raw.height() > static_cast<uint32_t>(kMaxDimension)) {
        return InvalidArgument("spec.raw.width/height: larger than " + std::to_string(kMaxDimension));
      }
      job.raw_width = static_cast<int>(raw.width());
      job.raw_height = static_cast<int>(raw.height());
      RETURN_IF_ERROR(CheckSize(job.raw_width, job.raw_height, limits, "spec.raw.width/height"));
      if (raw.has_frame_rate()) {
        if (raw.frame_rate().num() <= 0 || raw.frame_rate().den() <= 0) {
          return InvalidArgument("spec.raw.frame_rate: num and den must be positive");
        }
        const double fps = static_cast<double>(raw.frame_rate().num()) / raw.frame_rate().den();
        if (fps > limits.max_frame_rate) {
          return InvalidArgument("spec.raw.frame_rate: " + std::to_string(fps) + " fps is above the limit of " +
                                 std::to_string(limits.max_frame_rate));
        }
        job.frame_rate_num = raw.frame_rate().num();
        job.frame_rate_den = raw.frame_rate().den();
      } else {
        job.frame_rate_num = 25;
      }
      switch (raw.color_matrix()) {
        case v1::COLOR_MATRIX_UNSPECIFIED:
        case v1::COLOR_MATRIX_BT601: job.raw_matrix = ColorMatrix::kBt601; break;
        case v1::COLOR_MATRIX_BT709: job.raw_matrix = ColorMatrix::kBt709; break;
        case v1::COLOR_MATRIX_BT2020: job.raw_matrix = ColorMatrix::kBt2020; break;
        default: return InvalidArgument("spec.raw.color_matrix: unknown value");
      }
      switch (raw.color_range()) {
        case v1::COLOR_RANGE_UNSPECIFIED:
        case v1::COLOR_RANGE_LIMITED: job.raw_range = ColorRange::kLimited; break;
        case v1::COLOR_RANGE_FULL: job.raw_range = ColorRange::kFull; break;
        default: return InvalidArgument("spec.raw.color_range: unknown value");
      }
      if (raw.shared_memory_slots() > static_cast<uint32_t>(kMaxSharedMemorySlots)) {
        return InvalidArgument("spec.raw.shared_memory_slots: " + std::to_string(raw.shared_memory_slots()) +
                               " is above " + std::to_string(kMaxSharedMemorySlots));
      }
      job.shared_memory_slots = static_cast<int>(raw.shared_memory_slots());
      break;
    }
    default:
      return InvalidArgument("spec.input: set container or raw");
  }

  if (spec.renditions_size() == 0) return InvalidArgument("spec.renditions: at least one is required");
  if (spec.renditions_size() > 8) return InvalidArgument("spec.renditions: at most 8");
  for (int i = 0; i < spec.renditions_size(); ++i) {
    const v1::RenditionSpec& r = spec.renditions(i);
    const std::string field = "spec.renditions[" + std::to_string(i) + "]";
    RequestedRendition out;
    out.name = r.name().empty() ? std::to_string(i) : r.name();
    if (out.name.size() > 64) return InvalidArgument(field + ".name: longer than 64 bytes");
    if (r.width() > static_cast<uint32_t>(limits.max_width) || r.height() > static_cast<uint32_t>(limits.max_height)) {
      return InvalidArgument(field + ": " + std::to_string(r.width()) + "x" + std::to_string(r.height()) +
                             " is above the limit of " + std::to_string(limits.max_width) + "x" +
                             std::to_string(limits.max_height));
    }
    out.width = static_cast<int>(r.width());
    out.height = static_cast<int>(r.height());
    if (r.quality() > 100) return InvalidArgument(field + ".quality: " + std::to_string(r.quality()) + " is not in 1..100");
    out.params.quality = r.quality() == 0 ? 85 : static_cast<int>(r.quality());
    ASSIGN_OR_RETURN(out.params.subsampling, FromProto(r.subsampling(), field + ".subsampling"));
    if (r.has_restart_interval()) {
      if (r.restart_interval() > static_cast<uint32_t>(kMaxRestartInterval)) {
        return InvalidArgument(field + ".restart_interval: above " + std::to_string(kMaxRestartInterval));
      }
      out.params.restart_interval = static_cast<int>(r.restart_interval());
    }
    if (r.has_tile()) {
      const v1::TileSpec& t = r.tile();
      const std::string tile = field + ".tile";
      if (spec.renditions_size() != 1) return InvalidArgument(tile + ": a storyboard is the job's only rendition");
      if (r.width() != 0 || r.height() != 0) {
        return InvalidArgument(field + ": width and height stay 0 with a tile (tile.width and tile.height size a cell)");
      }
      for (const auto& [name, n] : {std::pair{"columns", t.columns()}, std::pair{"rows", t.rows()}}) {
        if (n < 1 || n > static_cast<uint32_t>(kMaxTileGrid)) {
          return InvalidArgument(tile + "." + name + ": " + std::to_string(n) + " is not in 1.." +
                                 std::to_string(kMaxTileGrid));
        }
      }
      if (t.width() == 0 && t.height() == 0) return InvalidArgument(tile + ": width or height is required");
      for (const auto& [name, n] : {std::pair{"width", t.width()}, std::pair{"height", t.height()}}) {
        if (n % 2 != 0 || n > static_cast<uint32_t>(std::max(limits.max_width, limits.max_height))) {
          return InvalidArgument(tile + "." + name + ": " + std::to_string(n) +
                                 (n % 2 ? " is odd (a cell holds whole 4:2:0 chroma samples)" : " is above the limit"));
        }
      }
      out.width = static_cast<int>(t.width());
      out.height = static_cast<int>(t.height());
      out.tile_columns = static_cast<int>(t.columns());
      out.tile_rows = static_cast<int>(t.rows());
    }
    job.renditions.push_back(std::move(out));
  }

  if (spec.has_output() && spec.output().has_container()) {
    job.container_output = true;
    switch (spec.output().container().format()) {
      case v1::CONTAINER_FORMAT_UNSPECIFIED:
      case v1::CONTAINER_FORMAT_MATROSKA: job.container = media::ContainerFormat::kMatroska; break;
      case v1::CONTAINER_FORMAT_MOV: job.container = media::ContainerFormat::kMov; break;
      case v1::CONTAINER_FORMAT_AVI: job.container = media::ContainerFormat::kAvi; break;
      default: return InvalidArgument("spec.output.container.format: unknown value");
    }
    job.container_seekable = spec.output().container().seekable();
    job.container_faststart = spec.output().container().faststart();
    if (job.container_faststart && job.container != media::ContainerFormat::kMov) {
      return InvalidArgument(std::string("spec.output.container.faststart: only for MOV, not ") +
                             media::ContainerFormatName(job.container));
    }
    if (job.container_faststart && !job.container_seekable) {
      return InvalidArgument("spec.output.container.faststart: needs seekable output "
                             "(spec.output.container.seekable): the moov is inserted at the front at the end");
    }
  }
  if (spec.has_output() && spec.output().has_frames()) {
    const uint32_t slots = spec.output().frames().shared_memory_slots();
    const std::string field = "spec.output.frames.shared_memory_slots";
    if (slots > static_cast<uint32_t>(kMaxSharedMemorySlots)) {
      return InvalidArgument(field + ": " + std::to_string(slots) + " is above " +
                             std::to_string(kMaxSharedMemorySlots));
    }
    job.output_shared_slots = static_cast<int>(slots);
  }
  if (job.storyboard() && job.container_output) {
    return InvalidArgument("spec.output.container: a storyboard's sprites come as JPEG frames (spec.renditions[0].tile)");
  }
  job.audio = spec.audio_passthrough();
  if (job.audio && !job.container_input) return InvalidArgument("spec.audio_passthrough: needs container input");
  if (job.audio && !job.container_output) return InvalidArgument("spec.audio_passthrough: needs container output");
  if (spec.client_label().size() > 128) return InvalidArgument("spec.client_label: longer than 128 bytes");
  job.label = spec.client_label();
  job.autorotate = !spec.has_autorotate() || spec.autorotate();
  switch (spec.deinterlace()) {
    case v1::DEINTERLACE_AUTO: job.deinterlace = Job::Deinterlace::kAuto; break;
    case v1::DEINTERLACE_ON: job.deinterlace = Job::Deinterlace::kOn; break;
    case v1::DEINTERLACE_OFF: job.deinterlace = Job::Deinterlace::kOff; break;
    default: return InvalidArgument("spec.deinterlace: unknown value " + std::to_string(spec.deinterlace()));
  }
  switch (spec.decode()) {
    case v1::DECODE_UNSPECIFIED: break;
    case v1::DECODE_AUTO: job.decode = media::DecodeMode::kAuto; break;
    case v1::DECODE_GPU: job.decode = media::DecodeMode::kGpu; break;
    case v1::DECODE_CPU: job.decode = media::DecodeMode::kCpu; break;
    default: return InvalidArgument("spec.decode: unknown value " + std::to_string(spec.decode()));
  }
  if (!job.container_input && job.decode && *job.decode == media::DecodeMode::kGpu) {
    return InvalidArgument("spec.decode: DECODE_GPU needs container input (raw frames are decoded already)");
  }
  if (!job.container_input && job.deinterlace == Job::Deinterlace::kOn) {
    return InvalidArgument("spec.deinterlace: DEINTERLACE_ON needs container input (raw frames carry no fields)");
  }
  ASSIGN_OR_RETURN(job.selection, ParseSelection(spec, job.container_input, limits.max_frame_rate));
  return job;
}

StatusOr<std::vector<Rendition>> ResolveRenditions(const Job& job, int source_width, int source_height,
                                                   const JobLimits& limits) {
  RETURN_IF_ERROR(CheckSize(source_width, source_height, limits, "input video size"));
  std::vector<Rendition> out;
  for (size_t i = 0; i < job.renditions.size(); ++i) {
    const RequestedRendition& r = job.renditions[i];
    int w = r.width, h = r.height;
    if (w == 0 && h == 0) {
      w = source_width;
      h = source_height;
    } else if (h == 0) {
      h = std::max(2, static_cast<int>(std::lround(static_cast<double>(w) * source_height / source_width / 2)) * 2);
    } else if (w == 0) {
      w = std::max(2, static_cast<int>(std::lround(static_cast<double>(h) * source_width / source_height / 2)) * 2);
    }
    RETURN_IF_ERROR(CheckSize(w, h, limits, "spec.renditions[" + std::to_string(i) + "] resolved size"));
    if (r.tile_columns > 0) {
      RETURN_IF_ERROR(CheckSize(w * r.tile_columns, h * r.tile_rows, limits,
                                "spec.renditions[" + std::to_string(i) + "].tile: the sprite (" +
                                    std::to_string(r.tile_columns) + "x" + std::to_string(r.tile_rows) + " cells of " +
                                    std::to_string(w) + "x" + std::to_string(h) + ")"));
    }
    Rendition rendition;
    // 0x0 asks the worker for the source size itself (no scaling stage).
    if (w != source_width || h != source_height || r.tile_columns > 0) {
      rendition.width = w;
      rendition.height = h;
    }
    rendition.params = r.params;
    out.push_back(rendition);
  }
  return out;
}

}  // namespace conveyor

// conveyorctl transcode's options into a JobSpec (see transcode_job_spec.h): rendition,
// raw input and frame rate syntax, the container names and the client label.
#include "transcode_job_spec.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <numeric>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "encode_params.h"
#include "output_naming.h"
#include "transcode_command.h"

namespace conveyor::ctl {
namespace {

constexpr size_t kMaxLabelBytes = 128;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

bool ParseUint(const std::string& s, uint32_t* out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "WxH" with both parts unsigned integers.
bool ParseSize(const std::string& s, uint32_t* w, uint32_t* h) {
  const size_t x = s.find('x');
  return x != std::string::npos && ParseUint(s.substr(0, x), w) && ParseUint(s.substr(x + 1), h);
}

v1::PixelFormat ToProto(PixelFormat f) {
  switch (f) {
    case PixelFormat::kYuv420p: return v1::PIXEL_FORMAT_YUV420P;
    case PixelFormat::kYuvj420p: return v1::PIXEL_FORMAT_YUVJ420P;
    case PixelFormat::kNv12: return v1::PIXEL_FORMAT_NV12;
    case PixelFormat::kYuv422p: return v1::PIXEL_FORMAT_YUV422P;
    case PixelFormat::kYuv444p: return v1::PIXEL_FORMAT_YUV444P;
    case PixelFormat::kRgb24: return v1::PIXEL_FORMAT_RGB24;
    case PixelFormat::kBgr24: return v1::PIXEL_FORMAT_BGR24;
    case PixelFormat::kRgba: return v1::PIXEL_FORMAT_RGBA;
    case PixelFormat::kBgra: return v1::PIXEL_FORMAT_BGRA;
  }
  return v1::PIXEL_FORMAT_UNSPECIFIED;
}

v1::Subsampling ToProto(Subsampling s) {
  switch (s) {
    case Subsampling::k420: return v1::SUBSAMPLING_420;
    case Subsampling::k422: return v1::SUBSAMPLING_422;
    case Subsampling::k444: return v1::SUBSAMPLING_444;
  }
  return v1::SUBSAMPLING_UNSPECIFIED;
}

struct ContainerKind {
  const char* name;
  v1::ContainerFormat format;
};
constexpr ContainerKind kContainers[] = {
    {"mkv", v1::CONTAINER_FORMAT_MATROSKA},
    {"mov", v1::CONTAINER_FORMAT_MOV},
    {"avi", v1::CONTAINER_FORMAT_AVI},
};

// "29.97" → 2997/100, "30000/1001" as given, "30" → 30/1.
StatusOr<v1::Rational> ParseFrameRate(const std::string& text) {
  v1::Rational r;
  const size_t slash = text.find('/');
  uint32_t num = 0, den = 1;
  if (slash != std::string::npos) {
    if (!ParseUint(text.substr(0, slash), &num) || !ParseUint(text.substr(slash + 1), &den)) {
      return InvalidArgument("frame rate '" + text + "' is not N, N.M or N/D");
    }
  } else {
    const size_t dot = text.find('.');
    std::string digits = text;
    if (dot != std::string::npos) {
      const std::string frac = text.substr(dot + 1);
      if (frac.empty() || frac.size() > 3) {
        return InvalidArgument("frame rate '" + text + "' is not N, N.M or N/D");
      }
      digits = text.substr(0, dot) + frac;
      for (size_t i = 0; i < frac.size(); ++i) den *= 10;
    }
    if (!ParseUint(digits, &num)) {
      return InvalidArgument("frame rate '" + text + "' is not N, N.M or N/D");
    }
  }
  if (num == 0 || den == 0 || num > INT32_MAX || den > INT32_MAX) {
    return InvalidArgument("frame rate '" + text + "' must be positive");
  }
  const uint32_t g = std::gcd(num, den);
  r.set_num(static_cast<int32_t>(num / g));
  r.set_den(static_cast<int32_t>(den / g));
  return r;
}

std::string DefaultLabel(const std::string& input) {
  std::string label =
      input == "-" ? std::string("stdin") : std::filesystem::path(input).filename().string();
  if (label.size() > kMaxLabelBytes) {
    size_t cut = kMaxLabelBytes;
    // Do not split a UTF-8 sequence: back off over continuation bytes.
    while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;
    label.resize(cut);
  }
  return label;
}

}  // namespace

StatusOr<PixelFormat> PixelFormatFromProto(v1::PixelFormat f) {
  for (const PixelFormat k : {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                              PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                              PixelFormat::kBgr24, PixelFormat::kRgba, PixelFormat::kBgra}) {
    if (ToProto(k) == f) return k;
  }
  return InvalidArgument("unspecified pixel format");
}

StatusOr<v1::RenditionSpec> ParseRendition(const std::string& text, const std::string& flag) {
  const std::vector<std::string> parts = Split(text, ':');
  const bool full = flag == "--rendition";
  auto bad = [&](const std::string& why) {
    return InvalidArgument(flag + " '" + text + "': " + why +
                           (full ? " (expected WxH[:quality[:subsampling]], e.g. 1280x720:85:420)"
                                 : " (expected WxH, or W to keep the aspect ratio, e.g. 1280x720 or 1280)"));
  };
  if (parts.size() > 3) return bad("too many fields");
  v1::RenditionSpec spec;
  uint32_t w = 0, h = 0;
  // A width alone keeps the aspect ratio, as Wx0 (the ffmpeg CLI's scale=W:-2).
  const bool width_only = parts[0].find('x') == std::string::npos && ParseUint(parts[0], &w);
  if (!width_only && !ParseSize(parts[0], &w, &h)) return bad("'" + parts[0] + "' is not WxH");
  if (w > kMaxDimension || h > kMaxDimension) {
    return bad("the size is above " + std::to_string(kMaxDimension));
  }
  if (w == 0 && h != 0) return bad("a height needs a width (use Wx0 to keep the aspect ratio)");
  spec.set_width(w);
  spec.set_height(h);
  spec.set_name(parts[0]);
  if (parts.size() >= 2) {
    uint32_t q = 0;
    if (!ParseUint(parts[1], &q) || q < 1 || q > 100) {
      return bad("quality '" + parts[1] + "' is not 1..100");
    }
    spec.set_quality(q);
  }
  if (parts.size() == 3) {
    auto s = ParseSubsampling(parts[2]);
    if (!s.ok()) return bad(s.status().message());
    spec.set_subsampling(ToProto(*s));
  }
  return spec;
}

StatusOr<v1::RawInput> ParseRawInput(const std::string& text) {
  const std::vector<std::string> parts = Split(text, ':');
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--raw '" + text + "': " + why +
                           " (expected FORMAT:WxH[:FPS], e.g. yuv420p:1920x1080:25)");
  };
  if (parts.size() < 2 || parts.size() > 3) return bad("wrong number of fields");
  auto format = ParsePixelFormat(parts[0]);
  if (!format.ok()) return bad(format.status().message());
  uint32_t w = 0, h = 0;
  if (!ParseSize(parts[1], &w, &h)) return bad("'" + parts[1] + "' is not WxH");
  if (w < 1 || h < 1 || w > kMaxDimension || h > kMaxDimension) {
    return bad("the size must be 1..." + std::to_string(kMaxDimension) + " each way");
  }
  v1::RawInput raw;
  raw.set_pixel_format(ToProto(*format));
  raw.set_width(w);
  raw.set_height(h);
  auto rate = ParseFrameRate(parts.size() == 3 ? parts[2] : "25");
  if (!rate.ok()) return bad(rate.status().message());
  *raw.mutable_frame_rate() = *rate;
  return raw;
}

StatusOr<std::string> EveryAsFrameRate(const std::string& every) {
  ASSIGN_OR_RETURN(const double seconds, ParseTime(every));
  const int64_t us = std::llround(seconds * 1e6);
  if (us < 1000) return InvalidArgument("'" + every + "' is shorter than 1 ms");
  if (us > int64_t{1} << 31) return InvalidArgument("'" + every + "' is longer than " + std::to_string((int64_t{1} << 31) / 1000000) + " s");
  const int64_t g = std::gcd(us, int64_t{1000000});
  return std::to_string(1000000 / g) + "/" + std::to_string(us / g);
}

StatusOr<double> ParseTime(const std::string& text) {
  const auto bad = [&text](const std::string& why) {
    return InvalidArgument("'" + text + "' is not a time (seconds, or [HH:]MM:SS[.frac]): " + why);
  };
  // A non-negative decimal number, the whole of `part`.
  const auto number = [](const std::string& part) -> std::optional<double> {
    if (part.empty() || part.size() > 32 || part.find_first_not_of("0123456789.") != std::string::npos ||
        part.find('.') != part.rfind('.') || part == ".") {
      return std::nullopt;
    }
    return std::stod(part);
  };
  if (text.empty()) return bad("empty");
  if (text[0] == '-') return bad("negative");
  if (text.find(':') == std::string::npos) {
    double scale = 1;
    std::string digits = text;
    for (const auto& [suffix, factor] : {std::pair<std::string, double>{"ms", 1e-3}, {"us", 1e-6}, {"s", 1}}) {
      if (digits.size() > suffix.size() && digits.compare(digits.size() - suffix.size(), suffix.size(), suffix) == 0) {
        digits.resize(digits.size() - suffix.size());
        scale = factor;
        break;
      }
    }
    const std::optional<double> seconds = number(digits);
    if (!seconds) return bad("expected a number");
    return *seconds * scale;
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t colon = text.find(':', start);
    parts.push_back(text.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) return bad("more than HH:MM:SS");
  double total = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const bool last = i + 1 == parts.size();
    const std::optional<double> v = number(parts[i]);
    if (!v || (!last && parts[i].find('.') != std::string::npos)) return bad("expected [HH:]MM:SS[.frac]");
    if (i > 0 && *v >= 60) return bad("minutes and seconds are below 60");
    total = total * 60 + *v;
  }
  return total;
}

StatusOr<v1::JobSpec> BuildJobSpec(const TranscodeOptions& o) {
  v1::JobSpec spec;
  if (o.input.empty()) return InvalidArgument("no INPUT given (a file, or - for stdin)");
  if (o.output.empty()) return InvalidArgument("no -o OUTPUT given");
  if (!o.raw.empty()) {
    if (!o.format_hint.empty())
      return InvalidArgument("--format-hint is for container input, not --raw");
    if (o.audio) return InvalidArgument("--audio needs container input, not --raw");
    if (o.strict) return InvalidArgument("--strict is for container input, not --raw");
    if (o.no_autorotate) return InvalidArgument("--no-autorotate is for container input, not --raw");
    if (o.deinterlace == "on") return InvalidArgument("--deinterlace on is for container input, not --raw");
    if (!o.decode.empty()) return InvalidArgument("--decode is for container input, not --raw");
    if (o.keyframes) return InvalidArgument("--keyframes is for container input, not --raw");
    ASSIGN_OR_RETURN(v1::RawInput raw, ParseRawInput(o.raw));
    *spec.mutable_raw() = std::move(raw);
  } else {
    spec.mutable_container()->set_format_hint(o.format_hint);
    spec.mutable_container()->set_strict(o.strict);
    if (o.no_autorotate) spec.set_autorotate(false);
    spec.set_deinterlace(o.deinterlace == "on" ? v1::DEINTERLACE_ON
                         : o.deinterlace == "off" ? v1::DEINTERLACE_OFF
                                                  : v1::DEINTERLACE_AUTO);
    if (!o.decode.empty()) {
      spec.set_decode(o.decode == "gpu" ? v1::DECODE_GPU : o.decode == "cpu" ? v1::DECODE_CPU : v1::DECODE_AUTO);
    }
  }
  if (!o.renditions.empty() && (!o.size.empty() || !o.ladder.empty())) {
    return InvalidArgument("--rendition replaces --size and --renditions; give one or the other");
  }
  if (!o.size.empty() && !o.ladder.empty()) return InvalidArgument("give --size or --renditions, not both");
  if (o.quality < 0 || o.quality > 100) return InvalidArgument("--quality must be 1..100");
  std::vector<std::string> sizes;
  if (!o.size.empty()) sizes.push_back(o.size);
  for (size_t start = 0; !o.ladder.empty() && start <= o.ladder.size();) {
    const size_t comma = o.ladder.find(',', start);
    const std::string item = o.ladder.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return InvalidArgument("--renditions '" + o.ladder + "': an empty size");
    sizes.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const std::string& size : sizes) {
    if (size.find(':') != std::string::npos) {
      return InvalidArgument("'" + size + "': --size and --renditions take WxH; use --quality for the quality");
    }
    ASSIGN_OR_RETURN(v1::RenditionSpec rendition, ParseRendition(size, o.size.empty() ? "--renditions" : "--size"));
    if (o.quality > 0) rendition.set_quality(o.quality);
    *spec.add_renditions() = std::move(rendition);
  }
  for (const std::string& r : o.renditions) {
    ASSIGN_OR_RETURN(v1::RenditionSpec rendition, ParseRendition(r));
    *spec.add_renditions() = std::move(rendition);
  }
  if (spec.renditions().empty()) {
    spec.add_renditions()->set_quality(o.quality);  // the source size; quality 0 is 85
  }
  if (!o.tile.empty()) {  // a storyboard: --size is a cell's
    if (spec.renditions_size() != 1 || !o.container.empty()) {
      return InvalidArgument("--tile makes sprites of one --size, as JPEG files in a directory");
    }
    const size_t x = o.tile.find('x');
    uint32_t columns = 0, rows = 0;
    if (x == std::string::npos || !ParseUint(o.tile.substr(0, x), &columns) || !ParseUint(o.tile.substr(x + 1), &rows) ||
        columns < 1 || rows < 1 || columns > 100 || rows > 100) {
      return InvalidArgument("--tile '" + o.tile + "': expected COLUMNSxROWS, each 1..100 (e.g. 10x10)");
    }
    v1::RenditionSpec& r = *spec.mutable_renditions(0);
    if (r.width() == 0 && r.height() == 0) return InvalidArgument("--tile needs --size, a cell's WxH (e.g. 160x90)");
    v1::TileSpec* tile = r.mutable_tile();
    tile->set_columns(columns);
    tile->set_rows(rows);
    tile->set_width(r.width());
    tile->set_height(r.height());
    r.clear_width();
    r.clear_height();
  }
  if (o.container.empty()) {
    if (o.audio) return InvalidArgument("--audio needs --container output");
    if (o.output == "-") {
      return InvalidArgument("JPEG frames go to a directory: -o - needs --container");
    }
    RETURN_IF_ERROR(FrameNamer::Parse(o.name, spec.renditions_size()).status());
    if (!o.index.empty()) RETURN_IF_ERROR(IndexFileName(o.index).status());
    spec.mutable_output()->mutable_frames();
  } else {
    const ContainerKind* kind = nullptr;
    for (const ContainerKind& k : kContainers) {
      if (o.container == k.name) kind = &k;
    }
    if (kind == nullptr) {
      return InvalidArgument("--container '" + o.container + "': expected mkv, mov or avi");
    }
    if (!o.name.empty()) return InvalidArgument("--name names JPEG frames, not container output");
    if (!o.index.empty()) return InvalidArgument("--index lists JPEG frames, not container output");
    if (o.output == "-" && spec.renditions_size() > 1) {
      return InvalidArgument("-o - (stdout) takes one rendition, not " +
                             std::to_string(spec.renditions_size()));
    }
    spec.mutable_output()->mutable_container()->set_format(kind->format);
  }
  spec.set_audio_passthrough(o.audio);
  if (!o.to.empty() && !o.duration.empty()) return InvalidArgument("give --to or -t, not both");
  for (const auto& [flag, text] : {std::pair<std::string, const std::string*>{"--ss", &o.ss}, {"--to", &o.to},
                                   {"-t", &o.duration}}) {
    if (text->empty()) continue;
    StatusOr<double> seconds = ParseTime(*text);
    if (!seconds.ok()) return InvalidArgument(flag + ": " + seconds.status().message());
    if (flag == "--ss") spec.set_start_seconds(*seconds);
    if (flag == "--to") spec.set_end_seconds(*seconds);
    if (flag == "-t") spec.set_duration_seconds(*seconds);
  }
  if (o.frames < 0) return InvalidArgument("--frames must be 0 or more");
  spec.set_max_frames(o.frames);
  if (!o.fps.empty()) {
    StatusOr<v1::Rational> rate = ParseFrameRate(o.fps);
    if (!rate.ok()) return InvalidArgument("--fps: " + rate.status().message());
    *spec.mutable_frame_rate() = *rate;
  }
  spec.set_keyframes_only(o.keyframes);
  const std::string label = o.label.empty() ? DefaultLabel(o.input) : o.label;
  if (label.size() > kMaxLabelBytes) {
    return InvalidArgument("--label is " + std::to_string(label.size()) + " bytes; at most " +
                           std::to_string(kMaxLabelBytes));
  }
  spec.set_client_label(label);
  return spec;
}

}  // namespace conveyor::ctl

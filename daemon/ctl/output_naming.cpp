// conveyorctl's output names (see output_naming.h).
#include "output_naming.h"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "quoted_string.h"

namespace conveyor::ctl {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool IsPattern(const std::string& name) {
  return name.find('%') != std::string::npos || name.find('{') != std::string::npos;
}

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

StatusOr<OutputTarget> ResolveOutput(const std::string& output, const std::string& container,
                                     const std::string& name) {
  OutputTarget t;
  t.output = output;
  t.container = container;
  t.name = name;
  if (!container.empty() || output == "-") {
    if (!name.empty()) return InvalidArgument("--name names JPEG frames, not container output");
    return t;
  }
  const std::filesystem::path p(output);
  const std::string file = p.filename().string();
  if (IsPattern(file)) {
    if (!name.empty()) return InvalidArgument("-o " + output + " is already a name pattern; drop --name");
    t.output = p.has_parent_path() ? p.parent_path().string() : ".";
    t.name = file;
    return t;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return t;  // frames into a directory that exists
  const std::string ext = Lower(p.extension().string());
  if (ext == ".mkv" || ext == ".mov" || ext == ".avi") {
    if (!name.empty()) return InvalidArgument("--name names JPEG frames, not the container " + output);
    t.container = ext.substr(1);
  } else if (ext == ".mp4" || ext == ".m4v") {
    return InvalidArgument("-o " + output + ": conveyord writes Motion-JPEG into mkv, mov or avi, not MP4; name "
                           "the file .mov, .mkv or .avi, or give --container");
  }
  return t;
}

StatusOr<FrameNamer> FrameNamer::Parse(const std::string& pattern, int renditions) {
  FrameNamer n;
  if (pattern.empty()) return n;
  if (pattern.find('/') != std::string::npos) return InvalidArgument("--name '" + pattern + "': a name, not a path");
  bool tells_frames = false, tells_renditions = false;
  std::string text;
  auto flush = [&] {
    if (!text.empty()) n.parts_.push_back(Part{Part::kText, text, 0});
    text.clear();
  };
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '%') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '%') {
        text += '%';
        ++i;
        continue;
      }
      // %d or %0Nd
      size_t j = i + 1;
      int width = 0;
      if (j < pattern.size() && pattern[j] == '0') {
        ++j;
        if (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j])) && pattern[j] != '0') {
          width = pattern[j] - '0';
          ++j;
        } else {
          return InvalidArgument("--name '" + pattern + "': expected %d or %0Nd (N from 1 to 9)");
        }
      }
      if (j >= pattern.size() || pattern[j] != 'd') {
        return InvalidArgument("--name '" + pattern + "': expected %d or %0Nd (N from 1 to 9), or %% for a %");
      }
      flush();
      n.parts_.push_back(Part{Part::kNumber, "", width});
      tells_frames = true;
      i = j;
    } else if (c == '{') {
      const size_t close = pattern.find('}', i);
      if (close == std::string::npos) return InvalidArgument("--name '" + pattern + "': a { without its }");
      const std::string field = pattern.substr(i + 1, close - i - 1);
      flush();
      if (field == "index") {
        n.parts_.push_back(Part{Part::kIndex, "", 0});
        tells_frames = true;
      } else if (field == "pts_ms") {
        n.parts_.push_back(Part{Part::kPtsMs, "", 0});
        tells_frames = true;
      } else if (field == "rendition") {
        n.parts_.push_back(Part{Part::kRendition, "", 0});
        tells_renditions = true;
      } else {
        return InvalidArgument("--name '" + pattern + "': unknown field {" + field +
                               "}; expected {index}, {pts_ms} or {rendition}");
      }
      i = close;
    } else {
      text += c;
    }
  }
  flush();
  if (!tells_frames) {
    return InvalidArgument("--name '" + pattern + "': every frame would get the same name; put %d, %06d, {index} "
                           "or {pts_ms} in it");
  }
  if (renditions > 1 && !tells_renditions) {
    return InvalidArgument("--name '" + pattern + "': " + std::to_string(renditions) +
                           " renditions need {rendition} in the name");
  }
  return n;
}

std::string FrameNamer::Name(uint32_t rendition, uint64_t index, int64_t pts_ms) const {
  std::string out;
  char buf[32];
  for (const Part& part : parts_) {
    switch (part.kind) {
      case Part::kText: out += part.text; break;
      case Part::kNumber:
        std::snprintf(buf, sizeof(buf), "%0*" PRIu64, part.width, index + 1);
        out += buf;
        break;
      case Part::kIndex: out += std::to_string(index); break;
      case Part::kPtsMs: out += std::to_string(pts_ms); break;
      case Part::kRendition: out += std::to_string(rendition); break;
    }
  }
  return out;
}

StatusOr<std::string> IndexFileName(const std::string& format) {
  if (format == "csv") return std::string("frames.csv");
  if (format == "json") return std::string("frames.json");
  return InvalidArgument("--index '" + format + "': expected csv or json");
}

std::string RenderIndex(const std::string& format, const std::vector<FrameRecord>& records) {
  std::string out = format == "json" ? "[\n" : "file,rendition,index,pts,time_s,bytes\n";
  char time[32];
  for (size_t i = 0; i < records.size(); ++i) {
    const FrameRecord& r = records[i];
    std::snprintf(time, sizeof(time), "%.6f", r.time_s);
    if (format == "json") {
      out += "  {\"file\": " + QuotedString(r.file) + ", \"rendition\": " + std::to_string(r.rendition) +
             ", \"index\": " + std::to_string(r.index) + ", \"pts\": " + std::to_string(r.pts) +
             ", \"time_s\": " + time + ", \"bytes\": " + std::to_string(r.bytes) + "}" +
             (i + 1 < records.size() ? ",\n" : "\n");
    } else {
      out += CsvField(r.file) + "," + std::to_string(r.rendition) + "," + std::to_string(r.index) + "," +
             std::to_string(r.pts) + "," + time + "," + std::to_string(r.bytes) + "\n";
    }
  }
  if (format == "json") out += "]\n";
  return out;
}

}  // namespace conveyor::ctl

// Benchmark input readers.
#include "frame_source.h"

#include <fstream>
#include <sstream>

#include "synthetic_frame.h"

namespace conveyor::bench {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status Finish(OwnedFrame* f, int w, int h, PixelFormat fmt, ColorMatrix m, ColorRange r) {
  ASSIGN_OR_RETURN(f->view, MakePackedFrameView(f->bytes.data(), f->bytes.size(), w, h, fmt, m, r));
  return OkStatus();
}

StatusOr<std::vector<OwnedFrame>> LoadPpm(const SourceOptions& o) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) return NotFound("cannot open " + o.input);
  std::string magic;
  int w = 0, h = 0, maxval = 0;
  in >> magic >> w >> h >> maxval;
  in.get();  // the single whitespace before the raster
  if (magic != "P6" || maxval != 255) return InvalidArgument(o.input + ": only binary 8-bit PPM (P6) is supported");
  std::vector<OwnedFrame> frames(1);
  frames[0].bytes.resize(PackedFrameSize(PixelFormat::kRgb24, w, h));
  if (!in.read(reinterpret_cast<char*>(frames[0].bytes.data()), frames[0].bytes.size()))
    return InvalidArgument(o.input + ": truncated raster");
  RETURN_IF_ERROR(Finish(&frames[0], w, h, PixelFormat::kRgb24, o.matrix, ColorRange::kFull));
  return frames;
}

StatusOr<std::vector<OwnedFrame>> LoadY4m(const SourceOptions& o) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) return NotFound("cannot open " + o.input);
  std::string header;
  std::getline(in, header);
  if (header.rfind("YUV4MPEG2", 0) != 0) return InvalidArgument(o.input + ": not a YUV4MPEG2 file");
  int w = 0, h = 0;
  PixelFormat fmt = PixelFormat::kYuv420p;
  ColorRange range = ColorRange::kLimited;
  std::istringstream tags(header.substr(9));
  std::string tag;
  while (tags >> tag) {
    if (tag[0] == 'W') w = std::stoi(tag.substr(1));
    if (tag[0] == 'H') h = std::stoi(tag.substr(1));
    if (tag[0] == 'C') {
      const std::string c = tag.substr(1);
      if (c.rfind("420", 0) == 0) fmt = PixelFormat::kYuv420p;
      else if (c == "422") fmt = PixelFormat::kYuv422p;
      else if (c == "444") fmt = PixelFormat::kYuv444p;
      else return InvalidArgument(o.input + ": unsupported Y4M colourspace " + c);
    }
    if (tag == "XCOLORRANGE=FULL") range = ColorRange::kFull;
  }
  std::vector<OwnedFrame> frames;
  const size_t size = PackedFrameSize(fmt, w, h);
  std::string line;
  while (static_cast<int>(frames.size()) < o.max_frames && std::getline(in, line)) {
    if (line.rfind("FRAME", 0) != 0) return InvalidArgument(o.input + ": bad FRAME header");
    OwnedFrame f;
    f.bytes.resize(size);
    if (!in.read(reinterpret_cast<char*>(f.bytes.data()), size)) break;
    RETURN_IF_ERROR(Finish(&f, w, h, fmt, o.matrix, range));
    frames.push_back(std::move(f));
  }
  if (frames.empty()) return InvalidArgument(o.input + ": no complete frame");
  return frames;
}

StatusOr<std::vector<OwnedFrame>> LoadRaw(const SourceOptions& o) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) return NotFound("cannot open " + o.input);
  const size_t size = PackedFrameSize(o.format, o.width, o.height);
  std::vector<OwnedFrame> frames;
  while (static_cast<int>(frames.size()) < o.max_frames) {
    OwnedFrame f;
    f.bytes.resize(size);
    if (!in.read(reinterpret_cast<char*>(f.bytes.data()), size)) break;
    RETURN_IF_ERROR(Finish(&f, o.width, o.height, o.format, o.matrix, ColorRange::kLimited));
    frames.push_back(std::move(f));
  }
  if (frames.empty()) {
    return InvalidArgument(o.input + ": shorter than one " + std::to_string(o.width) + "x" +
                           std::to_string(o.height) + " " + PixelFormatName(o.format) + " frame");
  }
  return frames;
}

}  // namespace

StatusOr<std::vector<OwnedFrame>> LoadFrames(const SourceOptions& o) {
  if (o.input.empty()) {
    std::vector<OwnedFrame> frames;
    for (int i = 0; i < o.max_frames; ++i) {
      auto s = testing::MakeSyntheticFrame(o.width, o.height, o.format, 1000 + i, o.matrix);
      OwnedFrame f;
      f.bytes = std::move(s.bytes);
      RETURN_IF_ERROR(Finish(&f, o.width, o.height, o.format, o.matrix, ColorRange::kLimited));
      frames.push_back(std::move(f));
    }
    return frames;
  }
  if (EndsWith(o.input, ".ppm")) return LoadPpm(o);
  if (EndsWith(o.input, ".y4m")) return LoadY4m(o);
  return LoadRaw(o);
}

}  // namespace conveyor::bench

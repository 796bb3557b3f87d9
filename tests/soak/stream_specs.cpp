// The soak test's streams (see stream_specs.h).
#include "stream_specs.h"

#include <chrono>
#include <random>
#include <thread>

#include "synthetic_frame.h"

namespace conveyor::soak {
namespace {

struct RawShape {
  int width, height;
  PixelFormat format;
  v1::PixelFormat wire_format;
  int quality;
  v1::Subsampling subsampling;
  int scaled_width, scaled_height;  // a second, scaled rendition; 0: none
  size_t frames;
  double fps;
  int64_t first_pts, pts_step;
  size_t chunk;
};

// Small frames and modest rates: 64 sessions of these share two cores in CI.
const RawShape kRawShapes[] = {
    {64, 48, PixelFormat::kRgb24, v1::PIXEL_FORMAT_RGB24, 85, v1::SUBSAMPLING_420, 0, 0, 40, 0, 0, 1, 1 << 20},
    {96, 64, PixelFormat::kYuv420p, v1::PIXEL_FORMAT_YUV420P, 90, v1::SUBSAMPLING_420, 48, 32, 24, 120, 0, 2, 1 << 20},
    {160, 120, PixelFormat::kNv12, v1::PIXEL_FORMAT_NV12, 75, v1::SUBSAMPLING_444, 0, 0, 16, 60, 1000, 3, 1 << 20},
    {320, 240, PixelFormat::kYuv420p, v1::PIXEL_FORMAT_YUV420P, 80, v1::SUBSAMPLING_420, 160, 120, 12, 30, 0, 1,
     1 << 20},
    // Many chunks per frame: the daemon assembles frames from 1000-byte pieces.
    {128, 96, PixelFormat::kRgba, v1::PIXEL_FORMAT_RGBA, 95, v1::SUBSAMPLING_422, 0, 0, 20, 0, 7, 1, 1000},
    {200, 150, PixelFormat::kYuv422p, v1::PIXEL_FORMAT_YUV422P, 70, v1::SUBSAMPLING_420, 64, 48, 10, 90, 5, 5,
     1 << 20},
};

v1::RenditionSpec* AddRendition(v1::JobSpec* job, int width, int height, int quality, v1::Subsampling subsampling) {
  v1::RenditionSpec* r = job->add_renditions();
  r->set_width(width);
  r->set_height(height);
  r->set_quality(quality);
  r->set_subsampling(subsampling);
  return r;
}

StreamSpec MakeRawStream(const RawShape& s, uint32_t seed) {
  StreamSpec spec;
  spec.name = "raw " + std::to_string(s.width) + "x" + std::to_string(s.height) + " " +
              PixelFormatName(s.format) + (s.scaled_width ? " +" + std::to_string(s.scaled_width) + "x" +
                                                                std::to_string(s.scaled_height)
                                                          : "") +
              (s.fps > 0 ? " @" + std::to_string(static_cast<int>(s.fps)) + "fps" : " unpaced");
  v1::RawInput* raw = spec.job.mutable_raw();
  raw->set_pixel_format(s.wire_format);
  raw->set_width(s.width);
  raw->set_height(s.height);
  raw->mutable_frame_rate()->set_num(s.fps > 0 ? static_cast<int>(s.fps) : 30);
  raw->mutable_frame_rate()->set_den(1);
  raw->set_color_matrix(v1::COLOR_MATRIX_BT709);
  AddRendition(&spec.job, 0, 0, s.quality, s.subsampling);
  if (s.scaled_width > 0) AddRendition(&spec.job, s.scaled_width, s.scaled_height, s.quality, s.subsampling);
  for (size_t i = 0; i < s.frames; ++i) {
    spec.frames.push_back(
        testing::MakeSyntheticFrame(s.width, s.height, s.format, seed * 1000 + static_cast<uint32_t>(i)).bytes);
  }
  spec.first_pts = s.first_pts;
  spec.pts_step = s.pts_step;
  spec.chunk = s.chunk;
  spec.fps = s.fps;
  return spec;
}

}  // namespace

size_t Reference::total_frames() const {
  size_t n = 0;
  for (const auto& [r, f] : frames) n += f.size();
  return n;
}

std::vector<StreamSpec> MakeGoodStreams(const std::string& h264_path) {
  std::vector<StreamSpec> specs;
  uint32_t seed = 1;
  for (const RawShape& s : kRawShapes) specs.push_back(MakeRawStream(s, seed++));
  StreamSpec whole;
  whole.name = "h264 320x240 container, 4 KiB chunks";
  whole.job.mutable_container();
  AddRendition(&whole.job, 0, 0, 85, v1::SUBSAMPLING_420);
  whole.container_path = h264_path;
  whole.chunk = 4096;
  specs.push_back(whole);
  StreamSpec ladder = whole;
  ladder.name = "h264 320x240 container -> 320x240 + 160x120";
  ladder.job.clear_renditions();
  AddRendition(&ladder.job, 0, 0, 75, v1::SUBSAMPLING_420);
  AddRendition(&ladder.job, 160, 0, 75, v1::SUBSAMPLING_420);
  ladder.chunk = 64 << 10;
  specs.push_back(ladder);
  return specs;
}

StreamSpec MakeStallStream() {
  const RawShape shape = {320, 240, PixelFormat::kRgb24, v1::PIXEL_FORMAT_RGB24, 100, v1::SUBSAMPLING_444,
                          0, 0, 4, 0, 0, 1, 1 << 20};
  StreamSpec spec = MakeRawStream(shape, 99);
  // Pure noise: the most JPEG bytes per pixel encoded, so the windows fill fast.
  std::mt19937 rng(99);
  for (std::vector<uint8_t>& frame : spec.frames) {
    for (uint8_t& b : frame) b = static_cast<uint8_t>(rng());
  }
  spec.name = "noise 320x240 rgb24 q100 4:4:4";
  return spec;
}

int64_t PtsOf(const StreamSpec& spec, size_t i) { return spec.first_pts + static_cast<int64_t>(i) * spec.pts_step; }

bool SendStream(e2e::TranscodeStream* stream, const StreamSpec& spec, size_t count, bool paced,
                const std::atomic<bool>* stop) {
  if (!spec.container_path.empty()) return e2e::SendFileChunks(stream, spec.container_path, spec.chunk);
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < count; ++i) {
    if (stop != nullptr && stop->load()) return false;
    if (paced && spec.fps > 0) {
      std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                std::chrono::duration<double>(i / spec.fps)));
    }
    if (!e2e::SendRawFrame(stream, spec.frames[i % spec.frames.size()], PtsOf(spec, i), spec.chunk)) return false;
  }
  return true;
}

std::string CompareWithReference(const e2e::TranscodeOutcome& got, const Reference& want, bool whole) {
  for (const auto& [r, frames] : got.frames) {
    if (want.frames.count(r) == 0) return "rendition " + std::to_string(r) + " is not in the reference";
  }
  for (const auto& [r, want_frames] : want.frames) {
    const auto it = got.frames.find(r);
    const size_t n = it == got.frames.end() ? 0 : it->second.size();
    if (whole ? n != want_frames.size() : n > want_frames.size()) {
      return "rendition " + std::to_string(r) + ": " + std::to_string(n) + " frames, the solo run gave " +
             std::to_string(want_frames.size());
    }
    for (size_t i = 0; i < n; ++i) {
      if (got.pts.at(r)[i] != want.pts.at(r)[i]) {
        return "rendition " + std::to_string(r) + " frame " + std::to_string(i) + ": pts " +
               std::to_string(got.pts.at(r)[i]) + ", the solo run had " + std::to_string(want.pts.at(r)[i]);
      }
      if (it->second[i] != want_frames[i]) {
        return "rendition " + std::to_string(r) + " frame " + std::to_string(i) + ": " +
               std::to_string(it->second[i].size()) + " bytes differ from the solo run's " +
               std::to_string(want_frames[i].size());
      }
    }
  }
  return "";
}

}  // namespace conveyor::soak

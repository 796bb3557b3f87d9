// conveyorctl's status line on stderr, shaped as the ffmpeg CLI's: frames written, frames/s,
// where the output has got to in the input and the speed against real time, and, where
// the input's span or frame count is known (Started.source_*), the share done and an ETA.
// It measures output, not the bytes uploaded, which run ahead of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "conveyor/v1/transcoder.pb.h"

namespace conveyor::ctl {

// What the output will cover, in seconds of the input's timeline, and how many frames it
// will have; either may be unknown.
struct ProgressSpan {
  std::optional<double> start;  // where the output's time starts (the first frame's pts)
  std::optional<double> end;    // where it ends
  uint64_t frames = 0;          // the output's frame count; 0: not known
};

// The span the job's selection (start, end, duration, max_frames, frame_rate) leaves of the
// input that Started describes.
ProgressSpan SpanOf(const v1::Started& started, const v1::JobSpec& spec);

// The share of the span done, 0..1, by the last frame's time (`time_s`, its pts in
// seconds) or else by frames; nullopt when neither can tell.
std::optional<double> ShareDone(const ProgressSpan& span, uint64_t frames, std::optional<double> time_s);

// "frame=  265 fps= 80 time=00:00:08.83 speed=2.7x  44% ETA 0:05"; time and speed are
// N/A before the first frame, and the share and ETA are left out where unknown. `done`:
// the daemon's Summary has come, 100 %.
std::string FormatProgress(const ProgressSpan& span, uint64_t frames, std::optional<double> time_s,
                           double elapsed_s, bool done = false);

// The line, redrawn in place at most ten times a second, and once more, whole, at the end.
class ProgressLine {
 public:
  explicit ProgressLine(std::ostream& err) : err_(err) {}
  void Started(const v1::Started& started, const v1::JobSpec& spec);
  // A frame of rendition 0 written, with its pts in Started.time_base.
  void Frame(int64_t pts);
  // A Progress message: container output's only word of where it has got to.
  void Progress(const v1::Progress& progress);
  // Summary: the call is done; the last line says 100 % and the frames it counts.
  void Finished(const v1::Summary& summary);
  // Redraws when due; `last`: now, ending the line (nothing is drawn after that).
  void Draw(bool last = false);

 private:
  std::ostream& err_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point drawn_{};
  ProgressSpan span_;
  double time_base_ = 0;  // seconds a pts unit; 0 before Started
  uint64_t frames_ = 0;
  std::optional<int64_t> pts_;
  bool done_ = false;
  bool ended_ = false;
  size_t width_ = 0;  // of the line drawn last, to blank what a shorter one leaves
};

}  // namespace conveyor::ctl

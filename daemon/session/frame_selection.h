// Which decoded frames a session encodes (JobSpec's start_seconds, end_seconds,
// duration_seconds and max_frames): a frame is kept, dropped or ends the input, decided
// from its pts alone, so the same rules serve container and raw input.
#pragma once

#include <cstdint>
#include <optional>

namespace conveyor {

// What the job asks for, validated (ParseJobSpec): start >= 0, end > start, max_frames
// >= 0 (0: no limit). duration_seconds arrives here as end = start + duration.
struct SelectionSpec {
  std::optional<double> start_seconds;
  std::optional<double> end_seconds;
  int64_t max_frames = 0;  // with a frame rate, counted by the FrameRateSampler instead
  bool keyframes_only = false;  // carried out by the decoder (AVDISCARD_NONKEY), not here
  // JobSpec.frame_rate (0: none): the kept frames go through a FrameRateSampler.
  int frame_rate_num = 0;
  int frame_rate_den = 0;
  bool sampled() const { return frame_rate_num > 0; }
};

class FrameSelection {
 public:
  enum class Verdict {
    kDrop,  // before start_seconds
    kKeep,
    kStop,  // at or past end_seconds, or max_frames already kept: read no further
  };

  // `time_base_num/den`: of every pts passed in (the stream's time base).
  FrameSelection(const SelectionSpec& spec, int time_base_num, int time_base_den);

  // The next frame in presentation order. After a kKeep that reached max_frames, done()
  // is true: the caller stops without reading another frame.
  Verdict Decide(int64_t pts);
  bool done() const { return done_; }
  int64_t kept() const { return kept_; }

  // Whether a time (an audio packet's, in seconds) lies in [start, end).
  bool Covers(double seconds) const;
  // start_seconds in time-base units, rounded down (where a seek aims); none without a
  // start or at 0.
  std::optional<int64_t> SeekTarget() const;
  // pts in seconds: pts * num / den, rounded once, so that a pts exactly at a decimal
  // start (2.52 s at 1/1000) compares equal to the double the client sent.
  double Seconds(int64_t pts) const;

 private:
  const SelectionSpec spec_;
  const int num_, den_;
  int64_t kept_ = 0;
  bool done_ = false;
};

}  // namespace conveyor

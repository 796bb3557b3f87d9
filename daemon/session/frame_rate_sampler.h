// JobSpec.frame_rate: the selected frames written on a grid of 1/rate steps, as FFmpeg's
// fps filter samples them (libavfilter/vf_fps.c with its defaults, round=near and
// eof_action=round). Each frame's pts is rounded to the nearest grid point; a frame is
// written at every grid point from the next one due up to (not including) its successor's
// rounded pts, so a frame whose successor rounds no later is dropped and one followed by a
// gap is repeated. At the input's end the last frame is written up to the rounded end time
// (its pts plus its duration). The grid counts from the input's time 0.
//
// The sampler sees pts only: the caller holds each frame until the next one (or the end)
// tells how many grid points it covers.
#pragma once

#include <cstdint>

namespace conveyor {

class FrameRateSampler {
 public:
  // Where a frame is written: `count` consecutive grid points from `first` (in units of
  // 1/rate). count 0: the frame is not written.
  struct Span {
    int64_t first = 0;
    int64_t count = 0;
  };

  // rate: frames per second, rate_num / rate_den (both > 0). time_base: of every pts passed
  // in. max_frames: at most this many grid points are written in all (0: no limit).
  FrameRateSampler(int rate_num, int rate_den, int time_base_num, int time_base_den, int64_t max_frames);

  // The next frame in presentation order: returns the span of the frame before it (none
  // for the first frame).
  Span Next(int64_t pts);
  // The input ended at `end_pts` (the last frame's pts plus its duration): the span of the
  // last frame. The sampler takes no more frames after it.
  Span Finish(int64_t end_pts);
  // max_frames grid points are written: the caller reads no further.
  bool done() const { return done_; }
  // A pts on the grid (rounded to the nearest point, halves away from zero).
  int64_t GridPoint(int64_t pts) const;

 private:
  Span Take(int64_t until);

  const int rate_num_, rate_den_, tb_num_, tb_den_;
  const int64_t max_frames_;
  bool have_frame_ = false;
  int64_t next_ = 0;  // the grid point the held frame is written at next
  int64_t written_ = 0;
  bool done_ = false;
};

}  // namespace conveyor

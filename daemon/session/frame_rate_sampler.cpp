// FrameRateSampler (see frame_rate_sampler.h).
#include "frame_rate_sampler.h"

#include <algorithm>

extern "C" {
#include <libavutil/mathematics.h>
}

namespace conveyor {

FrameRateSampler::FrameRateSampler(int rate_num, int rate_den, int time_base_num, int time_base_den,
                                   int64_t max_frames)
    : rate_num_(rate_num > 0 ? rate_num : 1),
      rate_den_(rate_den > 0 ? rate_den : 1),
      tb_num_(time_base_num > 0 ? time_base_num : 1),
      tb_den_(time_base_den > 0 ? time_base_den : 1),
      max_frames_(max_frames) {}

int64_t FrameRateSampler::GridPoint(int64_t pts) const {
  // pts * tb / (1 / rate), rounded as the fps filter's round=near (AV_ROUND_NEAR_INF).
  return av_rescale_q_rnd(pts, AVRational{tb_num_, tb_den_}, AVRational{rate_den_, rate_num_},
                          static_cast<AVRounding>(AV_ROUND_NEAR_INF | AV_ROUND_PASS_MINMAX));
}

FrameRateSampler::Span FrameRateSampler::Take(int64_t until) {
  Span span{next_, 0};
  if (done_ || until <= next_) return span;
  span.count = until - next_;
  if (max_frames_ > 0) span.count = std::min(span.count, max_frames_ - written_);
  next_ += span.count;
  written_ += span.count;
  if (max_frames_ > 0 && written_ >= max_frames_) done_ = true;
  return span;
}

FrameRateSampler::Span FrameRateSampler::Next(int64_t pts) {
  const int64_t point = GridPoint(pts);
  if (!have_frame_) {
    // The grid's first point is the first frame's own, as the fps filter starts.
    have_frame_ = true;
    next_ = point;
    return Span{point, 0};
  }
  return Take(point);
}

FrameRateSampler::Span FrameRateSampler::Finish(int64_t end_pts) {
  if (!have_frame_) return Span{};
  have_frame_ = false;
  Span span = Take(GridPoint(end_pts));
  done_ = true;
  return span;
}

}  // namespace conveyor

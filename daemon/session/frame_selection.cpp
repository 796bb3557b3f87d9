// FrameSelection (see frame_selection.h).
#include "frame_selection.h"

#include <cmath>
#include <limits>

namespace conveyor {

FrameSelection::FrameSelection(const SelectionSpec& spec, int time_base_num, int time_base_den)
    : spec_(spec), num_(time_base_num > 0 ? time_base_num : 1), den_(time_base_den > 0 ? time_base_den : 1) {}

double FrameSelection::Seconds(int64_t pts) const {
  return static_cast<double>(pts) * static_cast<double>(num_) / static_cast<double>(den_);
}

bool FrameSelection::Covers(double seconds) const {
  if (spec_.start_seconds && seconds < *spec_.start_seconds) return false;
  return !spec_.end_seconds || seconds < *spec_.end_seconds;
}

FrameSelection::Verdict FrameSelection::Decide(int64_t pts) {
  if (done_) return Verdict::kStop;
  const double t = Seconds(pts);
  if (spec_.end_seconds && t >= *spec_.end_seconds) {
    done_ = true;
    return Verdict::kStop;
  }
  if (spec_.start_seconds && t < *spec_.start_seconds) return Verdict::kDrop;
  ++kept_;
  if (spec_.max_frames > 0 && !spec_.sampled() && kept_ >= spec_.max_frames) done_ = true;
  return Verdict::kKeep;
}

std::optional<int64_t> FrameSelection::SeekTarget() const {
  if (!spec_.start_seconds || *spec_.start_seconds <= 0) return std::nullopt;
  const double units = std::floor(*spec_.start_seconds * den_ / num_);
  constexpr double kMax = static_cast<double>(std::numeric_limits<int64_t>::max() / 2);
  return static_cast<int64_t>(units < kMax ? units : kMax);
}

}  // namespace conveyor

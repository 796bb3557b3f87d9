// The status line: the span from Started and the selection, the share done, and its text.
#include "progress_line.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace conveyor::ctl {

ProgressSpan SpanOf(const v1::Started& started, const v1::JobSpec& spec) {
  ProgressSpan span;
  const v1::Rational& tb = started.time_base();
  if (tb.num() <= 0 || tb.den() <= 0) return span;
  const double unit = static_cast<double>(tb.num()) / tb.den();
  std::optional<double> source_start, source_end;
  // A header without a start (a raw stream) starts at 0, as FFmpeg's timestamps then do.
  source_start = started.source_start_pts() * unit;
  if (started.source_duration() > 0) source_end = *source_start + started.source_duration() * unit;

  span.start = source_start;
  span.end = source_end;
  if (spec.has_start_seconds()) span.start = std::max(*span.start, spec.start_seconds());
  std::optional<double> until;
  if (spec.has_end_seconds()) until = spec.end_seconds();
  if (spec.has_duration_seconds()) until = *span.start + spec.duration_seconds();
  if (until && (!span.end || *until < *span.end)) span.end = until;

  // Frames: the container's count where nothing is selected by time or sampled; the grid's
  // points where a frame rate samples the span.
  const bool timed = spec.has_start_seconds() || until.has_value();
  const bool sampled = spec.frame_rate().num() > 0 && spec.frame_rate().den() > 0;
  if (sampled && span.end) {
    const double rate = static_cast<double>(spec.frame_rate().num()) / spec.frame_rate().den();
    span.frames = static_cast<uint64_t>(std::llround(std::max(0.0, *span.end - *span.start) * rate));
  } else if (!timed && !sampled && !spec.keyframes_only()) {
    span.frames = started.source_frames();
  }
  if (spec.max_frames() > 0) {
    const auto cap = static_cast<uint64_t>(spec.max_frames());
    // The cap ends the output first where it is below the span's count, or where that is
    // not known.
    if (span.frames == 0 || cap < span.frames) {
      span.frames = cap;
      span.end.reset();  // the span's end is no longer where the output ends
    }
  }
  return span;
}

std::optional<double> ShareDone(const ProgressSpan& span, uint64_t frames, std::optional<double> time_s) {
  if (span.start && span.end && *span.end > *span.start && time_s) {
    return std::clamp((*time_s - *span.start) / (*span.end - *span.start), 0.0, 1.0);
  }
  if (span.frames > 0) return std::min(1.0, static_cast<double>(frames) / span.frames);
  return std::nullopt;
}

std::string FormatProgress(const ProgressSpan& span, uint64_t frames, std::optional<double> time_s,
                           double elapsed_s, bool done) {
  char line[160];
  const double fps = elapsed_s > 0 ? frames / elapsed_s : 0;
  int n = std::snprintf(line, sizeof(line), "frame=%6llu fps=%4.0f ", static_cast<unsigned long long>(frames), fps);
  if (time_s) {
    const double t = std::max(0.0, *time_s);
    const int hours = static_cast<int>(t / 3600);
    const int minutes = static_cast<int>(t / 60) % 60;
    const double seconds = std::fmod(t, 60.0);
    // The speed counts output time from where the output starts, as the CLI's from 0.
    const double covered = *time_s - span.start.value_or(0.0);
    n += std::snprintf(line + n, sizeof(line) - n, "time=%02d:%02d:%05.2f ", hours, minutes, seconds);
    if (elapsed_s > 0) {
      n += std::snprintf(line + n, sizeof(line) - n, "speed=%.3gx", std::max(0.0, covered) / elapsed_s);
    } else {
      n += std::snprintf(line + n, sizeof(line) - n, "speed=N/A");
    }
  } else {
    n += std::snprintf(line + n, sizeof(line) - n, "time=N/A speed=N/A");
  }
  const std::optional<double> share = done ? std::optional<double>(1.0) : ShareDone(span, frames, time_s);
  if (share) {
    // Rounded down, and 99 % at most until the end: a line never says done before it is.
    const double percent = done ? 100.0 : std::min(99.0, std::floor(*share * 100));
    n += std::snprintf(line + n, sizeof(line) - n, " %3.0f%%", percent);
    if (!done && *share > 0 && elapsed_s > 0) {
      const double eta = elapsed_s * (1 - *share) / *share;
      std::snprintf(line + n, sizeof(line) - n, " ETA %d:%02d", static_cast<int>(eta) / 60,
                    static_cast<int>(eta) % 60);
    }
  }
  return line;
}

void ProgressLine::Started(const v1::Started& started, const v1::JobSpec& spec) {
  span_ = SpanOf(started, spec);
  if (started.time_base().num() > 0 && started.time_base().den() > 0) {
    time_base_ = static_cast<double>(started.time_base().num()) / started.time_base().den();
  }
}

void ProgressLine::Frame(int64_t pts) {
  ++frames_;
  pts_ = std::max(pts_.value_or(pts), pts);
}

void ProgressLine::Progress(const v1::Progress& progress) {
  frames_ = std::max<uint64_t>(frames_, progress.frames_out());
  if (progress.frames_out() > 0) pts_ = std::max(pts_.value_or(progress.pts()), progress.pts());
}

void ProgressLine::Finished(const v1::Summary& summary) {
  frames_ = std::max<uint64_t>(frames_, summary.frames_out());
  done_ = true;
}

void ProgressLine::Draw(bool last) {
  const auto now = std::chrono::steady_clock::now();
  // Nothing before Started: it has the line's units, and its own line goes first.
  if (ended_ || time_base_ <= 0 || (!last && now - drawn_ < std::chrono::milliseconds(100))) return;
  ended_ = last;
  drawn_ = now;
  std::optional<double> time_s;
  if (pts_ && time_base_ > 0) time_s = *pts_ * time_base_;
  std::string text =
      FormatProgress(span_, frames_, time_s, std::chrono::duration<double>(now - start_).count(), done_);
  const size_t width = text.size();
  if (text.size() < width_) text.append(width_ - text.size(), ' ');
  width_ = width;
  err_ << "\r" << text << (last ? "\n" : "") << std::flush;
}

}  // namespace conveyor::ctl

// The av_log callback (see ffmpeg_log.h).
#include "ffmpeg_log.h"

#include <cstdarg>
#include <cstring>

#include <spdlog/spdlog.h>

#include "demux_errors.h"

extern "C" {
#include <libavutil/log.h>
}

namespace conveyor {
namespace {

void LogFfmpegLine(void* avcl, int level, const char* fmt, va_list args) {
  const spdlog::level::level_enum ours = level <= AV_LOG_WARNING ? spdlog::level::debug : spdlog::level::trace;
  const bool counted = level <= AV_LOG_ERROR;  // a demuxer's errors count into its session
  if (level > AV_LOG_VERBOSE || (!counted && !spdlog::should_log(ours))) return;
  char line[1024];
  int print_prefix = 1;
  // FFmpeg's own formatting: "[h264 @ 0x...] " and the message; va_list is consumed here.
  if (av_log_format_line2(avcl, level, fmt, args, line, sizeof(line), &print_prefix) < 0) return;
  size_t n = std::strlen(line);
  while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
  if (n == 0) return;
  if (counted) media::NoteDemuxLogLine(avcl, level, line);
  spdlog::log(ours, "ffmpeg: {}", line);
}

}  // namespace

void RouteFfmpegLogToDaemonLog() { av_log_set_callback(&LogFfmpegLine); }

}  // namespace conveyor

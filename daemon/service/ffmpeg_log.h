// FFmpeg's own log lines (av_log), sent to the daemon's log instead of stderr. A damaged
// input makes a decoder log a line per packet, so FFmpeg's errors and warnings go out
// at debug level and its informational lines at trace: the session logs one warning
// for the whole input (decode_errors, truncated), and `--log-level debug` shows the detail.
// A demuxer's error lines also count into its session (media::DemuxErrorCapture).
#pragma once

namespace conveyor {

// Installs the av_log callback for the whole process; call once at start-up.
void RouteFfmpegLogToDaemonLog();

}  // namespace conveyor

// conveyorctl transcode: streams a file (or stdin) to conveyord's Transcode call as
// container bytes or raw frames, and writes what comes back as JPEG files or container
// files. A writer thread sends input while the calling thread reads responses, so a
// slow input never stalls output and gRPC flow control paces the upload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "channel.h"
#include "conveyor/v1/transcoder.pb.h"
#include "interrupt.h"
#include "status.h"

namespace conveyor::ctl {

// The most input bytes one request carries (container chunk or raw frame chunk).
constexpr size_t kChunkBytes = size_t{1} << 20;

struct TranscodeOptions {
  std::string input;                    // a file, or "-" for stdin
  std::string output;                   // see --help: a directory, a file, or "-" for stdout
  std::vector<std::string> renditions;  // WxH[:quality[:subsampling]]; none: the source size
  std::string size;                     // --size WxH: the one rendition's size
  std::string ladder;                   // --renditions WxH,WxH,...: one rendition each
  int quality = 0;                      // --quality: for --size/--renditions; 0: 85
  std::string container;                // "", "mkv", "mov" or "avi" (ResolveOutput: from -o's extension)
  std::string name;                     // --name: the JPEG frames' name pattern (FrameNamer)
  std::string index;                    // --index csv|json: the index of the frames written
  std::string raw;                      // "": container input; else FORMAT:WxH[:FPS]
  std::string format_hint;              // FFmpeg demuxer name for container input
  bool audio = false;                   // copy the first audio stream (container output)
  bool strict = false;                  // ContainerInput.strict: damaged input fails the call
  bool stream_only = false;             // --no-seek: send a file front to back, never seekable
  bool no_faststart = false;            // --no-faststart: a MOV file keeps its moov after mdat
  bool keep_partial = false;            // --keep-partial: a failed call leaves what it wrote
  bool no_autorotate = false;           // --no-autorotate: JobSpec.autorotate = false
  std::string deinterlace = "auto";     // --deinterlace auto|on|off: JobSpec.deinterlace
  std::string decode;                   // --decode auto|gpu|cpu: JobSpec.decode; "": the daemon's
  // Selection, spelt as the ffmpeg CLI's: --ss, --to, -t (ffmpeg's time syntax), --frames
  // (-frames:v), --fps (-vf fps=RATE), --keyframes (-skip_frame nokey). "" / 0 / false:
  // not asked.
  std::string ss, to, duration, fps;
  int64_t frames = 0;
  bool keyframes = false;
  // conveyorctl thumbnails: "CxR", a storyboard of sprites of C x R cells of --size, with
  // its index (thumbnails.vtt) beside them. "": frames.
  std::string tile;
  std::string label;                    // client_label; empty: the input's file name
  bool progress = false;                // Progress lines on stderr
  // A one-line progress bar on stderr (frames, fps, input read, ETA); on by default when
  // stdout is a terminal.
  bool progress_bar = false;
};

// "1280x720", "1280x0:90", "640x360:75:444". 0x0 is the source size; a height of 0, or
// a width alone ("1280"), keeps the aspect ratio. Errors name `flag`, the option the
// text came from.
StatusOr<v1::RenditionSpec> ParseRendition(const std::string& text, const std::string& flag = "--rendition");
// "yuv420p:1920x1080", "rgb24:640x480:30000/1001", "nv12:1280x720:29.97". FPS defaults
// to 25.
StatusOr<v1::RawInput> ParseRawInput(const std::string& text);
// A time as the ffmpeg CLI writes one for -ss, -to and -t: seconds ("12.5", "1500ms",
// "250000us") or [HH:]MM:SS[.frac] ("1:02.5", "00:01:02.5"); never negative.
StatusOr<double> ParseTime(const std::string& text);
// --every for conveyorctl thumbnails: a time (ParseTime) of at least 1 ms, as the frame
// rate of one frame every that long (--fps), exact to the microsecond.
StatusOr<std::string> EveryAsFrameRate(const std::string& every);
// The name of a storyboard's index beside its sprites.
inline constexpr const char* kStoryboardIndexName = "thumbnails.vtt";
// The JobSpec the options ask for, checked as far as the client can.
StatusOr<v1::JobSpec> BuildJobSpec(const TranscodeOptions& options);

// Where output goes. JPEG frames: DIR/<rendition index>-<frame index, 6 digits>.jpg.
// Containers: rendition 0 goes to OUTPUT itself; rendition n > 0 to OUTPUT with ".n"
// before its extension ("out.mkv" → "out.1.mkv"), or with ".n.EXT" appended when OUTPUT
// has no extension ("out" → "out.1.mkv").
std::string JpegFramePath(const std::string& dir, uint32_t rendition, uint64_t frame_index);
std::string ContainerOutputPath(const std::string& output, uint32_t rendition,
                                const std::string& extension);

// Runs the call. Started and Summary go to `out` (to `err` when the output itself is
// stdout), Progress lines to `err`. The error is the call's status, or the local one
// (unreadable input, a partial raw frame, an unwritable output) that ended it, or
// CANCELLED when a signal that `interrupts` watches (none when null) ended it. Output
// files are in place only on success; otherwise they are gone, or with keep_partial
// left under their final names.
Status RunTranscode(const ClientOptions& client, const TranscodeOptions& options, std::ostream& out,
                    std::ostream& err, InterruptWatch* interrupts = nullptr);

}  // namespace conveyor::ctl

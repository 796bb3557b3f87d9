// What conveyorctl's -o names, read as the ffmpeg CLI reads its output argument: a file
// whose extension picks the container (out.mkv, out.mov, out.avi), a directory of JPEG
// frames, or a pattern of the frames' names (frames/%06d.jpg). And the names of the
// frames themselves (--name), with the index file of what was written (--index).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "status.h"

namespace conveyor::ctl {

struct OutputTarget {
  std::string output;     // the container's file, or the JPEG frames' directory
  std::string container;  // "mkv", "mov", "avi"; "" for JPEG frames
  std::string name;       // the frames' name pattern (FrameNamer); "" for the default
};

// `output` (-o), `container` (--container, "" when not given) and `name` (--name) read
// together. --container wins over the extension, as -f does in ffmpeg. A name with a
// pattern in it (% or {) is a directory and a pattern, like ffmpeg's image2 output. An
// extension of a container conveyord cannot write Motion-JPEG into (.mp4) is refused with
// the one to use; an existing directory, or a name with another extension, takes frames.
StatusOr<OutputTarget> ResolveOutput(const std::string& output, const std::string& container,
                                     const std::string& name);

// The file name of each JPEG frame. A pattern holds any of:
//   %d, %0Nd  the frame's number from 1, as ffmpeg's image2 muxer numbers (N: 1..9 digits)
//   {index}   the frame's index from 0, in output order
//   {pts_ms}  its presentation time in whole milliseconds
//   {rendition} the rendition's index
//   %%        a %
// and must tell frames apart: one of %d, {index} or {pts_ms}, and {rendition} when there
// are several renditions. The empty pattern is the default, "R-NNNNNN.jpg" (JpegFramePath).
class FrameNamer {
 public:
  static StatusOr<FrameNamer> Parse(const std::string& pattern, int renditions);
  // `pts_ms`: the frame's pts in milliseconds, rounded to nearest.
  std::string Name(uint32_t rendition, uint64_t index, int64_t pts_ms) const;
  bool empty() const { return parts_.empty(); }  // the default names

 private:
  struct Part {
    enum Kind { kText, kNumber, kIndex, kPtsMs, kRendition } kind = kText;
    std::string text;  // kText
    int width = 0;     // kNumber: zero-padded to this many digits
  };
  std::vector<Part> parts_;
};

// --index: "csv" (frames.csv) or "json" (frames.json) beside the frames, a row each: the
// file, rendition, index, pts (in the output's time base), time in seconds and size.
struct FrameRecord {
  std::string file;  // the name, within the frames' directory
  uint32_t rendition = 0;
  uint64_t index = 0;
  int64_t pts = 0;
  double time_s = 0;
  uint64_t bytes = 0;
};
// The index file's name for `format` ("csv" or "json"), or INVALID_ARGUMENT naming --index.
StatusOr<std::string> IndexFileName(const std::string& format);
// The file's text: CSV with a header row, or a JSON array of objects.
std::string RenderIndex(const std::string& format, const std::vector<FrameRecord>& records);

}  // namespace conveyor::ctl

// Errors a demuxer only logs. libavformat resyncs past damage (a Matroska element that
// overruns its cluster, say) and drops what it skipped, saying so only through av_log.
// A DemuxErrorCapture, alive on the thread that calls into the demuxer, counts the
// error lines that the demuxer (an AVFormatContext) logs there; the process's av_log
// callback hands each line to NoteDemuxLogLine.
#pragma once

#include <cstdint>
#include <string>

namespace conveyor::media {

struct DemuxErrors {
  int64_t count = 0;
  std::string first;  // the first line, "[matroska,webm] Element at 0x9290 ... exceeds ..."
};

// Scopes `errors` to this thread; nested captures restore the outer one.
class DemuxErrorCapture {
 public:
  explicit DemuxErrorCapture(DemuxErrors* errors);
  ~DemuxErrorCapture();
  DemuxErrorCapture(const DemuxErrorCapture&) = delete;
  DemuxErrorCapture& operator=(const DemuxErrorCapture&) = delete;

 private:
  DemuxErrors* const previous_;
};

// From the av_log callback: counts `line` when `avcl` is a format context, `level` is
// AV_LOG_ERROR or worse and a capture is alive on this thread.
void NoteDemuxLogLine(void* avcl, int level, const char* line);

}  // namespace conveyor::media

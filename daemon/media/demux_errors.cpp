// DemuxErrorCapture (see demux_errors.h).
#include "demux_errors.h"

#include <cstring>

extern "C" {
#include <libavutil/log.h>
}

namespace conveyor::media {
namespace {

thread_local DemuxErrors* current = nullptr;

}  // namespace

DemuxErrorCapture::DemuxErrorCapture(DemuxErrors* errors) : previous_(current) { current = errors; }

DemuxErrorCapture::~DemuxErrorCapture() { current = previous_; }

void NoteDemuxLogLine(void* avcl, int level, const char* line) {
  if (current == nullptr || avcl == nullptr || level > AV_LOG_ERROR) return;
  const AVClass* cls = *static_cast<const AVClass* const*>(avcl);
  if (cls == nullptr || cls->class_name == nullptr || std::strcmp(cls->class_name, "AVFormatContext") != 0) return;
  if (current->count++ == 0) current->first = line;
}

}  // namespace conveyor::media

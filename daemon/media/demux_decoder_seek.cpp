// ContainerDecoder's seek to a time (JobSpec.start_seconds): on an input that can seek,
// the demuxer goes to the keyframe before the first frame wanted, and only from there is
// the stream decoded.
#include <string>

#include "demux_decoder.h"

namespace conveyor::media {

Status ContainerDecoder::SeekBefore(int64_t pts) {
  if (!can_seek()) return FailedPrecondition("seek: the input is streamed and cannot seek");
  if (moving_ || held_keyframe_) return FailedPrecondition("seek: a move to the software decoder is under way");
  DemuxErrorCapture capture(&demux_errors_);
  if (options_.random_access.enabled) {
    // From here a seek past the AVIO's buffer is a request to the client, not a read
    // through everything before it (forward_read_bytes still reads short gaps through).
    avio_->seekable = AVIO_SEEKABLE_NORMAL;
  }
  const int err = av_seek_frame(format_.get(), video_.index, pts, AVSEEK_FLAG_BACKWARD);
  if (err < 0) return Failure(err, ("av_seek_frame(" + std::to_string(pts) + ")").c_str());
  AfterSeek();
  return OkStatus();
}

Status ContainerDecoder::SeekToStart() {
  if (!can_seek()) return FailedPrecondition("seek: the input is streamed and cannot seek");
  if (moving_ || held_keyframe_) return FailedPrecondition("seek: a move to the software decoder is under way");
  if ((format_->iformat->flags & AVFMT_NO_BYTE_SEEK) != 0) {
    return FailedPrecondition(std::string("seek: the ") + format_->iformat->name + " demuxer cannot seek by byte");
  }
  DemuxErrorCapture capture(&demux_errors_);
  const int err = av_seek_frame(format_.get(), -1, 0, AVSEEK_FLAG_BYTE);
  if (err < 0) return Failure(err, "av_seek_frame(byte 0)");
  AfterSeek();
  return OkStatus();
}

void ContainerDecoder::AfterSeek() {
  avcodec_flush_buffers(codec_.get());
  sought_ = true;
  draining_ = false;
  finished_ = false;
  last_packet_cut_ = false;
  resync_ = false;
}

}  // namespace conveyor::media

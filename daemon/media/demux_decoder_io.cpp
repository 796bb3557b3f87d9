// ContainerDecoder's AVIOContext callbacks: reads from the ByteQueue (or, after an
// mdat-first MP4, from the spool file), the box scan that spots moov at the end, and
// seeks, which are reads forward, spool reads, or requests to the client for random access.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "demux_decoder.h"

namespace conveyor::media {

int ContainerDecoder::ReadCallback(void* opaque, uint8_t* buf, int size) {
  auto* self = static_cast<ContainerDecoder*>(opaque);
  if (self->spool_) return self->ReadSpooled(buf, size);
  const int n = self->input_->Read(buf, size);
  if (n == AVERROR_EOF && self->options_.random_access.enabled && !self->input_->generation_ended()) {
    // The client half-closed before the end of what the demuxer asked for.
    self->io_failure_ = FailedPrecondition(
        "the client has ended its input (half-close or EndOfInput before Summary) at offset " +
        std::to_string(self->input_->position()) + ", before the end of the input");
    return AVERROR(EIO);
  }
  if (n > 0 && self->scanner_.verdict() == Mp4BoxScanner::Verdict::kScanning) {
    if (self->prefix_kept_) {
      if (self->prefix_.size() + static_cast<size_t>(n) <= kMaxPrefixBytes) {
        self->prefix_.insert(self->prefix_.end(), buf, buf + n);
      } else {
        self->prefix_kept_ = false;
        std::vector<uint8_t>().swap(self->prefix_);
      }
    }
    self->scanner_.Feed(buf, static_cast<size_t>(n));
    if (self->scanner_.verdict() == Mp4BoxScanner::Verdict::kMdatFirst) {
      const int err = self->OnMdatFirst();
      if (err < 0) return err;
    } else if (self->scanner_.verdict() != Mp4BoxScanner::Verdict::kScanning) {
      std::vector<uint8_t>().swap(self->prefix_);
    }
  }
  return n;
}

// The demuxer will skip mdat to find moov, then seek back to mdat's samples.
int ContainerDecoder::OnMdatFirst() {
  if (options_.random_access.enabled) {
    // Let mov skip mdat by seeking (a request for what follows it) rather than reading it.
    avio_->seekable = AVIO_SEEKABLE_NORMAL;
    std::vector<uint8_t>().swap(prefix_);
    return 0;
  }
  if (options_.spool_bytes > 0 && prefix_kept_) {
    StatusOr<std::unique_ptr<InputSpool>> spool = InputSpool::Create(options_.spool_directory, options_.spool_bytes);
    Status s = spool.status();
    if (s.ok()) s = (*spool)->Append(prefix_.data(), prefix_.size());
    if (!s.ok()) {
      io_failure_ = s;
      return AVERROR(EIO);
    }
    // Reading goes on from the spool, whose end is where the input queue stands.
    spool_ = std::move(spool).value();
    spool_pos_ = spool_->bytes();
    std::vector<uint8_t>().swap(prefix_);
    return 0;
  }
  moov_at_end_ = true;
  return AVERROR_INVALIDDATA;  // stop now rather than read all of mdat to fail later
}

// Spooled input: what the demuxer reads before the spool's end comes from the file; past
// it, from the client, appended to the file on the way.
int ContainerDecoder::ReadSpooled(uint8_t* buf, int size) {
  if (spool_pos_ < spool_->bytes()) {
    StatusOr<size_t> n = spool_->ReadAt(spool_pos_, buf, static_cast<size_t>(size));
    if (!n.ok()) {
      io_failure_ = n.status();
      return AVERROR(EIO);
    }
    spool_pos_ += *n;
    return static_cast<int>(*n);
  }
  const int n = input_->Read(buf, size);
  if (n <= 0) return n;
  if (Status s = spool_->Append(buf, static_cast<size_t>(n)); !s.ok()) {
    io_failure_ = s;
    return AVERROR(EIO);
  }
  spool_pos_ += static_cast<uint64_t>(n);
  return n;
}

int64_t ContainerDecoder::SeekSpooled(int64_t offset) {
  uint8_t scratch[64 * 1024];
  while (spool_->bytes() < static_cast<uint64_t>(offset)) {  // forward past what came: read on
    spool_pos_ = spool_->bytes();
    const int want = static_cast<int>(std::min<uint64_t>(sizeof scratch, offset - spool_->bytes()));
    const int n = ReadSpooled(scratch, want);
    if (n == AVERROR_EOF) return AVERROR_EOF;
    if (n < 0) return n;
  }
  spool_pos_ = static_cast<uint64_t>(offset);
  return offset;
}

int64_t ContainerDecoder::SeekByRequest(int64_t offset) {
  const RandomAccess& ra = options_.random_access;
  const uint64_t target = static_cast<uint64_t>(offset);
  if (ra.size > 0 && target > ra.size) {
    io_failure_ = InvalidArgument("the demuxer seeks to offset " + std::to_string(target) +
                                  ", past the end of the input (ContainerInput.size " + std::to_string(ra.size) + ")");
    return AVERROR(EINVAL);
  }
  const uint64_t position = input_->position();
  if (target >= position && target - position <= ra.forward_read_bytes) {
    uint8_t scratch[64 * 1024];
    for (uint64_t left = target - position; left > 0;) {
      const int n = input_->Read(scratch, static_cast<int>(std::min<uint64_t>(sizeof scratch, left)));
      if (n < 0) return n;
      left -= static_cast<uint64_t>(n);
    }
    return offset;
  }
  const std::optional<uint64_t> generation = input_->Reposition(target);
  if (!generation) {
    if (!input_->cancelled()) {
      io_failure_ = FailedPrecondition("the demuxer seeks to offset " + std::to_string(target) +
                                       ", but the client has ended its input (half-close or EndOfInput before "
                                       "Summary)");
    }
    return AVERROR(EPIPE);
  }
  ++seek_requests_;
  ra.request(*generation, target);
  return offset;
}

int64_t ContainerDecoder::Seek(int64_t offset) {
  if (offset < 0) return AVERROR(EINVAL);
  if (spool_) return SeekSpooled(offset);
  if (options_.random_access.enabled) return SeekByRequest(offset);
  return AVERROR(ESPIPE);
}

// libavformat calls this for backward seeks, and for forward ones past its buffer when
// the AVIO is seekable (random access after mdat-first). Without random access or a spool
// nothing is seekable, and the size is unknown (-1 for AVSEEK_SIZE).
int64_t ContainerDecoder::SeekCallback(void* opaque, int64_t offset, int whence) {
  auto* self = static_cast<ContainerDecoder*>(opaque);
  if ((whence & AVSEEK_SIZE) != 0) {
    const uint64_t size = self->options_.random_access.enabled ? self->options_.random_access.size : 0;
    return size > 0 ? static_cast<int64_t>(size) : -1;
  }
  if ((whence & ~AVSEEK_FORCE) != SEEK_SET) return AVERROR(EINVAL);  // libavformat passes SEEK_SET
  return self->Seek(offset);
}

}  // namespace conveyor::media

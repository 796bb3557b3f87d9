// conveyorctl transcode's input side (see transcode_input.h).
#include "transcode_input.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <utility>

#include "frame.h"
#include "transcode_command.h"
#include "transcode_job_spec.h"

namespace conveyor::ctl {
namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

StopSignal::StopSignal() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) == 0) {
    read_ = UniqueFd(fds[0]);
    write_ = UniqueFd(fds[1]);
  }
}

void StopSignal::Raise() {
  stopped_ = true;
  if (write_.valid()) {
    const char c = 1;
    [[maybe_unused]] const ssize_t n = write(write_.get(), &c, 1);
  }
}

StatusOr<std::unique_ptr<InputReader>> InputReader::Open(const std::string& path, StopSignal* stop) {
  if (path == "-")
    return std::unique_ptr<InputReader>(new InputReader(UniqueFd(), STDIN_FILENO, "stdin", stop));
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int e = errno;
    const std::string msg = "cannot open input " + path + ": " + std::strerror(e);
    return e == ENOENT ? NotFound(msg) : FailedPrecondition(msg);
  }
  const int raw = fd.get();
  return std::unique_ptr<InputReader>(new InputReader(std::move(fd), raw, path, stop));
}

StatusOr<size_t> InputReader::ReadSome(char* buf, size_t size) {
  for (;;) {
    pollfd fds[2] = {{fd_, POLLIN, 0}, {stop_->fd(), POLLIN, 0}};
    const int n = poll(fds, stop_->fd() >= 0 ? 2 : 1, -1);
    if (stop_->raised()) return Status(StatusCode::kCancelled, "the call ended");
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal(ErrnoText("poll(" + name_ + ")"));
    }
    const ssize_t got = read(fd_, buf, size);
    if (got >= 0) return static_cast<size_t>(got);
    if (errno == EINTR || errno == EAGAIN) continue;
    return FailedPrecondition(ErrnoText("reading " + name_));
  }
}

StatusOr<size_t> InputReader::ReadFull(char* buf, size_t size) {
  size_t done = 0;
  while (done < size) {
    ASSIGN_OR_RETURN(const size_t got, ReadSome(buf + done, size - done));
    if (got == 0) break;
    done += got;
  }
  return done;
}

std::optional<uint64_t> InputReader::SeekableSize() const {
  struct stat st {};
  if (!owned_.valid() || fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

StatusOr<size_t> InputReader::ReadAt(uint64_t offset, char* buf, size_t size) {
  for (;;) {
    const ssize_t got = pread(fd_, buf, size, static_cast<off_t>(offset));
    if (got >= 0) return static_cast<size_t>(got);
    if (errno == EINTR) continue;
    return FailedPrecondition(ErrnoText("reading " + name_ + " at " + std::to_string(offset)));
  }
}

void ReadRequests::Post(const v1::ReadRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = request;
  }
  cv_.notify_all();
}

void ReadRequests::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool ReadRequests::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

std::optional<v1::ReadRequest> ReadRequests::Take(double wait_s) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [&] { return closed_ || pending_.has_value(); };
  if (wait_s < 0) {
    cv_.wait(lock, ready);
  } else if (wait_s > 0) {
    cv_.wait_for(lock, std::chrono::duration<double>(wait_s), ready);
  }
  std::optional<v1::ReadRequest> r;
  if (!closed_) r.swap(pending_);
  return r;
}

namespace {

// Seekable input: runs of ContainerRange messages, the first from offset 0, each later one
// from where a ReadRequest asks. At the end of the file the writer waits for a request;
// it half-closes once no more can come (the Summary arrived or the call is over).
Status StreamRanges(TranscodeStream* stream, InputReader* in, uint64_t size, std::atomic<uint64_t>* sent,
                    ReadRequests* requests) {
  v1::TranscodeRequest request;
  v1::ContainerRange* range = request.mutable_container_range();
  uint64_t seek_id = 0, offset = 0;
  bool at_end = false;
  for (;;) {
    std::optional<v1::ReadRequest> asked = requests->Take(at_end ? -1 : 0);
    if (requests->closed()) break;
    if (asked) {
      seek_id = asked->seek_id();
      offset = asked->offset();
      at_end = false;
    }
    if (at_end) continue;
    std::string* data = range->mutable_data();
    data->resize(kChunkBytes);
    ASSIGN_OR_RETURN(const size_t got, in->ReadAt(offset, data->data(), kChunkBytes));
    data->resize(got);
    range->set_seek_id(seek_id);
    range->set_offset(offset);
    at_end = got == 0 || offset + got >= size;
    range->set_end_of_input(at_end);
    if (!stream->Write(request)) return OkStatus();
    offset += got;
    *sent += got;
  }
  stream->WritesDone();
  return OkStatus();
}

}  // namespace

Status StreamInput(TranscodeStream* stream, const v1::JobSpec& spec, InputReader* in,
                   std::atomic<uint64_t>* sent, ReadRequests* requests) {
  v1::TranscodeRequest request;
  *request.mutable_spec() = spec;
  if (!stream->Write(request)) return OkStatus();
  if (spec.has_container() && spec.container().seekable()) {
    return StreamRanges(stream, in, spec.container().size(), sent, requests);
  }
  if (spec.has_raw()) {
    const v1::RawInput& raw = spec.raw();
    ASSIGN_OR_RETURN(const PixelFormat format, PixelFormatFromProto(raw.pixel_format()));
    const size_t frame_bytes =
        PackedFrameSize(format, static_cast<int>(raw.width()), static_cast<int>(raw.height()));
    v1::RawFrameChunk* chunk = request.mutable_frame_chunk();
    for (int64_t pts = 0;; ++pts) {
      for (size_t done = 0; done < frame_bytes;) {
        const size_t want = std::min(kChunkBytes, frame_bytes - done);
        std::string* data = chunk->mutable_data();
        data->resize(want);
        ASSIGN_OR_RETURN(const size_t got, in->ReadFull(data->data(), want));
        if (got == 0 && done == 0) {
          stream->WritesDone();
          return OkStatus();
        }
        if (got < want) {
          return InvalidArgument(in->name() + " ends inside frame " + std::to_string(pts) +
                                 ": it has " + std::to_string(done + got) + " of the " +
                                 std::to_string(frame_bytes) + " bytes a " +
                                 PixelFormatName(format) + " " + std::to_string(raw.width()) + "x" +
                                 std::to_string(raw.height()) + " frame takes");
        }
        done += got;
        chunk->set_pts(pts);
        chunk->set_end_of_frame(done == frame_bytes);
        if (!stream->Write(request)) return OkStatus();
        *sent += got;
      }
    }
  }
  std::string* data = request.mutable_container_chunk();
  for (;;) {
    data->resize(kChunkBytes);
    ASSIGN_OR_RETURN(const size_t got, in->ReadSome(data->data(), kChunkBytes));
    if (got == 0) break;
    data->resize(got);
    if (!stream->Write(request)) return OkStatus();
    *sent += got;
  }
  stream->WritesDone();
  return OkStatus();
}

}  // namespace conveyor::ctl

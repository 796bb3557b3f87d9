// conveyorctl transcode: option parsing into a JobSpec, the input writer thread, and the
// response loop that reassembles JPEG frames and container streams into files.
#include "transcode_command.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <thread>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "encode_params.h"
#include "frame.h"
#include "introspect_commands.h"

namespace conveyor::ctl {
namespace {

constexpr size_t kMaxLabelBytes = 128;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) return parts;
    start = pos + 1;
  }
}

bool ParseUint(const std::string& s, uint32_t* out) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// "WxH" with both parts unsigned integers.
bool ParseSize(const std::string& s, uint32_t* w, uint32_t* h) {
  const size_t x = s.find('x');
  return x != std::string::npos && ParseUint(s.substr(0, x), w) && ParseUint(s.substr(x + 1), h);
}

v1::PixelFormat ToProto(PixelFormat f) {
  switch (f) {
    case PixelFormat::kYuv420p: return v1::PIXEL_FORMAT_YUV420P;
    case PixelFormat::kYuvj420p: return v1::PIXEL_FORMAT_YUVJ420P;
    case PixelFormat::kNv12: return v1::PIXEL_FORMAT_NV12;
    case PixelFormat::kYuv422p: return v1::PIXEL_FORMAT_YUV422P;
    case PixelFormat::kYuv444p: return v1::PIXEL_FORMAT_YUV444P;
    case PixelFormat::kRgb24: return v1::PIXEL_FORMAT_RGB24;
    case PixelFormat::kBgr24: return v1::PIXEL_FORMAT_BGR24;
    case PixelFormat::kRgba: return v1::PIXEL_FORMAT_RGBA;
    case PixelFormat::kBgra: return v1::PIXEL_FORMAT_BGRA;
  }
  return v1::PIXEL_FORMAT_UNSPECIFIED;
}

StatusOr<PixelFormat> FromProto(v1::PixelFormat f) {
  for (const PixelFormat k : {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                              PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                              PixelFormat::kBgr24, PixelFormat::kRgba, PixelFormat::kBgra}) {
    if (ToProto(k) == f) return k;
  }
  return InvalidArgument("unspecified pixel format");
}

v1::Subsampling ToProto(Subsampling s) {
  switch (s) {
    case Subsampling::k420: return v1::SUBSAMPLING_420;
    case Subsampling::k422: return v1::SUBSAMPLING_422;
    case Subsampling::k444: return v1::SUBSAMPLING_444;
  }
  return v1::SUBSAMPLING_UNSPECIFIED;
}

struct ContainerKind {
  const char* name;
  v1::ContainerFormat format;
};
constexpr ContainerKind kContainers[] = {
    {"mkv", v1::CONTAINER_FORMAT_MATROSKA},
    {"mov", v1::CONTAINER_FORMAT_MOV},
    {"avi", v1::CONTAINER_FORMAT_AVI},
};

// "29.97" → 2997/100, "30000/1001" as given, "30" → 30/1.
StatusOr<v1::Rational> ParseFrameRate(const std::string& text) {
  v1::Rational r;
  const size_t slash = text.find('/');
  uint32_t num = 0, den = 1;
  if (slash != std::string::npos) {
    if (!ParseUint(text.substr(0, slash), &num) || !ParseUint(text.substr(slash + 1), &den)) {
      return InvalidArgument("frame rate '" + text + "' is not N, N.M or N/D");
    }
  } else {
    const size_t dot = text.find('.');
    std::string digits = text;
    if (dot != std::string::npos) {
      const std::string frac = text.substr(dot + 1);
      if (frac.empty() || frac.size() > 3) {
        return InvalidArgument("frame rate '" + text + "' is not N, N.M or N/D");
      }
      digits = text.substr(0, dot) + frac;
      for (size_t i = 0; i < frac.size(); ++i) den *= 10;
    }
    if (!ParseUint(digits, &num)) {
      return InvalidArgument("frame rate '" + text + "' is not N, N.M or N/D");
    }
  }
  if (num == 0 || den == 0 || num > INT32_MAX || den > INT32_MAX) {
    return InvalidArgument("frame rate '" + text + "' must be positive");
  }
  const uint32_t g = std::gcd(num, den);
  r.set_num(static_cast<int32_t>(num / g));
  r.set_den(static_cast<int32_t>(den / g));
  return r;
}

std::string DefaultLabel(const std::string& input) {
  std::string label =
      input == "-" ? std::string("stdin") : std::filesystem::path(input).filename().string();
  if (label.size() > kMaxLabelBytes) {
    size_t cut = kMaxLabelBytes;
    // Do not split a UTF-8 sequence: back off over continuation bytes.
    while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80) --cut;
    label.resize(cut);
  }
  return label;
}

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// ---- Input ----

// A pipe the response loop writes to when the call is over, so a writer thread waiting
// for stdin (a live pipe) stops instead of waiting for bytes nobody needs.
class StopSignal {
 public:
  StopSignal() {
    if (pipe2(fds_, O_CLOEXEC) != 0) fds_[0] = fds_[1] = -1;
  }
  ~StopSignal() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  void Raise() {
    stopped_ = true;
    if (fds_[1] >= 0) {
      const char c = 1;
      [[maybe_unused]] const ssize_t n = write(fds_[1], &c, 1);
    }
  }
  bool raised() const { return stopped_; }
  int fd() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
  std::atomic<bool> stopped_{false};
};

class InputReader {
 public:
  static StatusOr<std::unique_ptr<InputReader>> Open(const std::string& path, StopSignal* stop) {
    if (path == "-")
      return std::unique_ptr<InputReader>(new InputReader(STDIN_FILENO, false, "stdin", stop));
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      const std::string msg = "cannot open input " + path + ": " + std::strerror(e);
      return e == ENOENT ? NotFound(msg) : FailedPrecondition(msg);
    }
    return std::unique_ptr<InputReader>(new InputReader(fd, true, path, stop));
  }
  ~InputReader() {
    if (owned_) close(fd_);
  }
  InputReader(const InputReader&) = delete;
  InputReader& operator=(const InputReader&) = delete;

  // One read of at most `size` bytes; 0 at end of input. CANCELLED once the stop
  // signal is raised.
  StatusOr<size_t> ReadSome(char* buf, size_t size) {
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
  // Reads until `size` bytes or end of input; returns the count.
  StatusOr<size_t> ReadFull(char* buf, size_t size) {
    size_t done = 0;
    while (done < size) {
      ASSIGN_OR_RETURN(const size_t got, ReadSome(buf + done, size - done));
      if (got == 0) break;
      done += got;
    }
    return done;
  }
  const std::string& name() const { return name_; }

 private:
  InputReader(int fd, bool owned, std::string name, StopSignal* stop)
      : fd_(fd), owned_(owned), name_(std::move(name)), stop_(stop) {}
  int fd_;
  bool owned_;
  std::string name_;
  StopSignal* stop_;
};

using Stream = grpc::ClientReaderWriter<v1::TranscodeRequest, v1::TranscodeResponse>;

// The writer thread's body. Returns OK when the input was sent, or when the call ended
// first (its status says why); an error only for a local failure.
// `sent` counts the input bytes handed to gRPC, for the progress bar.
Status StreamInput(Stream* stream, const v1::JobSpec& spec, InputReader* in, std::atomic<uint64_t>* sent) {
  v1::TranscodeRequest request;
  *request.mutable_spec() = spec;
  if (!stream->Write(request)) return OkStatus();
  if (spec.has_raw()) {
    const v1::RawInput& raw = spec.raw();
    ASSIGN_OR_RETURN(const PixelFormat format, FromProto(raw.pixel_format()));
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

// A one-line progress bar on stderr: frames out, frames/s, the share of the input sent
// and, for a file, an ETA from that share (the daemon buffers a few MiB ahead, so it is
// an estimate). Redrawn at most ten times a second.
class ProgressBar {
 public:
  ProgressBar(std::ostream& err, uint64_t input_total) : err_(err), total_(input_total) {}

  void Update(uint64_t frames, uint64_t sent, bool last = false) {
    const auto now = std::chrono::steady_clock::now();
    if (!last && now - drawn_ < std::chrono::milliseconds(100)) return;
    drawn_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    char line[160];
    int n = std::snprintf(line, sizeof(line), "\r%8llu frames %7.1f fps  %7.1f MiB sent",
                          static_cast<unsigned long long>(frames), elapsed > 0 ? frames / elapsed : 0.0,
                          sent / 1048576.0);
    if (total_ > 0 && n > 0 && static_cast<size_t>(n) < sizeof(line)) {
      const double share = std::min(1.0, static_cast<double>(sent) / total_);
      const double eta = share > 0 ? elapsed * (1 - share) / share : 0;
      n += std::snprintf(line + n, sizeof(line) - n, " (%3.0f%%)  ETA %2d:%02d", share * 100,
                         static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
    }
    err_ << line << (last ? "\n" : "") << std::flush;
  }

 private:
  std::ostream& err_;
  const uint64_t total_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point drawn_{};
};

uint64_t FileSize(const std::string& path) {
  if (path == "-") return 0;
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<uint64_t>(size);
}

// ---- Output ----

Status WriteFile(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return FailedPrecondition(ErrnoText("cannot create " + path));
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    if (!wrote) errno = write_errno;
    return FailedPrecondition(ErrnoText("cannot write " + path));
  }
  return OkStatus();
}

// Collects each rendition's packets until end_of_frame, then writes the JPEG file.
class JpegFrameWriter {
 public:
  JpegFrameWriter(std::string dir, int renditions) : dir_(std::move(dir)), pending_(renditions) {}

  Status Add(const v1::OutputPacket& p) {
    if (p.rendition() >= pending_.size()) {
      return Internal("the server sent a packet for rendition " + std::to_string(p.rendition()) +
                      " of " + std::to_string(pending_.size()));
    }
    Pending& pd = pending_[p.rendition()];
    if (pd.active && pd.frame_index != p.frame_index()) {
      return Internal("the server started frame " + std::to_string(p.frame_index()) +
                      " of rendition " + std::to_string(p.rendition()) + " before frame " +
                      std::to_string(pd.frame_index) + " ended");
    }
    pd.active = true;
    pd.frame_index = p.frame_index();
    pd.data += p.data();
    if (!p.end_of_frame()) return OkStatus();
    const std::string path = JpegFramePath(dir_, p.rendition(), p.frame_index());
    RETURN_IF_ERROR(WriteFile(path, pd.data));
    bytes_ += pd.data.size();
    ++files_;
    pd = Pending{};
    return OkStatus();
  }

  Status Finish() const {
    for (size_t r = 0; r < pending_.size(); ++r) {
      if (pending_[r].active) {
        return Internal("the stream ended inside frame " + std::to_string(pending_[r].frame_index) +
                        " of rendition " + std::to_string(r));
      }
    }
    return OkStatus();
  }

  std::string Describe() const {
    return "wrote " + std::to_string(files_) + " JPEG files (" + FormatBytes(bytes_) + ") to " +
           dir_;
  }

 private:
  struct Pending {
    bool active = false;
    uint64_t frame_index = 0;
    std::string data;
  };
  std::string dir_;
  std::vector<Pending> pending_;
  uint64_t files_ = 0;
  uint64_t bytes_ = 0;
};

// Appends each rendition's container bytes to its file (or stdout), opened at its
// first chunk so a call refused up front leaves no empty files behind.
class ContainerWriter {
 public:
  ContainerWriter(std::string output, std::string extension, int renditions,
                  std::ostream* stdout_stream)
      : output_(std::move(output)),
        extension_(std::move(extension)),
        files_(renditions),
        bytes_(renditions, 0),
        stdout_(stdout_stream) {}
  ~ContainerWriter() {
    for (FILE* f : files_) {
      if (f != nullptr) std::fclose(f);
    }
  }
  ContainerWriter(const ContainerWriter&) = delete;
  ContainerWriter& operator=(const ContainerWriter&) = delete;

  Status Add(const v1::ContainerChunk& c) {
    const uint32_t r = c.rendition();
    if (r >= files_.size()) {
      return Internal("the server sent container bytes for rendition " + std::to_string(r) +
                      " of " + std::to_string(files_.size()));
    }
    bytes_[r] += c.data().size();
    if (output_ == "-") {
      stdout_->write(c.data().data(), static_cast<std::streamsize>(c.data().size()));
      if (!*stdout_) return FailedPrecondition("cannot write to stdout");
      return OkStatus();
    }
    const std::string path = ContainerOutputPath(output_, r, extension_);
    if (files_[r] == nullptr) {
      files_[r] = std::fopen(path.c_str(), "wb");
      if (files_[r] == nullptr) return FailedPrecondition(ErrnoText("cannot create " + path));
    }
    if (std::fwrite(c.data().data(), 1, c.data().size(), files_[r]) != c.data().size()) {
      return FailedPrecondition(ErrnoText("cannot write " + path));
    }
    return OkStatus();
  }

  Status Finish() {
    if (output_ == "-") {
      stdout_->flush();
      return *stdout_ ? OkStatus() : FailedPrecondition("cannot write to stdout");
    }
    for (size_t r = 0; r < files_.size(); ++r) {
      if (files_[r] == nullptr) continue;
      const int rc = std::fclose(files_[r]);
      files_[r] = nullptr;
      if (rc != 0) {
        return FailedPrecondition(
            ErrnoText("cannot write " + ContainerOutputPath(output_, r, extension_)));
      }
    }
    return OkStatus();
  }

  std::string Describe() const {
    std::string out;
    for (size_t r = 0; r < bytes_.size(); ++r) {
      if (!out.empty()) out += "\n";
      out += "wrote " + FormatBytes(bytes_[r]) + " to " +
             (output_ == "-" ? std::string("stdout") : ContainerOutputPath(output_, r, extension_));
    }
    return out;
  }

 private:
  std::string output_;
  std::string extension_;
  std::vector<FILE*> files_;
  std::vector<uint64_t> bytes_;
  std::ostream* stdout_;
};

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f s", s);
  return buf;
}

std::string DescribeStarted(const v1::Started& s) {
  std::string out = "session " + s.session_id() + " on " + s.worker();
  if (!s.backend().empty()) out += " (" + s.backend() + ")";
  out += ": source " + (s.source_codec().empty() ? std::string("?") : s.source_codec()) + " " +
         std::to_string(s.source_width()) + "x" + std::to_string(s.source_height());
  if (s.has_time_base()) {
    out += ", time base " + std::to_string(s.time_base().num()) + "/" +
           std::to_string(s.time_base().den());
  }
  if (s.rotation_degrees() != 0) {
    out += ", rotation " + std::to_string(s.rotation_degrees()) + " degrees";
  }
  return out;
}

std::string DescribeSummary(const v1::Summary& s) {
  std::string out = "done: " + std::to_string(s.frames_in()) + " frames in, " +
                    std::to_string(s.frames_out()) + " out, " + FormatBytes(s.bytes_in()) +
                    " in, " + FormatBytes(s.bytes_out()) + " out, " +
                    FormatSeconds(s.wall_seconds());
  if (s.wall_seconds() > 0) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), " (%.1f fps)", s.frames_out() / s.wall_seconds());
    out += buf;
  }
  if (s.stages_size() > 0) {
    out += "\nstages:";
    for (int i = 0; i < s.stages_size(); ++i) {
      out += (i ? ", " : " ") + s.stages(i).stage() + " " + FormatSeconds(s.stages(i).seconds());
    }
  }
  return out;
}

}  // namespace

StatusOr<v1::RenditionSpec> ParseRendition(const std::string& text) {
  const std::vector<std::string> parts = Split(text, ':');
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--rendition '" + text + "': " + why +
                           " (expected WxH[:quality[:subsampling]], e.g. 1280x720:85:420)");
  };
  if (parts.size() > 3) return bad("too many fields");
  v1::RenditionSpec spec;
  uint32_t w = 0, h = 0;
  if (!ParseSize(parts[0], &w, &h)) return bad("'" + parts[0] + "' is not WxH");
  if (w > kMaxDimension || h > kMaxDimension) {
    return bad("the size is above " + std::to_string(kMaxDimension));
  }
  if (w == 0 && h != 0) return bad("a height needs a width (use Wx0 to keep the aspect ratio)");
  spec.set_width(w);
  spec.set_height(h);
  spec.set_name(parts[0]);
  if (parts.size() >= 2) {
    uint32_t q = 0;
    if (!ParseUint(parts[1], &q) || q < 1 || q > 100) {
      return bad("quality '" + parts[1] + "' is not 1..100");
    }
    spec.set_quality(q);
  }
  if (parts.size() == 3) {
    auto s = ParseSubsampling(parts[2]);
    if (!s.ok()) return bad(s.status().message());
    spec.set_subsampling(ToProto(*s));
  }
  return spec;
}

StatusOr<v1::RawInput> ParseRawInput(const std::string& text) {
  const std::vector<std::string> parts = Split(text, ':');
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--raw '" + text + "': " + why +
                           " (expected FORMAT:WxH[:FPS], e.g. yuv420p:1920x1080:25)");
  };
  if (parts.size() < 2 || parts.size() > 3) return bad("wrong number of fields");
  auto format = ParsePixelFormat(parts[0]);
  if (!format.ok()) return bad(format.status().message());
  uint32_t w = 0, h = 0;
  if (!ParseSize(parts[1], &w, &h)) return bad("'" + parts[1] + "' is not WxH");
  if (w < 1 || h < 1 || w > kMaxDimension || h > kMaxDimension) {
    return bad("the size must be 1..." + std::to_string(kMaxDimension) + " each way");
  }
  v1::RawInput raw;
  raw.set_pixel_format(ToProto(*format));
  raw.set_width(w);
  raw.set_height(h);
  auto rate = ParseFrameRate(parts.size() == 3 ? parts[2] : "25");
  if (!rate.ok()) return bad(rate.status().message());
  *raw.mutable_frame_rate() = *rate;
  return raw;
}

StatusOr<v1::JobSpec> BuildJobSpec(const TranscodeOptions& o) {
  v1::JobSpec spec;
  if (o.input.empty()) return InvalidArgument("no INPUT given (a file, or - for stdin)");
  if (o.output.empty()) return InvalidArgument("no -o OUTPUT given");
  if (!o.raw.empty()) {
    if (!o.format_hint.empty())
      return InvalidArgument("--format-hint is for container input, not --raw");
    if (o.audio) return InvalidArgument("--audio needs container input, not --raw");
    ASSIGN_OR_RETURN(v1::RawInput raw, ParseRawInput(o.raw));
    *spec.mutable_raw() = std::move(raw);
  } else {
    spec.mutable_container()->set_format_hint(o.format_hint);
  }
  if (!o.renditions.empty() && (!o.size.empty() || !o.ladder.empty())) {
    return InvalidArgument("--rendition replaces --size and --renditions; give one or the other");
  }
  if (!o.size.empty() && !o.ladder.empty()) return InvalidArgument("give --size or --renditions, not both");
  if (o.quality < 0 || o.quality > 100) return InvalidArgument("--quality must be 1..100");
  std::vector<std::string> sizes;
  if (!o.size.empty()) sizes.push_back(o.size);
  for (size_t start = 0; !o.ladder.empty() && start <= o.ladder.size();) {
    const size_t comma = o.ladder.find(',', start);
    const std::string item = o.ladder.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) return InvalidArgument("--renditions '" + o.ladder + "': an empty size");
    sizes.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const std::string& size : sizes) {
    if (size.find(':') != std::string::npos) {
      return InvalidArgument("'" + size + "': --size and --renditions take WxH; use --quality for the quality");
    }
    ASSIGN_OR_RETURN(v1::RenditionSpec rendition, ParseRendition(size));
    if (o.quality > 0) rendition.set_quality(o.quality);
    *spec.add_renditions() = std::move(rendition);
  }
  for (const std::string& r : o.renditions) {
    ASSIGN_OR_RETURN(v1::RenditionSpec rendition, ParseRendition(r));
    *spec.add_renditions() = std::move(rendition);
  }
  if (spec.renditions().empty()) {
    spec.add_renditions()->set_quality(o.quality);  // the source size; quality 0 is 85
  }
  if (o.container.empty()) {
    if (o.audio) return InvalidArgument("--audio needs --container output");
    if (o.output == "-") {
      return InvalidArgument("JPEG frames go to a directory: -o - needs --container");
    }
    spec.mutable_output()->mutable_frames();
  } else {
    const ContainerKind* kind = nullptr;
    for (const ContainerKind& k : kContainers) {
      if (o.container == k.name) kind = &k;
    }
    if (kind == nullptr) {
      return InvalidArgument("--container '" + o.container + "': expected mkv, mov or avi");
    }
    if (o.output == "-" && spec.renditions_size() > 1) {
      return InvalidArgument("-o - (stdout) takes one rendition, not " +
                             std::to_string(spec.renditions_size()));
    }
    spec.mutable_output()->mutable_container()->set_format(kind->format);
  }
  spec.set_audio_passthrough(o.audio);
  const std::string label = o.label.empty() ? DefaultLabel(o.input) : o.label;
  if (label.size() > kMaxLabelBytes) {
    return InvalidArgument("--label is " + std::to_string(label.size()) + " bytes; at most " +
                           std::to_string(kMaxLabelBytes));
  }
  spec.set_client_label(label);
  return spec;
}

std::string JpegFramePath(const std::string& dir, uint32_t rendition, uint64_t frame_index) {
  char name[64];
  std::snprintf(name, sizeof(name), "%u-%06llu.jpg", rendition,
                static_cast<unsigned long long>(frame_index));
  return (std::filesystem::path(dir) / name).string();
}

std::string ContainerOutputPath(const std::string& output, uint32_t rendition,
                                const std::string& extension) {
  if (rendition == 0) return output;
  const std::filesystem::path p(output);
  const std::string n = "." + std::to_string(rendition);
  if (p.has_extension() && p.has_stem() && p.stem() != ".") {
    return (p.parent_path() / (p.stem().string() + n + p.extension().string())).string();
  }
  return output + n + "." + extension;
}

Status RunTranscode(const ClientOptions& client, const TranscodeOptions& options, std::ostream& out,
                    std::ostream& err) {
  ASSIGN_OR_RETURN(const v1::JobSpec spec, BuildJobSpec(options));
  const int renditions = spec.renditions_size();
  std::ostream& info = options.output == "-" ? err : out;

  StopSignal stop;
  ASSIGN_OR_RETURN(std::unique_ptr<InputReader> input, InputReader::Open(options.input, &stop));

  std::unique_ptr<JpegFrameWriter> jpeg;
  std::unique_ptr<ContainerWriter> container;
  if (spec.output().has_container()) {
    container =
        std::make_unique<ContainerWriter>(options.output, options.container, renditions, &out);
  } else {
    std::error_code ec;
    std::filesystem::create_directories(options.output, ec);
    if (ec)
      return FailedPrecondition("cannot create output directory " + options.output + ": " +
                                ec.message());
    jpeg = std::make_unique<JpegFrameWriter>(options.output, renditions);
  }

  auto stub = v1::Transcoder::NewStub(MakeChannel(client));
  grpc::ClientContext context;
  PrepareCall(&context, client);
  std::unique_ptr<Stream> stream = stub->Transcode(&context);

  std::atomic<uint64_t> sent{0};
  std::unique_ptr<ProgressBar> bar;
  if (options.progress_bar) bar = std::make_unique<ProgressBar>(err, FileSize(options.input));
  uint64_t frames_out = 0;

  Status writer_status;
  std::thread writer([&] {
    writer_status = StreamInput(stream.get(), spec, input.get(), &sent);
    // Stopped because the call was over: its status, not this, is the result.
    if (writer_status.code() == StatusCode::kCancelled && stop.raised()) writer_status = OkStatus();
    if (!writer_status.ok()) context.TryCancel();
  });

  Status local;  // the first local failure while handling responses
  v1::TranscodeResponse response;
  while (stream->Read(&response)) {
    if (!local.ok()) continue;  // cancelled; drain what is already here
    switch (response.message_case()) {
      case v1::TranscodeResponse::kStarted:
        info << DescribeStarted(response.started()) << "\n" << std::flush;
        break;
      case v1::TranscodeResponse::kPacket:
        local = jpeg ? jpeg->Add(response.packet())
                     : Internal("the server sent JPEG packets for container output");
        if (response.packet().rendition() == 0 && response.packet().end_of_frame()) ++frames_out;
        break;
      case v1::TranscodeResponse::kContainerChunk:
        local = container ? container->Add(response.container_chunk())
                          : Internal("the server sent container bytes for JPEG frame output");
        break;
      case v1::TranscodeResponse::kProgress:
        frames_out = std::max<uint64_t>(frames_out, response.progress().frames_out());
        if (options.progress) {
          const v1::Progress& p = response.progress();
          char buf[128];
          std::snprintf(buf, sizeof(buf), "progress: %llu frames in, %llu out, %.1f fps\n",
                        static_cast<unsigned long long>(p.frames_in()),
                        static_cast<unsigned long long>(p.frames_out()), p.fps());
          err << buf << std::flush;
        }
        break;
      case v1::TranscodeResponse::kSummary:
        frames_out = std::max<uint64_t>(frames_out, response.summary().frames_out());
        if (bar) bar->Update(frames_out, sent.load(), true);
        bar.reset();
        info << DescribeSummary(response.summary()) << "\n" << std::flush;
        break;
      default: break;  // a newer server's message this client does not know
    }
    if (bar) bar->Update(frames_out, sent.load());
    if (!local.ok()) context.TryCancel();
  }
  if (bar) bar->Update(frames_out, sent.load(), true);
  stop.Raise();
  writer.join();
  const grpc::Status rpc = stream->Finish();

  if (!local.ok()) return local;
  if (!writer_status.ok()) return writer_status;
  if (!rpc.ok()) return RpcError(rpc, client);
  if (jpeg) {
    RETURN_IF_ERROR(jpeg->Finish());
    info << jpeg->Describe() << "\n";
  } else {
    RETURN_IF_ERROR(container->Finish());
    info << container->Describe() << "\n";
  }
  return OkStatus();
}

}  // namespace conveyor::ctl

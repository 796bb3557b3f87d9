// conveyorctl transcode's output side (see transcode_output.h), and the output paths.
#include "transcode_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <tuple>
#include <vector>

#include "introspect_commands.h"
#include "transcode_command.h"

namespace conveyor::ctl {
namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// A new hidden file beside `path` (".NAME.PID.N.part"), made with the mode a plain
// fopen would give: 0666 less the umask.
StatusOr<std::pair<FILE*, std::string>> CreateTemporaryBeside(const std::string& path) {
  const std::filesystem::path p(path);
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const std::string name = "." + p.filename().string() + "." + std::to_string(getpid()) + "." +
                             std::to_string(counter++) + ".part";
    const std::string temp = (p.parent_path() / name).string();
    // Read too: a faststart MOV's moov is inserted by moving the bytes already written.
    const int fd = open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST) continue;
    if (fd < 0) return FailedPrecondition(ErrnoText("cannot create " + path + " (as " + temp + ")"));
    FILE* f = fdopen(fd, "w+b");
    if (f == nullptr) {
      const int saved = errno;
      close(fd);
      unlink(temp.c_str());
      errno = saved;
      return FailedPrecondition(ErrnoText("cannot create " + path));
    }
    return std::make_pair(f, temp);
  }
  return FailedPrecondition("cannot create " + path + ": no free temporary name beside it");
}

// Makes room for `size` bytes at `offset` of a file that ends at `end`: the bytes from
// offset to the end move on by size, copied from the end backwards so that nothing is
// overwritten before it is read.
Status MoveOn(int fd, uint64_t offset, uint64_t end, uint64_t size, const std::string& path) {
  std::vector<char> block(std::min<uint64_t>(end - offset, 4 << 20));
  for (uint64_t at = end; at > offset;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(at - offset, block.size()));
    at -= n;
    if (pread(fd, block.data(), n, static_cast<off_t>(at)) != static_cast<ssize_t>(n)) {
      return FailedPrecondition(ErrnoText("cannot read back " + path));
    }
    if (pwrite(fd, block.data(), n, static_cast<off_t>(at + size)) != static_cast<ssize_t>(n)) {
      return FailedPrecondition(ErrnoText("cannot write " + path));
    }
  }
  return OkStatus();
}

Status Rename(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) return FailedPrecondition(ErrnoText("cannot rename " + from + " to " + to));
  return OkStatus();
}

// Writes `bytes` to `path` through a temporary file renamed over it.
Status WriteFile(const std::string& path, const std::string& bytes) {
  ASSIGN_OR_RETURN(auto created, CreateTemporaryBeside(path));
  auto [f, temp] = created;
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    unlink(temp.c_str());
    if (!wrote) errno = write_errno;
    return FailedPrecondition(ErrnoText("cannot write " + path));
  }
  Status renamed = Rename(temp, path);
  if (!renamed.ok()) unlink(temp.c_str());
  return renamed;
}

}  // namespace

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

Status JpegFrameWriter::Add(const v1::OutputPacket& p) {
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
  if (!pd.active) pd.pts = p.pts();  // a frame's pts comes with its first packet
  pd.active = true;
  pd.frame_index = p.frame_index();
  pd.data += p.data();
  if (!p.end_of_frame()) return OkStatus();
  RETURN_IF_ERROR(MakeDirectory());
  FrameRecord r;
  r.rendition = p.rendition();
  r.index = pd.frame_index;
  r.pts = pd.pts;
  r.time_s = time_base_.den() > 0 ? static_cast<double>(pd.pts) * time_base_.num() / time_base_.den() : 0;
  r.bytes = pd.data.size();
  const std::string path = namer_.empty() ? JpegFramePath(dir_, r.rendition, r.index)
                                          : (std::filesystem::path(dir_) /
                                             namer_.Name(r.rendition, r.index, std::llround(r.time_s * 1000)))
                                                .string();
  r.file = std::filesystem::path(path).filename().string();
  if (!names_.insert(r.file).second) {
    return InvalidArgument("--name: frame " + std::to_string(r.index) + " of rendition " +
                           std::to_string(r.rendition) + " gets the name " + r.file +
                           " that an earlier frame has (two frames at the same millisecond?)");
  }
  RETURN_IF_ERROR(WriteFile(path, pd.data));
  written_.push_back(path);
  bytes_ += pd.data.size();
  if (!index_format_.empty()) records_.push_back(std::move(r));
  pd = Pending{};
  return OkStatus();
}

Status JpegFrameWriter::AddFile(const std::string& name, const std::string& bytes) {
  if (!names_.insert(name).second) return InvalidArgument("a frame is named " + name + ", as the file beside them");
  RETURN_IF_ERROR(MakeDirectory());
  const std::string path = (std::filesystem::path(dir_) / name).string();
  RETURN_IF_ERROR(WriteFile(path, bytes));
  written_.push_back(path);
  extra_names_.push_back(name);
  return OkStatus();
}

Status JpegFrameWriter::WriteIndex() {
  if (index_format_.empty()) return OkStatus();
  ASSIGN_OR_RETURN(const std::string name, IndexFileName(index_format_));
  return WriteFile((std::filesystem::path(dir_) / name).string(), RenderIndex(index_format_, records_));
}

Status JpegFrameWriter::MakeDirectory() {
  if (have_dir_) return OkStatus();
  std::error_code ec;
  made_dir_ = std::filesystem::create_directories(dir_, ec);
  if (ec) return FailedPrecondition("cannot create output directory " + dir_ + ": " + ec.message());
  have_dir_ = true;
  return OkStatus();
}

Status JpegFrameWriter::Finish() {
  for (size_t r = 0; r < pending_.size(); ++r) {
    if (pending_[r].active) {
      return Internal("the stream ended inside frame " + std::to_string(pending_[r].frame_index) +
                      " of rendition " + std::to_string(r));
    }
  }
  RETURN_IF_ERROR(MakeDirectory());  // a job of no frames still leaves its directory
  RETURN_IF_ERROR(WriteIndex());
  finished_ = true;
  return OkStatus();
}

JpegFrameWriter::~JpegFrameWriter() {
  if (finished_) return;
  if (keep_partial_) {
    if (have_dir_) (void)WriteIndex();  // the index of what is left
    return;
  }
  for (const std::string& path : written_) unlink(path.c_str());
  std::error_code ec;
  if (made_dir_) std::filesystem::remove(dir_, ec);  // only when empty: not another's files
}

std::string JpegFrameWriter::Describe() const {
  std::string also;
  for (const std::string& name : extra_names_) also += " and " + name;
  return "wrote " + std::to_string(written_.size() - extra_names_.size()) + " JPEG files (" + FormatBytes(bytes_) +
         ")" + also + " to " + dir_;
}

ContainerWriter::~ContainerWriter() {
  if (finished_) return;
  for (size_t r = 0; r < files_.size(); ++r) {
    if (files_[r] != nullptr) std::fclose(files_[r]);
    if (temp_paths_[r].empty()) continue;
    if (keep_partial_) {
      (void)std::rename(temp_paths_[r].c_str(), ContainerOutputPath(output_, r, extension_).c_str());
    } else {
      unlink(temp_paths_[r].c_str());
    }
  }
}

Status ContainerWriter::Add(const v1::ContainerChunk& c) {
  const uint32_t r = c.rendition();
  if (r >= files_.size()) {
    return Internal("the server sent container bytes for rendition " + std::to_string(r) +
                    " of " + std::to_string(files_.size()));
  }
  if (output_ == "-") {
    // Live output to a stream: each chunk follows the last.
    if (c.offset() != bytes_[r]) {
      return Internal("the server sent bytes for offset " + std::to_string(c.offset()) + " of a stream at " +
                      std::to_string(bytes_[r]));
    }
    bytes_[r] += c.data().size();
    errno = 0;
    stdout_->write(c.data().data(), static_cast<std::streamsize>(c.data().size()));
    if (!*stdout_) return FailedPrecondition(errno != 0 ? ErrnoText("cannot write to stdout") : "cannot write to stdout");
    return OkStatus();
  }
  const std::string path = ContainerOutputPath(output_, r, extension_);
  if (files_[r] == nullptr) {
    ASSIGN_OR_RETURN(auto created, CreateTemporaryBeside(path));
    std::tie(files_[r], temp_paths_[r]) = created;
  }
  // Seekable output: the muxer goes back to finish its header and index.
  if (c.offset() > ends_[r]) {
    return Internal("the server sent bytes for offset " + std::to_string(c.offset()) + " past the end (" +
                    std::to_string(ends_[r]) + ") of " + path);
  }
  if (c.insert()) {
    // faststart: the moov goes in front of what is there (ContainerChunk.insert).
    if (std::fflush(files_[r]) != 0) return FailedPrecondition(ErrnoText("cannot write " + path));
    RETURN_IF_ERROR(MoveOn(fileno(files_[r]), c.offset(), ends_[r], c.data().size(), path));
    ends_[r] += c.data().size();
    positions_[r] = ends_[r] + 1;  // the FILE's own position is stale: seek before the next write
  }
  if (c.offset() != positions_[r] && fseeko(files_[r], static_cast<off_t>(c.offset()), SEEK_SET) != 0) {
    return FailedPrecondition(ErrnoText("cannot seek in " + path));
  }
  if (std::fwrite(c.data().data(), 1, c.data().size(), files_[r]) != c.data().size()) {
    return FailedPrecondition(ErrnoText("cannot write " + path));
  }
  positions_[r] = c.offset() + c.data().size();
  ends_[r] = std::max(ends_[r], positions_[r]);
  bytes_[r] = ends_[r];
  return OkStatus();
}

Status ContainerWriter::Finish() {
  if (output_ == "-") {
    stdout_->flush();
    return *stdout_ ? OkStatus() : FailedPrecondition("cannot write to stdout");
  }
  // Every file closed first: one that cannot be written leaves all renditions to the
  // destructor, which deletes them (or keeps them with keep_partial).
  Status closed;
  for (size_t r = 0; r < files_.size(); ++r) {
    if (files_[r] == nullptr) continue;
    const int rc = std::fclose(files_[r]);
    files_[r] = nullptr;
    if (rc != 0 && closed.ok()) {
      closed = FailedPrecondition(ErrnoText("cannot write " + ContainerOutputPath(output_, r, extension_)));
    }
  }
  RETURN_IF_ERROR(closed);
  // A rendition that cannot be renamed leaves its temporary file, and those after it, to
  // the destructor as a failed call's.
  for (size_t r = 0; r < files_.size(); ++r) {
    if (temp_paths_[r].empty()) continue;
    RETURN_IF_ERROR(Rename(temp_paths_[r], ContainerOutputPath(output_, r, extension_)));
    temp_paths_[r].clear();
  }
  finished_ = true;
  return OkStatus();
}

std::string ContainerWriter::Describe() const {
  std::string out;
  for (size_t r = 0; r < bytes_.size(); ++r) {
    if (!out.empty()) out += "\n";
    out += "wrote " + FormatBytes(bytes_[r]) + " to " +
           (output_ == "-" ? std::string("stdout") : ContainerOutputPath(output_, r, extension_));
  }
  return out;
}

}  // namespace conveyor::ctl

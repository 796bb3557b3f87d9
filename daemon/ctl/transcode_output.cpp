// conveyorctl transcode's output side (see transcode_output.h), and the output paths.
#include "transcode_output.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "introspect_commands.h"
#include "transcode_command.h"

namespace conveyor::ctl {
namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

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

Status JpegFrameWriter::Finish() const {
  for (size_t r = 0; r < pending_.size(); ++r) {
    if (pending_[r].active) {
      return Internal("the stream ended inside frame " + std::to_string(pending_[r].frame_index) +
                      " of rendition " + std::to_string(r));
    }
  }
  return OkStatus();
}

std::string JpegFrameWriter::Describe() const {
  return "wrote " + std::to_string(files_) + " JPEG files (" + FormatBytes(bytes_) + ") to " +
         dir_;
}

ContainerWriter::~ContainerWriter() {
  for (FILE* f : files_) {
    if (f != nullptr) std::fclose(f);
  }
}

Status ContainerWriter::Add(const v1::ContainerChunk& c) {
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

Status ContainerWriter::Finish() {
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

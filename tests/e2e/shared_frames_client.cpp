// The client's side of shared-memory raw input (see shared_frames_client.h).
#include "shared_frames_client.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace conveyor::e2e {

std::unique_ptr<SharedFrameSlots> SharedFrameSlots::Create(uint32_t slots, size_t slot_bytes, std::string* error,
                                                           bool seal) {
  const size_t length = static_cast<size_t>(slots) * slot_bytes;
  const int fd = memfd_create("conveyor-frames", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    *error = std::string("memfd_create: ") + std::strerror(errno);
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(length)) != 0 ||
      (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL) != 0)) {
    *error = std::string("ftruncate or F_ADD_SEALS: ") + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = std::string("mmap: ") + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<SharedFrameSlots>(
      new SharedFrameSlots(fd, static_cast<uint8_t*>(base), length, slot_bytes));
}

SharedFrameSlots::~SharedFrameSlots() {
  munmap(base_, length_);
  close(fd_);
}

std::unique_ptr<SharedJpegSlotsView> SharedJpegSlotsView::Map(int fd, uint32_t slots, uint64_t slot_bytes,
                                                              std::string* error) {
  const size_t length = static_cast<size_t>(slots) * slot_bytes;
  void* base = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    *error = std::string("mmap: ") + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<SharedJpegSlotsView>(
      new SharedJpegSlotsView(fd, static_cast<const uint8_t*>(base), length, slot_bytes));
}

SharedJpegSlotsView::~SharedJpegSlotsView() {
  munmap(const_cast<uint8_t*>(base_), length_);
  close(fd_);
}

std::vector<uint8_t> SharedJpegSlotsView::Read(const v1::SharedJpeg& jpeg) const {
  const uint64_t start = static_cast<uint64_t>(jpeg.slot()) * slot_bytes_;
  if (jpeg.size() > slot_bytes_ || start + jpeg.size() > length_) return {};
  return std::vector<uint8_t>(base_ + start, base_ + start + jpeg.size());
}

void SharedSlotTracker::OnResponse(const v1::TranscodeResponse& r) {
  std::lock_guard<std::mutex> lock(mu_);
  if (r.has_started()) started_ = r.started();
  if (r.has_packet() && r.packet().has_shared()) filled_.push_back(r.packet().shared().slot());
  if (r.has_started() && r.started().has_shared_memory()) {
    shm_ = r.started().shared_memory();
    for (uint32_t i = 0; i < shm_->slots(); ++i) free_.insert(i);
  }
  if (r.has_slot_released()) {
    free_.insert(r.slot_released().slot());
    ++released_;
  }
  cv_.notify_all();
}

void SharedSlotTracker::End() {
  std::lock_guard<std::mutex> lock(mu_);
  ended_ = true;
  cv_.notify_all();
}

std::optional<v1::SharedMemoryInput> SharedSlotTracker::WaitStarted(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return shm_.has_value() || ended_; });
  return shm_;
}

std::optional<v1::Started> SharedSlotTracker::WaitStartedMessage(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return started_.has_value() || ended_; });
  return started_;
}

std::vector<uint32_t> SharedSlotTracker::TakeFilledOutputSlots(size_t at_least, double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return filled_.size() >= at_least || ended_; });
  std::vector<uint32_t> out;
  out.swap(filled_);
  return out;
}

int SharedSlotTracker::TakeFreeSlot(double timeout_s) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return !free_.empty() || ended_; });
  if (free_.empty()) return -1;
  const uint32_t slot = *free_.begin();
  free_.erase(free_.begin());
  return static_cast<int>(slot);
}

int SharedSlotTracker::released() const {
  std::lock_guard<std::mutex> lock(mu_);
  return released_;
}

std::string AttachSharedFrames(const std::string& socket_path, const std::string& key, int fd, int* received) {
  if (received != nullptr) *received = -1;
  const int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return std::string("CLIENT socket: ") + std::strerror(errno);
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (socket_path.size() + 1 > sizeof(sa.sun_path)) {
    close(s);
    return "CLIENT socket path too long";
  }
  std::memcpy(sa.sun_path, socket_path.c_str(), socket_path.size() + 1);
  if (connect(s, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    const std::string e = std::string("CLIENT connect ") + socket_path + ": " + std::strerror(errno);
    close(s);
    return e;
  }
  iovec io{const_cast<char*>(key.data()), key.size()};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  if (sendmsg(s, &msg, MSG_NOSIGNAL) < 0) {
    const std::string e = std::string("CLIENT sendmsg: ") + std::strerror(errno);
    close(s);
    return e;
  }
  // The first read takes the descriptor that may come with the answer; read() would
  // drop it.
  std::string answer;
  char buffer[256];
  alignas(cmsghdr) char answer_control[CMSG_SPACE(sizeof(int))];
  iovec answer_io{buffer, sizeof(buffer)};
  msghdr answer_msg{};
  answer_msg.msg_iov = &answer_io;
  answer_msg.msg_iovlen = 1;
  answer_msg.msg_control = answer_control;
  answer_msg.msg_controllen = sizeof(answer_control);
  ssize_t n = recvmsg(s, &answer_msg, MSG_CMSG_CLOEXEC);
  for (cmsghdr* c = CMSG_FIRSTHDR(&answer_msg); n >= 0 && c != nullptr; c = CMSG_NXTHDR(&answer_msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS || c->cmsg_len < CMSG_LEN(sizeof(int))) continue;
    int got;
    std::memcpy(&got, CMSG_DATA(c), sizeof(int));
    if (received != nullptr && *received < 0) {
      *received = got;
    } else {
      close(got);
    }
  }
  while (n > 0) {
    answer.append(buffer, static_cast<size_t>(n));
    if (answer.find('\n') != std::string::npos) break;
    n = read(s, buffer, sizeof(buffer));
  }
  close(s);
  return answer.substr(0, answer.find('\n'));
}

}  // namespace conveyor::e2e

// Test helpers for the systemd and signal tests (see service_test_util.h).
#include "service_test_util.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <httplib.h>

#include "synthetic_frame.h"

namespace conveyor::service_test {
namespace {

bool FillAddress(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr->sun_path)) return false;
  std::memcpy(addr->sun_path, path.c_str(), path.size() + 1);
  return true;
}

}  // namespace

NotifySocket::NotifySocket(const std::string& path, std::function<void(const std::string&)> on_message)
    : on_message_(std::move(on_message)) {
  sockaddr_un addr;
  if (!FillAddress(path, &addr)) return;
  fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd_);
    fd_ = -1;
    return;
  }
  thread_ = std::thread([this] { Receive(); });
}

NotifySocket::~NotifySocket() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) close(fd_);
}

void NotifySocket::Receive() {
  char buf[4096];
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) continue;
    const auto at = std::chrono::steady_clock::now();
    const std::string text(buf, static_cast<size_t>(n));
    if (on_message_) on_message_(text);
    {
      std::lock_guard<std::mutex> lock(mu_);
      messages_.push_back({at, text});
    }
    arrived_.notify_all();
  }
}

std::vector<NotifySocket::Message> NotifySocket::messages() const {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_;
}

bool NotifySocket::WaitFor(const std::string& text, double timeout_s) const {
  std::unique_lock<std::mutex> lock(mu_);
  return arrived_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] {
    for (const Message& m : messages_) {
      if (m.text.find(text) != std::string::npos) return true;
    }
    return false;
  });
}

NotifyEnvironment::NotifyEnvironment(const std::string& socket_path, const std::string& watchdog_usec) {
  setenv("NOTIFY_SOCKET", socket_path.c_str(), 1);
  if (!watchdog_usec.empty()) setenv("WATCHDOG_USEC", watchdog_usec.c_str(), 1);
  unsetenv("WATCHDOG_PID");  // the child's pid is not known before the fork
}

NotifyEnvironment::~NotifyEnvironment() {
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
}

std::vector<NotifySocket::Message> MessagesWith(const NotifySocket& socket, const std::string& text) {
  std::vector<NotifySocket::Message> out;
  for (NotifySocket::Message& m : socket.messages()) {
    if (m.text.find(text) != std::string::npos) out.push_back(std::move(m));
  }
  return out;
}

std::string NotifyValue(const std::string& message, const std::string& name) {
  std::istringstream in(message);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "=", 0) == 0) return line.substr(name.size() + 1);
  }
  return "";
}

bool ExitedWithin(pid_t pid, double timeout_s) {
  const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
  return WaitUntil(
      [&] {
        // "PID (comm) STATE ...": the state follows the last ')'.
        const std::string text = ReadText(stat);
        const size_t paren = text.rfind(')');
        return text.empty() || (paren != std::string::npos && text.size() > paren + 2 && text[paren + 2] == 'Z');
      },
      timeout_s);
}

bool CanConnectUnix(const std::string& path) {
  sockaddr_un addr;
  if (!FillAddress(path, &addr)) return false;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

double ScrapeSample(int port, const std::string& series) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  auto r = client.Get("/metrics");
  if (!r || r->status != 200) return std::nan("");
  const std::string key = "\n" + series + " ";
  const size_t at = ("\n" + r->body).find(key);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(r->body.c_str() + at + key.size() - 1, nullptr);
}

const char* const kUnitPath = CONVEYOR_SOURCE_DIR "/deploy/systemd/conveyord.service";

std::map<std::string, std::string> ServiceKeys(const std::string& unit) {
  std::map<std::string, std::string> keys;
  std::istringstream in(unit);
  std::string section, line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    const size_t eq = line.find('=');
    if (section == "[Service]" && eq != std::string::npos) keys[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return keys;
}

double SpanSeconds(const std::string& text) {
  std::istringstream in(text);
  double total = 0;
  std::string part;
  while (in >> part) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(part, &used);
    } catch (const std::exception&) {
      return -1;
    }
    const std::string unit = part.substr(used);
    if (unit.empty() || unit == "s" || unit == "sec") {
      total += v;
    } else if (unit == "min" || unit == "m") {
      total += v * 60;
    } else {
      return -1;
    }
  }
  return total;
}

v1::JobSpec RawJob(int width, int height) {
  v1::JobSpec spec;
  v1::RawInput* raw = spec.mutable_raw();
  raw->set_pixel_format(v1::PIXEL_FORMAT_RGB24);
  raw->set_width(width);
  raw->set_height(height);
  raw->mutable_frame_rate()->set_num(25);
  raw->mutable_frame_rate()->set_den(1);
  v1::RenditionSpec* r = spec.add_renditions();
  r->set_quality(80);
  return spec;
}

size_t FrameCount(const e2e::TranscodeOutcome& out) {
  auto it = out.frames.find(0);
  return it == out.frames.end() ? 0 : it->second.size();
}

bool GetStatus(v1::Transcoder::Stub* stub, v1::ServerStatus* status) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), status).ok();
}

bool WaitForActiveSessions(v1::Transcoder::Stub* stub, int n, double timeout_s) {
  return WaitUntil(
      [&] {
        v1::ServerStatus st;
        return GetStatus(stub, &st) && static_cast<int>(st.sessions_active()) == n;
      },
      timeout_s);
}

grpc::StatusCode TryOneMoreSession(v1::Transcoder::Stub* stub, double deadline_s) {
  e2e::TranscodeCall call;
  call.spec = RawJob(64, 48);
  call.half_close = false;
  call.deadline_s = deadline_s;
  return e2e::RunTranscode(stub, call).status.error_code();
}

HeldSession::HeldSession(v1::Transcoder::Stub* stub, int width, int height)
    : frame_(testing::MakeSyntheticFrame(width, height, PixelFormat::kRgb24, 11).bytes) {
  e2e::TranscodeCall call;
  call.spec = RawJob(width, height);
  call.deadline_s = 60;
  call.send_input = [this](e2e::TranscodeStream* s) {
    if (!SendRawFrame(s, frame_, 0)) return false;
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return released_; });
    return SendRawFrame(s, frame_, 1);
  };
  thread_ = std::thread([this, stub, call] { outcome_ = e2e::RunTranscode(stub, call); });
}

HeldSession::~HeldSession() {
  Release();
  if (thread_.joinable()) thread_.join();
}

void HeldSession::Release() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
  }
  cv_.notify_all();
}

const e2e::TranscodeOutcome& HeldSession::Join() {
  Release();
  if (thread_.joinable()) thread_.join();
  return outcome_;
}

}  // namespace conveyor::service_test

// Helpers for the systemd and signal tests: a notify socket the test owns (what systemd
// would hold), the daemon's stderr in a file, and Transcode streams of raw frames that
// are held open, paced or counted.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "transcode_client.h"
#include "test_files.h"
#include "test_process.h"

namespace conveyor::service_test {

// A datagram unix socket like the one systemd passes in NOTIFY_SOCKET; a thread records
// every message with the time it arrived.
class NotifySocket {
 public:
  struct Message {
    std::chrono::steady_clock::time_point at;
    std::string text;
  };
  // Binds `path`; `on_message` runs on the receiving thread as each message arrives.
  NotifySocket(const std::string& path, std::function<void(const std::string&)> on_message = nullptr);
  ~NotifySocket();
  bool ok() const { return fd_ >= 0; }
  std::vector<Message> messages() const;
  // Waits until a message containing `text` has arrived.
  bool WaitFor(const std::string& text, double timeout_s) const;

 private:
  void Receive();
  int fd_ = -1;
  std::function<void(const std::string&)> on_message_;
  mutable std::mutex mu_;
  mutable std::condition_variable arrived_;
  std::vector<Message> messages_;
  bool stop_ = false;
  std::thread thread_;
};

// Sets the variables systemd would set for the next child, and takes them away after:
// NOTIFY_SOCKET, and WATCHDOG_USEC unless `watchdog_usec` is empty.
class NotifyEnvironment {
 public:
  explicit NotifyEnvironment(const std::string& socket_path, const std::string& watchdog_usec = "");
  ~NotifyEnvironment();
};

// The messages of `socket` that contain `text`, in the order they came.
std::vector<NotifySocket::Message> MessagesWith(const NotifySocket& socket, const std::string& text);
// The value of the line NAME=value in a notify message, or "" when it has none.
std::string NotifyValue(const std::string& message, const std::string& name);

using conveyor::testing::ReadText;
using conveyor::testing::StderrToFile;
using conveyor::testing::WriteText;

using conveyor::testing::WaitUntil;
// Whether the child `pid` has exited (it is a zombie, not yet reaped) within `timeout_s`;
// it stays unreaped, for DaemonProcess::Stop to collect its exit status.
bool ExitedWithin(pid_t pid, double timeout_s);
// Whether a stream socket connect() to the unix socket `path` succeeds now.
bool CanConnectUnix(const std::string& path);

// The value of `series` (its name and labels as exposed) in a scrape of the metrics
// endpoint on 127.0.0.1:`port`; NaN when the scrape fails or has no such series.
double ScrapeSample(int port, const std::string& series);

// ---- deploy/systemd/conveyord.service ----

extern const char* const kUnitPath;
// The [Service] keys of a unit file (the last value of each).
std::map<std::string, std::string> ServiceKeys(const std::string& unit);
// A systemd time span of the forms the unit uses: "60", "60s", "2min", "1min 30s"; -1 for
// a form not handled here.
double SpanSeconds(const std::string& text);

// ---- Transcode streams of raw RGB frames ----

v1::JobSpec RawJob(int width, int height);
using e2e::SendRawFrame;
// Whole JPEG frames of rendition 0 that came back.
size_t FrameCount(const e2e::TranscodeOutcome& out);
// The daemon's ServerStatus; false when the call fails.
bool GetStatus(v1::Transcoder::Stub* stub, v1::ServerStatus* status);
bool WaitForActiveSessions(v1::Transcoder::Stub* stub, int n, double timeout_s);
// Opens one more stream that sends its spec and nothing else: the code it ends with
// (RESOURCE_EXHAUSTED or UNAVAILABLE when refused, DEADLINE_EXCEEDED when accepted).
grpc::StatusCode TryOneMoreSession(v1::Transcoder::Stub* stub, double deadline_s = 2);

// A stream that sends one frame at once, holds until Release(), then sends a second and
// half-closes. Runs on its own thread.
class HeldSession {
 public:
  HeldSession(v1::Transcoder::Stub* stub, int width, int height);
  ~HeldSession();
  void Release();
  const e2e::TranscodeOutcome& Join();

 private:
  std::vector<uint8_t> frame_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  e2e::TranscodeOutcome outcome_;
  std::thread thread_;
};

}  // namespace conveyor::service_test

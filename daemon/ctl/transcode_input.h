// conveyorctl transcode's input side: the file or stdin it reads, and the writer thread's
// body that sends the JobSpec and then the input as container chunks or raw frame chunks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "status.h"
#include "unique_fd.h"

namespace conveyor::ctl {

using TranscodeStream = grpc::ClientReaderWriter<v1::TranscodeRequest, v1::TranscodeResponse>;

// A pipe the response loop writes to when the call is over, so a writer thread waiting
// for stdin (a live pipe) stops instead of waiting for bytes nobody needs.
class StopSignal {
 public:
  StopSignal();
  void Raise();
  bool raised() const { return stopped_; }
  int fd() const { return read_.get(); }  // -1 when the pipe could not be made

 private:
  UniqueFd read_, write_;
  std::atomic<bool> stopped_{false};
};

// The input: a file, or "-" for stdin (left open when the reader goes).
class InputReader {
 public:
  static StatusOr<std::unique_ptr<InputReader>> Open(const std::string& path, StopSignal* stop);

  // One read of at most `size` bytes; 0 at end of input. CANCELLED once the stop
  // signal is raised.
  StatusOr<size_t> ReadSome(char* buf, size_t size);
  // Reads until `size` bytes or end of input; returns the count.
  StatusOr<size_t> ReadFull(char* buf, size_t size);
  // A regular file's size: it can be read at any offset (ReadAt), so its input is sent
  // seekable. nullopt for stdin, pipes and devices.
  std::optional<uint64_t> SeekableSize() const;
  // Up to `size` bytes at `offset`; 0 at the end.
  StatusOr<size_t> ReadAt(uint64_t offset, char* buf, size_t size);
  const std::string& name() const { return name_; }

 private:
  InputReader(UniqueFd owned, int fd, std::string name, StopSignal* stop)
      : owned_(std::move(owned)), fd_(fd), name_(std::move(name)), stop_(stop) {}
  UniqueFd owned_;  // the opened file; none for stdin
  int fd_;          // what is read: owned_, or STDIN_FILENO
  std::string name_;
  StopSignal* stop_;
};

// The daemon's ReadRequests, from the response loop to the writer thread.
class ReadRequests {
 public:
  void Post(const v1::ReadRequest& request);
  // No more requests: Summary came, or the call is over.
  void Close();
  // The newest request not taken yet, if any; waits up to `wait_s` seconds for one (< 0:
  // until one comes or the mailbox is closed, 0: not at all). None once closed. Only the
  // newest request counts: an older one not yet answered is overtaken, as the daemon drops
  // ranges of an earlier seek_id anyway.
  std::optional<v1::ReadRequest> Take(double wait_s);
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::optional<v1::ReadRequest> pending_;
  bool closed_ = false;
};

// The writer thread's body. Returns OK when the input was sent, or when the call ended
// first (its status says why); an error only for a local failure.
// `sent` counts the input bytes handed to gRPC, for the progress bar. Seekable container
// input (spec.container.seekable) goes as ContainerRange messages from offset 0, each
// ReadRequest in `requests` starting a new run, until `requests` is closed.
Status StreamInput(TranscodeStream* stream, const v1::JobSpec& spec, InputReader* in,
                   std::atomic<uint64_t>* sent, ReadRequests* requests);

}  // namespace conveyor::ctl

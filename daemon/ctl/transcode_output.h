// conveyorctl transcode's output side: the writers that turn the response stream's JPEG
// packets into one file per frame, or its container chunks into one file per rendition
// (or stdout). Paths follow JpegFramePath and ContainerOutputPath (transcode_command.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/v1/transcoder.pb.h"
#include "status.h"

namespace conveyor::ctl {

// Collects each rendition's packets until end_of_frame, then writes the JPEG file.
class JpegFrameWriter {
 public:
  JpegFrameWriter(std::string dir, int renditions) : dir_(std::move(dir)), pending_(renditions) {}

  Status Add(const v1::OutputPacket& p);
  // INTERNAL when the stream ended inside a frame.
  Status Finish() const;
  std::string Describe() const;

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
  ~ContainerWriter();
  ContainerWriter(const ContainerWriter&) = delete;
  ContainerWriter& operator=(const ContainerWriter&) = delete;

  Status Add(const v1::ContainerChunk& c);
  // Flushes stdout or closes the files, reporting a failed write.
  Status Finish();
  std::string Describe() const;

 private:
  std::string output_;
  std::string extension_;
  std::vector<FILE*> files_;  // null until the rendition's first chunk
  std::vector<uint64_t> bytes_;
  std::ostream* stdout_;
};

}  // namespace conveyor::ctl

// conveyorctl transcode's output side: the writers that turn the response stream's JPEG
// packets into one file per frame, or its container chunks into one file per rendition
// (or stdout). Paths follow JpegFramePath and ContainerOutputPath (transcode_command.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "conveyor/v1/transcoder.pb.h"
#include "output_naming.h"
#include "status.h"

namespace conveyor::ctl {

// Collects each rendition's packets until end_of_frame, then writes the JPEG file (to a
// hidden temporary name, renamed into place) under the name `namer` gives it. The
// directory is made at the first frame, so a call the daemon refuses creates nothing. A
// writer destroyed before Finish() (the call failed) removes the frames it wrote, and the
// directory if it made it, unless `keep_partial`. With an `index_format` ("csv", "json")
// the index of the frames written goes beside them (output_naming.h), at Finish() or, with
// `keep_partial`, for what a failed call leaves.
class JpegFrameWriter {
 public:
  JpegFrameWriter(std::string dir, FrameNamer namer, int renditions, bool keep_partial,
                  std::string index_format = "")
      : dir_(std::move(dir)),
        namer_(std::move(namer)),
        pending_(renditions),
        keep_partial_(keep_partial),
        index_format_(std::move(index_format)) {}
  ~JpegFrameWriter();
  JpegFrameWriter(const JpegFrameWriter&) = delete;
  JpegFrameWriter& operator=(const JpegFrameWriter&) = delete;

  // Started.time_base: what OutputPacket.pts counts in.
  void SetTimeBase(const v1::Rational& time_base) { time_base_ = time_base; }
  Status Add(const v1::OutputPacket& p);
  // Another file beside the frames (a storyboard's index), written and removed with them.
  Status AddFile(const std::string& name, const std::string& bytes);
  // INTERNAL when the stream ended inside a frame. OK: the frames are kept.
  Status Finish();
  std::string Describe() const;

 private:
  Status MakeDirectory();
  Status WriteIndex();
  struct Pending {
    bool active = false;
    uint64_t frame_index = 0;
    int64_t pts = 0;
    std::string data;
  };
  std::string dir_;
  FrameNamer namer_;
  std::vector<Pending> pending_;
  const bool keep_partial_;
  const std::string index_format_;
  v1::Rational time_base_;
  std::set<std::string> names_;  // every name given, so that two frames never share one
  std::vector<FrameRecord> records_;
  bool made_dir_ = false;  // this writer created dir_
  bool have_dir_ = false;
  bool finished_ = false;
  std::vector<std::string> written_;
  std::vector<std::string> extra_names_;  // AddFile's, among written_
  uint64_t bytes_ = 0;
};

// Writes each rendition's container bytes, each chunk at its offset, to a hidden temporary
// file beside its output (or appends them to stdout, where only live output can go),
// opened at its first chunk, so a call refused up front creates nothing.
// Finish() renames each into place; a writer destroyed before that (the call failed)
// deletes them, or with `keep_partial` renames what was written into place as the ffmpeg
// CLI leaves it.
class ContainerWriter {
 public:
  ContainerWriter(std::string output, std::string extension, int renditions,
                  std::ostream* stdout_stream, bool keep_partial)
      : output_(std::move(output)),
        extension_(std::move(extension)),
        files_(renditions),
        temp_paths_(renditions),
        bytes_(renditions, 0),
        positions_(renditions, 0),
        ends_(renditions, 0),
        stdout_(stdout_stream),
        keep_partial_(keep_partial) {}
  ~ContainerWriter();
  ContainerWriter(const ContainerWriter&) = delete;
  ContainerWriter& operator=(const ContainerWriter&) = delete;

  Status Add(const v1::ContainerChunk& c);
  // Flushes stdout, or closes the files and renames them into place, reporting a failed
  // write.
  Status Finish();
  std::string Describe() const;

 private:
  std::string output_;
  std::string extension_;
  std::vector<FILE*> files_;  // null until the rendition's first chunk
  std::vector<std::string> temp_paths_;
  std::vector<uint64_t> bytes_;      // each rendition's size so far
  std::vector<uint64_t> positions_;  // where each file's next write goes
  std::vector<uint64_t> ends_;       // each file's size
  std::ostream* stdout_;
  const bool keep_partial_;
  bool finished_ = false;
};

}  // namespace conveyor::ctl

// Shared machinery of the media tests: a per-process scratch directory, the ffmpeg and
// ffprobe CLIs (test media is rendered at test time, never committed), and helpers that
// push a file through a ByteQueue into a ContainerDecoder the way the rpc layer will.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "demux_decoder.h"
#include "status.h"

namespace media_test {

// The per-process scratch directory (mkdtemp), removed by RemoveTempDir() from main.
const std::string& TempDir();
void RemoveTempDir();

// Runs a program (no shell) and returns its stdout; stderr goes to a log whose tail is in
// the error message when it exits non-zero.
conveyor::StatusOr<std::string> RunTool(const std::vector<std::string>& argv);
// /usr/bin/ffmpeg -nostdin -hide_banner -loglevel error -y <args>
conveyor::Status Ffmpeg(const std::vector<std::string>& args);
// /usr/bin/ffprobe -v error <args>, stdout
conveyor::StatusOr<std::string> Ffprobe(const std::vector<std::string>& args);
// Whether `ffmpeg -encoders` lists this encoder.
bool HasEncoder(const std::string& name);

// Renders TempDir()/<name> with `ffmpeg -f lavfi -i <source> [-f lavfi -i <extra>...] <args>`
// (once per process) and returns its path.
conveyor::StatusOr<std::string> MakeMedia(const std::string& name, const std::string& lavfi_source,
                                          const std::vector<std::string>& args,
                                          const std::vector<std::string>& extra_lavfi_inputs = {});
// The lavfi testsrc2 graph at this size, 25 fps.
std::string TestSource(int width = 320, int height = 240);

conveyor::StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path);
conveyor::Status WriteFile(const std::string& path, const std::vector<uint8_t>& data);

// One stream as ffprobe reports it (-show_streams with -count_frames -count_packets):
// key=value pairs such as codec_name, width, nb_read_frames, nb_read_packets.
using ProbedStream = std::map<std::string, std::string>;
conveyor::StatusOr<std::vector<ProbedStream>> ProbeStreams(const std::string& path);
// The top-level boxes of an MP4/MOV as FFmpeg's mov demuxer walks them (ffprobe -v
// trace): their types in file order, such as {"ftyp", "moov", "wide", "mdat"}.
conveyor::StatusOr<std::vector<std::string>> ProbeTopLevelBoxes(const std::string& path);
// The md5 of each packet of every stream, in file order (ffmpeg -c copy -f framemd5).
conveyor::StatusOr<std::vector<std::string>> PacketSums(const std::string& path);
// pts_time of each packet of the first video stream, in file order.
conveyor::StatusOr<std::vector<double>> ProbeVideoPacketTimes(const std::string& path);

struct FrameSummary {
  int64_t pts = 0;
  double seconds = 0;
  int width = 0;
  int height = 0;
  AVPixelFormat format = AV_PIX_FMT_NONE;
  conveyor::media::FrameColor color;
  int rotation_degrees = 0;
};

struct DecodeRun {
  conveyor::Status status;  // of Open, or of the Next() that failed; OK after a clean end
  bool opened = false;
  conveyor::media::VideoStreamInfo video;
  std::string audio_codec;  // empty without an audio stream
  std::vector<FrameSummary> frames;
  int audio_packets = 0;
  size_t queue_peak = 0;
};

struct DecodeSetup {
  conveyor::media::DecoderOptions options;
  size_t chunk_bytes = 4096;       // the producer pushes chunks of this size
  size_t queue_bytes = 64 * 1024;  // ByteQueue capacity
  // Called with every decoded frame; a non-OK status stops the run.
  std::function<conveyor::Status(conveyor::media::ContainerDecoder&, conveyor::media::DecodedFrame&)>
      on_frame;
  // Called after Open with the decoder, e.g. to set an audio sink.
  std::function<conveyor::Status(conveyor::media::ContainerDecoder&)> on_open;
};

// Pushes `data` from a producer thread through a ByteQueue into a ContainerDecoder and
// decodes to the end (or the first error), as the daemon will.
DecodeRun Decode(const std::vector<uint8_t>& data, const DecodeSetup& setup);
DecodeRun DecodeFile(const std::string& path, const DecodeSetup& setup);
// The same with the default setup. Overloads, not default arguments: with `= {}` every
// caller builds and destroys a DecodeSetup, and GCC 12 at -O3 warns there, wrongly, that
// its std::function members may be used uninitialized.
DecodeRun Decode(const std::vector<uint8_t>& data);
DecodeRun DecodeFile(const std::string& path);

}  // namespace media_test

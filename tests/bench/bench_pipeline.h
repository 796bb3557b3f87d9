// `conveyor-bench pipeline`: the worker pipeline in three modes (serial, pipelined with
// progress events off, and on) with the pinned-copy bound measured in the same run.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace conveyor::bench {

struct PipelineBenchOptions {
  std::string input;
  std::string size = "1920x1080";
  std::string format = "yuv420p";
  int quality = 85;
  std::string subsampling = "420";
  int restart = -1;             // restart interval in MCUs; -1 auto, 0 none
  int frames = 600;
  std::string worker = "auto";
  std::string modes = "serial,off,on";
  std::string renditions;       // "1920x1080,1280x720,640x360": a ladder from one upload
  int orientation = 1;          // EXIF 1..8: the turn applied to each frame first (1: none)
  std::string input_memory = "registered";  // or "copied": into the worker's pinned slots
  int slots = 8;
  int band_rows = 0;            // 0: the worker's default
  int encode_streams = 2;
  int delivery_threads = 1;     // per encode stream
  int first_band_blocks = -1;   // -1: the worker's default; 0: band 0 as large as the others
  std::string balance_lanes = "on";  // or "off": frames take the encode streams in plain turn
  int readback_ring_mib = 64;   // the GPU worker's pinned readback ring (0: none)
  int launch_frames = 1;        // most frames of one shape a GPU launch carries
  int stall_every = 0;          // every Nth frame is heavy (0: no stall scenario)
  std::string stall_size = "3840x2160";
  bool stall_streams = false;   // the heavy frames as another session's stream
  int stall_quality = 100;
  double rate = 0;              // frames/s a paced source offers (0: closed loop, as fast as taken)
  std::string times_csv;        // each timed frame's host and GPU times, for diagnosis
  // GPU timing events (engine busy, overlap): "runs" as the daemon times frames (runs of
  // 64 frames, one starting at most every timing_every_ms), "all" frames, or "off".
  std::string stage_timing = "runs";
  int timing_every_ms = 1000;   // the daemon's
};

void AddPipelineCommand(CLI::App& app, PipelineBenchOptions* options, int* exit_code);

}  // namespace conveyor::bench

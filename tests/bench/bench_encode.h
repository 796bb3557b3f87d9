// `conveyor-bench encode`: frames/s of one worker on the same frames, with libjpeg-turbo
// run in the same process as the reference on the CPU worker.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace conveyor::bench {

struct EncodeBenchOptions {
  std::string input;
  std::string size = "1920x1080";
  std::string format = "yuv420p";
  std::string matrix = "bt709";
  int quality = 85;
  std::string subsampling = "420";
  int restart = -1;
  std::string output;      // first frame's JPEG
  std::string output_dir;  // every frame as frame_NNNNN.jpg
  std::string worker = "auto";
  int frames = 100;
  int threads = 0;
};

void AddEncodeCommand(CLI::App& app, EncodeBenchOptions* options, int* exit_code);

}  // namespace conveyor::bench

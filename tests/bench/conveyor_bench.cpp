// conveyor-bench: benchmarks that compare against a reference measured in the same run.
// Each prints a table and ends with one JSON line.
#include <CLI/CLI.hpp>

#include "allocator_tuning.h"
#include "bench_encode.h"
#include "bench_pipeline.h"

int main(int argc, char** argv) {
  conveyor::TuneAllocatorForFrames();  // as conveyord does: see allocator_tuning.h
  CLI::App app{"Conveyor benchmarks"};
  app.require_subcommand(1);
  int exit_code = 0;
  conveyor::bench::EncodeBenchOptions encode;
  conveyor::bench::AddEncodeCommand(app, &encode, &exit_code);
  conveyor::bench::PipelineBenchOptions pipeline;
  conveyor::bench::AddPipelineCommand(app, &pipeline, &exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}

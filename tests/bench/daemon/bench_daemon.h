// A conveyord the daemon benchmarks start for themselves: on a unix socket in a private
// directory, without the host's config file unless one is named, answering
// GetServerStatus before the first timed call.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "conveyor/v1/transcoder.grpc.pb.h"

namespace conveyor::bench {

struct BenchDaemon {
  pid_t pid = -1;
  std::string dir;     // the private directory; removed by StopBenchDaemon
  std::string target;  // unix:DIR/conveyord.sock
  std::unique_ptr<v1::Transcoder::Stub> stub;
  std::string worker;  // the first worker's name, as GetServerStatus gives it
};

// Starts `conveyord` with `daemon_args` after --listen and --log-level warn. False, with
// the reason in `error`, when it exits before it listens (its own log says why).
bool StartBenchDaemon(const std::string& conveyord, const std::vector<std::string>& daemon_args, BenchDaemon* out,
                      std::string* error);
// SIGTERM, wait, and the directory removed.
void StopBenchDaemon(BenchDaemon* daemon);

}  // namespace conveyor::bench

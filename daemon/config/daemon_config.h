// conveyord's options in one struct: each field's default and meaning live here, and
// the config file (conveyord.toml), the command-line flags and the shipped
// deploy/conveyord.toml are read, parsed and generated from the table behind it
// (config_fields.h), so they cannot drift apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "listen_address.h"
#include "status.h"

namespace conveyor::config {

// "0.1.0": the project version CMake was configured with.
const char* ConveyorVersion();

struct DaemonConfig {
  // [server]
  std::vector<ListenAddress> listen;      // empty → DefaultSocketPath() unix socket
  std::string socket_group = "conveyor";  // unix sockets' group when it exists; "" = leave it
  bool allow_insecure_tcp = false;        // permit non-loopback TCP without TLS
  std::string tls_cert_file;              // PEM certificate chain: TLS on TCP listeners ("" = plaintext)
  std::string tls_key_file;               // PEM private key of tls_cert_file
  std::string tls_client_ca_file;         // PEM CA bundle: mTLS, client certificates required
  std::string auth_token_file;            // "TOKEN [admin]" per line; "" = no token auth
  bool shared_memory = true;              // frames and JPEGs through memfds, beside the first unix socket
  std::string metrics_listen = "127.0.0.1:9464";  // HTTP /metrics and health; "" turns it off
  std::string endpoints_file;             // bound addresses, port 0 resolved, while serving; "" = none
  std::string spool_directory = "/var/tmp";  // private spool files of inputs that need seeking
  std::string log_level = "info";         // trace, debug, info, warn, error, off
  // [limits]
  int max_sessions = 64;                  // Transcode streams at once; more: RESOURCE_EXHAUSTED
  // Running sessions' estimated memory together; 0: auto (host_memory.h). Past it:
  // RESOURCE_EXHAUSTED.
  uint64_t memory_budget_bytes = 0;
  int max_width = 3840;                   // largest source or rendition width accepted
  int max_height = 2160;                  // largest source or rendition height accepted
  double max_frame_rate = 240;            // highest nominal input frame rate accepted
  uint64_t max_session_bytes = 64ull << 30;  // input bytes per session
  // No input read and no output written for this long → session ends DEADLINE_EXCEEDED.
  double idle_timeout_s = 60;
  int session_queue_frames = 4;           // decoded frames a session may have waiting for a worker
  // Encoded bytes a session may have queued for its client before it stops submitting.
  uint64_t session_output_bytes = 64ull << 20;
  // Container bytes buffered per session before gRPC flow control pushes back.
  int input_queue_bytes = 16 << 20;
  // Input a session may spool to a file (an MP4 with moov after mdat from a client that
  // cannot seek); 0: none, such input is refused.
  uint64_t input_spool_bytes = 4ull << 30;
  // [workers]
  std::string workers = "auto";           // auto (every GPU, else the CPU), gpu, cpu
  int gpu_slots = 8;                      // frames in flight per GPU worker (pinned slot ring)
  int gpu_launch_frames = 1;              // frames of one shape a GPU launch may carry
  std::string gpu_wait = "auto";          // how host threads wait for a GPU: auto, spin, yield, block
  // Registered host memory for raw frames assembled from messages, all sessions together.
  uint64_t pinned_input_bytes = 1ull << 30;
  int cpu_threads = 0;                    // 0: one per hardware thread
  int decode_threads = 0;                 // FFmpeg frame threads per session; 0: FFmpeg's choice
  double drain_timeout_s = 30;            // on SIGTERM, seconds sessions get before cancellation
  // [color]
  std::string untagged_matrix = "bt601";  // YCbCr matrix of input that signals none: bt601, bt709, by-size
  // [decode]
  std::string decode_mode = "auto";       // where container input decodes: auto, gpu, cpu
  std::string decode_frames = "device";   // hardware-decoded frames to the encoder: device, host
  std::string vaapi_device;               // VA-API render node; "": the GPU's own, by PCI bus id
  int decode_held_frames = 8;             // device frames a session holds between decoder and encoder
  int decode_engines_full_percent = 90;   // auto: engines this busy (NVML) send new sessions to the CPU
  int decode_fault_at_packet = -1;        // tests: the engines' decode of this packet fails; -1 never

  // TLS is configured (certificate and key): TCP listeners serve TLS.
  bool tls_enabled() const { return !tls_cert_file.empty(); }

  // Ranges and cross-field rules (non-loopback TCP needs TLS or allow_insecure_tcp). The
  // message names the field as the config file spells it ("limits.max_sessions").
  Status Validate() const;

  // The addresses to serve on: `listen`, or the default unix socket when it is empty.
  std::vector<ListenAddress> EffectiveListen() const;
};

bool operator==(const DaemonConfig& a, const DaemonConfig& b);
inline bool operator!=(const DaemonConfig& a, const DaemonConfig& b) { return !(a == b); }

// The settings whose values differ between `a` and `b`, named as the file names them
// ("limits.max_sessions"), in the file's order.
std::vector<std::string> ChangedSettings(const DaemonConfig& a, const DaemonConfig& b);

// Parses TOML text: tables [server], [limits], [workers] with the fields above. Keys not
// given keep their defaults. Unknown tables or keys and wrong types are INVALID_ARGUMENT
// naming the key and "source:line:column". The result is validated.
// A key under its old name (server.shared_memory_input, now server.shared_memory) is read
// as the new one, and a line saying so goes to `notices` for the caller to log; the old
// and the new name together are INVALID_ARGUMENT.
StatusOr<DaemonConfig> ParseConfigToml(const std::string& text, const std::string& source_name,
                                       std::vector<std::string>* notices = nullptr);
// Reads and parses a file (NOT_FOUND when it is missing).
StatusOr<DaemonConfig> LoadConfigFile(const std::string& path, std::vector<std::string>* notices = nullptr);

// The whole config as TOML with a comment on every key, every value written out. For
// DaemonConfig{} this is deploy/conveyord.toml (a test keeps the two equal).
std::string RenderConfigToml(const DaemonConfig& config);

// ---- Command line ----

constexpr char kDefaultConfigPath[] = "/etc/conveyor/conveyord.toml";

struct CommandLine {
  DaemonConfig config;      // file values, then flags on top; validated
  std::string config_path;  // the file that was read; empty when none
  // Warnings about the file for the log, which is not set up yet while it is parsed
  // (a key read under its old name).
  std::vector<std::string> notices;
  // --help, --version and --print-config: print `output` to stdout and exit with
  // `exit_code` without starting anything.
  bool exit_now = false;
  int exit_code = 0;
  std::string output;
  // Test only: --test-fault-every N makes every Nth worker call fail with an injected
  // INTERNAL error (WorkerOptions::test_fault), for the soak test's fault injection. Not
  // in the config file or --help, and refused unless the environment has
  // kAllowTestHooksEnv=1, so a stray flag cannot break a production daemon. 0: off.
  int test_fault_every = 0;
};

// The environment variable that must be "1" for conveyord to accept its test-only flags.
constexpr char kAllowTestHooksEnv[] = "CONVEYOR_ALLOW_TEST_HOOKS";

// Flags: --config PATH (default: `default_config_path` when that file exists, else none;
// --config "" reads none), --listen ADDR (repeatable; replaces the file's list),
// --allow-insecure-tcp, --tls-cert-file, --tls-key-file, --tls-client-ca-file,
// --auth-token-file, --metrics-listen, --log-level, --max-sessions, --workers,
// --gpu-slots, --cpu-threads, --idle-timeout SECONDS, --drain-timeout SECONDS,
// --print-config, --version, --help; and the hidden, test-only --test-fault-every N
// (see CommandLine::test_fault_every). Usage errors and bad values are INVALID_ARGUMENT;
// a file that cannot be read or parsed gives that error.
//
//   auto cl = ParseCommandLine(argc, argv);
//   if (!cl.ok()) { fprintf(stderr, "conveyord: %s\n", cl.status().message().c_str()); return 2; }
//   if (cl->exit_now) { fputs(cl->output.c_str(), stdout); return cl->exit_code; }
StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv,
                                       const std::string& default_config_path = kDefaultConfigPath);

}  // namespace conveyor::config

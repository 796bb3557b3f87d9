// The table of conveyord's options: for each DaemonConfig field its file table and key,
// its flag, its comment and its range. Validation and the TOML writer
// (daemon_config.cpp), the TOML reader (config_toml_reader.cpp) and the flags
// (command_line.cpp) all walk it, so they cannot drift apart.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "daemon_config.h"

namespace conveyor::config {

using Addresses = std::vector<ListenAddress>;
using Member =
    std::variant<bool DaemonConfig::*, int DaemonConfig::*, uint64_t DaemonConfig::*,
                 double DaemonConfig::*, std::string DaemonConfig::*, Addresses DaemonConfig::*>;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

enum Unit { kNoUnit, kBytes };

struct Field {
  const char* table;  // "server", "limits", "workers"
  const char* key;
  Member member;
  const char* flag;  // "--max-sessions", or nullptr when the file is the only way
  const char* doc;   // comment lines for the file; its first sentence is the flag's help
  double min = 0;    // numeric fields: the accepted range
  double max = 0;
  bool min_exclusive = false;  // (min, max] rather than [min, max]
  Unit unit = kNoUnit;
};

constexpr double kMaxBytes = 1152921504606846976.0;  // 2^60: fits TOML's int64 with room

// The one place that names, documents and bounds every option. DaemonConfig's field
// defaults are the other half; RenderConfigToml(DaemonConfig{}) shows both.
inline const Field kFields[] = {
    {"server", "listen", &DaemonConfig::listen, "--listen",
     "Addresses to serve the gRPC API on: \"unix:/path\", \"HOST:PORT\", \"[IPv6]:PORT\".\n"
     "Empty: the unix socket /run/conveyor/conveyord.sock when /run/conveyor is writable,\n"
     "else $XDG_RUNTIME_DIR/conveyor/conveyord.sock, else /tmp/conveyor-UID/conveyord.sock."},
    {"server", "socket_group", &DaemonConfig::socket_group, "--socket-group",
     "Group given the unix sockets, which are mode 0660, so that its members may connect.\n"
     "When no group of that name exists the sockets keep the daemon's group. \"\": leave it."},
    {"server", "allow_insecure_tcp", &DaemonConfig::allow_insecure_tcp, "--allow-insecure-tcp",
     "Allow plaintext TCP listen addresses other than loopback. Without TLS anyone who can\n"
     "reach such a port can read the media, and without auth_token_file submit work and\n"
     "cancel sessions."},
    {"server", "tls_cert_file", &DaemonConfig::tls_cert_file, "--tls-cert-file",
     "PEM certificate (chain) of the server. With tls_key_file, TCP listeners serve TLS;\n"
     "unix sockets stay plaintext (their file permissions guard them). \"\": no TLS. SIGHUP\n"
     "reads it, its key and the client CA again for new connections; files that do not\n"
     "check out (unparsable, a key that is not the certificate's) refuse the reload."},
    {"server", "tls_key_file", &DaemonConfig::tls_key_file, "--tls-key-file",
     "PEM private key of tls_cert_file. Both are set, or neither."},
    {"server", "tls_client_ca_file", &DaemonConfig::tls_client_ca_file, "--tls-client-ca-file",
     "PEM CA certificates for mutual TLS. When set, TCP clients must present a certificate\n"
     "signed by one of them. Needs tls_cert_file."},
    {"server", "auth_token_file", &DaemonConfig::auth_token_file, "--auth-token-file",
     "File of bearer tokens, one per line: TOKEN, or TOKEN admin. When set, every\n"
     "conveyor.v1.Transcoder call needs the metadata \"authorization: Bearer TOKEN\"; a caller\n"
     "sees and cancels only its own sessions unless its token is admin. Health checks and\n"
     "reflection stay open. \"\": no token auth. SIGHUP reads it again (a call is checked when\n"
     "it starts); an unreadable or empty file refuses the reload."},
    {"server", "shared_memory", &DaemonConfig::shared_memory, nullptr,
     "Let clients on this host send raw frames through shared memory (RawInput.shared_memory_slots):\n"
     "the daemon serves an attach socket beside the first unix socket (NAME.frames.sock, same\n"
     "mode and group), takes a sealed memfd from the client and maps it read-only. The same\n"
     "socket hands out the daemon's own read-only JPEG slots (JpegFramesOutput.shared_memory_slots).\n"
     "false: no attach socket, and sessions asking for either are refused with FAILED_PRECONDITION."},
    {"server", "metrics_listen", &DaemonConfig::metrics_listen, "--metrics-listen",
     "HOST:PORT of the HTTP endpoint for Prometheus /metrics and health probes; \"\" turns it "
     "off."},
    {"server", "endpoints_file", &DaemonConfig::endpoints_file, "--endpoints-file",
     "File listing the addresses conveyord serves on, with the ports that port 0 picked.\n"
     "One line \"grpc ADDRESS\" per listen address and \"metrics HOST:PORT\" for the HTTP\n"
     "endpoint. Written whole (a temporary file renamed over it) once both are bound and\n"
     "before READY=1; removed at exit. \"\": none."},
    {"server", "spool_directory", &DaemonConfig::spool_directory, "--spool-directory",
     "Directory for the spool files of inputs that need seeking from clients that cannot\n"
     "seek (limits.input_spool_bytes). The files never have a name (O_TMPFILE) and go when\n"
     "their session ends, a crash included. Under the systemd unit /var/tmp is private."},
    {"server", "log_level", &DaemonConfig::log_level, "--log-level",
     "Log level: trace, debug, info, warn, error or off."},

    {"limits", "max_sessions", &DaemonConfig::max_sessions, "--max-sessions",
     "Transcode streams served at once; one more is refused with RESOURCE_EXHAUSTED.", 1, 100000},
    {"limits", "memory_budget_bytes", &DaemonConfig::memory_budget_bytes, nullptr,
     "Memory the running sessions may hold together, by each one's estimate from its job:\n"
     "its frames (raw input's queued and assembled frames; container input's decoded frames,\n"
     "counted at 1920x1080 until the decoder has probed its size, then at that size), the\n"
     "input queue, limits.session_output_bytes of output with the JPEGs in flight, and a\n"
     "fixed overhead. A session that does not fit in what the running ones leave is refused\n"
     "with RESOURCE_EXHAUSTED naming this option (container input: when its size is known,\n"
     "before Started). 0: auto, 3/4 of the daemon's cgroup memory limit (the unit's\n"
     "MemoryMax=) or else of the host's MemTotal, read again on each reload.",
     0, kMaxBytes, false, kBytes},
    {"limits", "max_width", &DaemonConfig::max_width, nullptr,
     "Largest frame width accepted, source or rendition, in pixels. A portrait frame\n"
     "(a phone's, turned) may have the sizes the other way round: 2160x3840 fits 3840x2160.",
     1, 16384},
    {"limits", "max_height", &DaemonConfig::max_height, nullptr,
     "Largest frame height accepted, source or rendition, in pixels (either way round, as\n"
     "limits.max_width says).",
     1, 16384},
    {"limits", "max_frame_rate", &DaemonConfig::max_frame_rate, nullptr,
     "Highest nominal input frame rate accepted, in frames per second.", 0, 10000, true},
    {"limits", "max_session_bytes", &DaemonConfig::max_session_bytes, nullptr,
     "Input bytes one session may send.", 1, kMaxBytes, false, kBytes},
    {"limits", "idle_timeout_s", &DaemonConfig::idle_timeout_s, "--idle-timeout",
     "Seconds a session may go without input read or output written; it then ends with\n"
     "DEADLINE_EXCEEDED.",
     0, 7 * 86400, true},
    {"limits", "session_queue_frames", &DaemonConfig::session_queue_frames, nullptr,
     "Decoded frames a session may have waiting for its worker.", 1, 1024},
    {"limits", "session_output_bytes", &DaemonConfig::session_output_bytes, nullptr,
     "Encoded bytes a session may have queued for its client before it stops submitting\n"
     "frames.",
     65536, kMaxBytes, false, kBytes},
    {"limits", "input_queue_bytes", &DaemonConfig::input_queue_bytes, nullptr,
     "Container bytes buffered per session before gRPC flow control pushes back on the client.",
     65536, INT_MAX, false, kBytes},
    {"limits", "input_spool_bytes", &DaemonConfig::input_spool_bytes, "--input-spool-bytes",
     "Bytes of input one session may spool to a file in server.spool_directory: an MP4 whose\n"
     "moov follows mdat, sent by a client that cannot seek (ContainerInput.seekable false),\n"
     "is demuxed from there. Past it: RESOURCE_EXHAUSTED. 0: no spool; such input is refused\n"
     "with FAILED_PRECONDITION.",
     0, kMaxBytes, false, kBytes},

    {"workers", "workers", &DaemonConfig::workers, "--workers",
     "Which workers run: auto (every GPU, else the CPU), gpu (every GPU; no GPU is an error at\n"
     "start), cpu. A GPU build that falls back to the CPU under auto says so: a warning,\n"
     "conveyor_workers_cpu_fallback 1 and a line on /readyz. The conveyor-amd and\n"
     "conveyor-nvidia packages ship gpu."},
    {"workers", "gpu_slots", &DaemonConfig::gpu_slots, "--gpu-slots",
     "Frames in flight per GPU worker: the size of its ring of pinned slots. Each slot pins\n"
     "about 50 MiB of host memory for 3840x2160 limits; the worker also pins a 64 MiB ring\n"
     "that encoded bands are read back into and results lend from. A slot is free once its\n"
     "frame is read back; the worker holds at most twice this many frames, the finished ones\n"
     "waiting to be handed over in order.",
     1, 64},
    {"workers", "gpu_launch_frames", &DaemonConfig::gpu_launch_frames, nullptr,
     "Most frames of the same shape a GPU launch carries; only frames already queued are\n"
     "batched, so it never adds waiting. 1 (no batching) measured best on an H200.",
     1, 4},
    {"workers", "gpu_wait", &DaemonConfig::gpu_wait, nullptr,
     "How a thread that waits for its GPU (and the video decoder's) waits: auto (the\n"
     "runtime's choice: spin while the process has fewer GPU contexts than cores), spin,\n"
     "yield or block (sleep until the GPU signals: the least CPU, a little more latency)."},
    {"workers", "pinned_input_bytes", &DaemonConfig::pinned_input_bytes, nullptr,
     "Page-locked host memory, all sessions together, for assembling raw frames that come in\n"
     "frame_chunk messages: a GPU worker uploads such a frame from where it was assembled\n"
     "instead of copying it into a pinned slot first. A session takes (2 x\n"
     "session_queue_frames + 2) frames of it, 31 MiB at 1080p with the defaults, and leaves\n"
     "it, still locked, to the next session of its size (let go after 60 s unused, or when\n"
     "another size needs the room). One that finds too little left assembles in ordinary\n"
     "memory, and its frames are copied. 0: none.",
     0, kMaxBytes, false, kBytes},
    {"workers", "cpu_threads", &DaemonConfig::cpu_threads, "--cpu-threads",
     "Threads of the CPU worker; 0: one per hardware thread.", 0, 4096},
    {"workers", "decode_threads", &DaemonConfig::decode_threads, nullptr,
     "FFmpeg frame threads per session; 0: FFmpeg's choice (cores + 1, at most 16). The\n"
     "decoder holds about one frame a thread until more input arrives, so a live stream's\n"
     "first frame waits for about this many frames of input: set it low for live input.",
     0, 256},
    {"workers", "drain_timeout_s", &DaemonConfig::drain_timeout_s, "--drain-timeout",
     "On SIGTERM, seconds running sessions get to finish before they are cancelled; a\n"
     "second SIGTERM or SIGINT cancels them at once. Under systemd the daemon extends the\n"
     "unit's stop timeout while it drains (EXTEND_TIMEOUT_USEC).", 0, 86400},

    {"color", "untagged_matrix", &DaemonConfig::untagged_matrix, "--untagged-matrix",
     "YCbCr matrix assumed for container input that signals none: bt601, bt709 or by-size.\n"
     "bt601 is what FFmpeg's libswscale assumes, so `ffmpeg -i IN out.jpg` and conveyord\n"
     "give the same colours. by-size guesses BT.709 from 1280x720 up and BT.601 below, as\n"
     "many players do. Raw input states its matrix in RawInput.color_matrix."},

    {"decode", "mode", &DaemonConfig::decode_mode, "--decode",
     "Where container input is decoded: auto, gpu or cpu. auto decodes on the video engines\n"
     "(NVDEC, VCN) of the GPU that encodes the session whatever FFmpeg's hwaccel takes there\n"
     "(codec, profile, chroma format, size), and on the CPU what it does not; gpu refuses a\n"
     "stream the engines cannot take (FAILED_PRECONDITION); cpu never uses them. A job's\n"
     "JobSpec.decode overrides it. Started.decoder says where each session decodes."},
    {"decode", "frames", &DaemonConfig::decode_frames, nullptr,
     "Where hardware-decoded frames go to the encoder: device (NVIDIA: they stay in GPU\n"
     "memory and are copied device to device into the encoder's slot, so only the bitstream\n"
     "and the JPEGs cross PCIe) or host (each is copied to host memory first, the path\n"
     "VA-API frames always take). host exists to run that path on any GPU."},
    {"decode", "held_frames", &DaemonConfig::decode_held_frames, nullptr,
     "Hardware-decoded frames (NVIDIA, decode.frames = device) a session may hold in device\n"
     "memory between the decoder and the encoder. Each is one more decoder surface (3 MiB\n"
     "at 1080p): more lets the engines run further ahead of the encoder.",
     2, 24},
    {"decode", "engines_full_percent", &DaemonConfig::decode_engines_full_percent, nullptr,
     "For decode = auto on NVIDIA GPUs: the video engines' busy share (NVML's decoder\n"
     "utilization, read every 0.5 s) at which they count as full. While they are this busy\n"
     "and at least two cores are idle, new auto sessions decode on the CPU, and one engine\n"
     "session a second moves to the CPU at its next keyframe; never while fewer of this\n"
     "daemon's sessions decode on a GPU's engines than it has engines (one is free).",
     10, 100},
    {"decode", "vaapi_device", &DaemonConfig::vaapi_device, nullptr,
     "VA-API render node for AMD GPUs (/dev/dri/renderD128); empty: the GPU's own, found by\n"
     "its PCI bus id under /dev/dri/by-path."},
    {"decode", "fault_at_packet", &DaemonConfig::decode_fault_at_packet, nullptr,
     "For tests of the failover to the CPU: the video engines' decode of this video packet\n"
     "(0-based) of every session counts as failed, as a hwaccel error would. -1: never.",
     -1, 2147483647},
};

// "limits.max_sessions": the field as the file names it.
std::string FieldName(const Field& f);
// The field `key` of [table], or nullptr.
const Field* FindField(const std::string& table, const std::string& key);
// The field's value in `c` as TOML.
std::string RenderValue(const DaemonConfig& c, const Field& f);
bool FileExists(const std::string& path);
// A flag's help in conveyord --help: the comment's first sentence, its lines joined.
std::string FirstSentence(const char* doc);
// The name of a flag's value in conveyord --help and conveyord(8): N, BYTES, PATH, ...
const char* TypeNameForFlag(const Field& f);

}  // namespace conveyor::config

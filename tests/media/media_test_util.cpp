// Test media and decoding helpers for the media tests (see media_test_util.h).
#include "media_test_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "byte_queue.h"
#include "test_process.h"

extern char** environ;

namespace media_test {

using conveyor::FailedPrecondition;
using conveyor::Internal;
using conveyor::OkStatus;
using conveyor::Status;
using conveyor::StatusOr;
using conveyor::media::ByteQueue;
using conveyor::media::ContainerDecoder;
using conveyor::media::DecodedFrame;

namespace {

constexpr const char* kFfmpeg = "/usr/bin/ffmpeg";
constexpr const char* kFfprobe = "/usr/bin/ffprobe";

std::string& TempDirStorage() {
  static std::string dir;
  return dir;
}

struct SpawnActionsDeleter {
  void operator()(posix_spawn_file_actions_t* a) const {
    posix_spawn_file_actions_destroy(a);
    delete a;
  }
};

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

const std::string& TempDir() {
  std::string& dir = TempDirStorage();
  if (dir.empty()) {
    dir = conveyor::testing::MakeTempDir("conveyor-media");
    if (dir.empty()) {
      std::perror("mkdtemp");
      std::abort();
    }
  }
  return dir;
}

void RemoveTempDir() {
  std::string& dir = TempDirStorage();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  dir.clear();
}

StatusOr<std::string> RunTool(const std::vector<std::string>& args) {
  if (args.empty() || access(args[0].c_str(), X_OK) != 0) {
    return FailedPrecondition((args.empty() ? std::string("(nothing)") : args[0]) + " is missing");
  }
  static std::atomic<int> counter{0};
  const std::string base = TempDir() + "/tool" + std::to_string(counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  std::vector<std::string> full = args;
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::unique_ptr<posix_spawn_file_actions_t, SpawnActionsDeleter> actions(new posix_spawn_file_actions_t);
  posix_spawn_file_actions_init(actions.get());
  posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(actions.get(), 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(actions.get(), 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], actions.get(), nullptr, argv.data(), environ);
  if (rc != 0) return Internal(std::string("posix_spawn ") + args[0] + ": " + std::strerror(rc));
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  std::string out = ReadText(out_path);
  std::string err = ReadText(err_path);
  std::remove(out_path.c_str());
  std::remove(err_path.c_str());
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return out;
  std::string cmd;
  for (const auto& a : args) cmd += a + " ";
  if (err.size() > 2000) err = "..." + err.substr(err.size() - 2000);
  return Internal("failed (status " + std::to_string(wstatus) + "): " + cmd + "\n" + err);
}

Status Ffmpeg(const std::vector<std::string>& args) {
  std::vector<std::string> full = {kFfmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-y"};
  full.insert(full.end(), args.begin(), args.end());
  auto out = RunTool(full);
  return out.ok() ? OkStatus() : out.status();
}

StatusOr<std::string> Ffprobe(const std::vector<std::string>& args) {
  std::vector<std::string> full = {kFfprobe, "-v", "error"};
  full.insert(full.end(), args.begin(), args.end());
  return RunTool(full);
}

bool HasEncoder(const std::string& name) {
  static std::once_flag once;
  static std::set<std::string> encoders;
  std::call_once(once, [] {
    auto out = RunTool({kFfmpeg, "-hide_banner", "-encoders"});
    if (!out.ok()) return;
    std::istringstream lines(*out);
    std::string line;
    while (std::getline(lines, line)) {
      // " V....D libx264   libx264 H.264 ...": flags, then the name.
      std::istringstream fields(line);
      std::string flags, encoder;
      if (fields >> flags >> encoder && flags.size() == 6) encoders.insert(encoder);
    }
  });
  return encoders.count(name) != 0;
}

std::string TestSource(int width, int height) {
  return "testsrc2=size=" + std::to_string(width) + "x" + std::to_string(height) + ":rate=25";
}

StatusOr<std::string> MakeMedia(const std::string& name, const std::string& lavfi_source,
                                const std::vector<std::string>& args,
                                const std::vector<std::string>& extra_lavfi_inputs) {
  const std::string path = TempDir() + "/" + name;
  if (std::filesystem::exists(path)) return path;
  std::vector<std::string> full = {"-f", "lavfi", "-i", lavfi_source};
  for (const auto& input : extra_lavfi_inputs) full.insert(full.end(), {"-f", "lavfi", "-i", input});
  full.insert(full.end(), args.begin(), args.end());
  full.push_back(path + ".part");
  // The muxer is chosen from the final name's extension, not ".part".
  const std::string ext = std::filesystem::path(name).extension().string();
  std::vector<std::string> with_format = full;
  bool has_format = false;
  for (size_t i = 0; i + 1 < args.size(); ++i) has_format |= args[i] == "-f";
  if (!has_format) {
    static const std::map<std::string, std::string> kMuxers = {
        {".mp4", "mp4"}, {".mov", "mov"},   {".mkv", "matroska"}, {".webm", "webm"},
        {".avi", "avi"}, {".ts", "mpegts"}, {".nut", "nut"},
    };
    auto it = kMuxers.find(ext);
    if (it == kMuxers.end()) return Internal("MakeMedia: no muxer for " + name);
    with_format.insert(with_format.end() - 1, {"-f", it->second});
  }
  RETURN_IF_ERROR(Ffmpeg(with_format));
  std::error_code ec;
  std::filesystem::rename(path + ".part", path, ec);
  if (ec) return Internal("rename " + path + ": " + ec.message());
  return path;
}

StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Internal("cannot open " + path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Status WriteFile(const std::string& path, const std::vector<uint8_t>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  return out ? OkStatus() : Internal("cannot write " + path);
}

StatusOr<std::vector<std::string>> ProbeTopLevelBoxes(const std::string& path) {
  // The demuxer logs each box it reads at trace level, on stderr.
  ASSIGN_OR_RETURN(std::string trace, RunTool({"/bin/sh", "-c", std::string(kFfprobe) + " -v trace '" + path + "' 2>&1"}));
  std::vector<std::string> types;
  std::istringstream in(trace);
  for (std::string line; std::getline(in, line);) {
    const size_t type = line.find("type:'");
    if (type == std::string::npos || line.find("parent:'root'") == std::string::npos) continue;
    types.push_back(line.substr(type + 6, 4));
  }
  return types;
}

StatusOr<std::vector<std::string>> PacketSums(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, RunTool({kFfmpeg, "-v", "error", "-i", path, "-map", "0", "-c", "copy", "-f",
                                              "framemd5", "-"}));
  std::vector<std::string> sums;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') sums.push_back(line.substr(line.rfind(',') + 1));
  }
  return sums;
}

StatusOr<std::vector<ProbedStream>> ProbeStreams(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string out, Ffprobe({"-count_frames", "-count_packets", "-show_streams", "-of",
                                                   "default=nw=0", path}));
  std::vector<ProbedStream> streams;
  std::istringstream lines(out);
  std::string line;
  bool in_side_data = false;
  while (std::getline(lines, line)) {
    if (line == "[STREAM]") {
      streams.emplace_back();
      continue;
    }
    if (line == "[SIDE_DATA]") in_side_data = true;
    if (line == "[/SIDE_DATA]") in_side_data = false;
    const size_t eq = line.find('=');
    if (eq == std::string::npos || streams.empty()) continue;
    // Side data keys (displaymatrix, rotation) keep a prefix so they cannot clash.
    const std::string key = (in_side_data ? "side_data:" : "") + line.substr(0, eq);
    streams.back()[key] = line.substr(eq + 1);
  }
  return streams;
}

StatusOr<std::vector<double>> ProbeVideoPacketTimes(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string out, Ffprobe({"-select_streams", "v:0", "-show_entries",
                                                   "packet=pts_time", "-of", "csv=p=0", path}));
  std::vector<double> times;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) times.push_back(std::strtod(line.c_str(), nullptr));
  }
  return times;
}

DecodeRun Decode(const std::vector<uint8_t>& data, const DecodeSetup& setup) {
  DecodeRun run;
  ByteQueue queue(setup.queue_bytes);
  std::thread producer([&] {
    for (size_t off = 0; off < data.size(); off += setup.chunk_bytes) {
      const size_t n = std::min(setup.chunk_bytes, data.size() - off);
      std::vector<uint8_t> chunk(data.begin() + static_cast<std::ptrdiff_t>(off),
                                 data.begin() + static_cast<std::ptrdiff_t>(off + n));
      if (!queue.Push(std::move(chunk)).ok()) return;  // cancelled: the decoder gave up
    }
    queue.Close();
  });
  run.status = [&]() -> Status {
    ASSIGN_OR_RETURN(std::unique_ptr<ContainerDecoder> decoder,
                     ContainerDecoder::Open(&queue, setup.options));
    run.opened = true;
    run.video = decoder->video();
    if (const auto* audio = decoder->audio()) {
      run.audio_codec = audio->codec;
      decoder->SetAudioSink([&run](const AVPacket&) {
        ++run.audio_packets;
        return OkStatus();
      });
    }
    if (setup.on_open) RETURN_IF_ERROR(setup.on_open(*decoder));
    DecodedFrame frame;
    for (;;) {
      ASSIGN_OR_RETURN(const bool got, decoder->Next(&frame));
      if (!got) return OkStatus();
      run.frames.push_back(FrameSummary{frame.pts, frame.seconds(), frame.width, frame.height, frame.format,
                                        frame.color, frame.rotation_degrees});
      if (setup.on_frame) RETURN_IF_ERROR(setup.on_frame(*decoder, frame));
    }
  }();
  // Unblocks a producer stuck on a full queue after a failure; a no-op for a clean end.
  queue.Cancel();
  producer.join();
  run.queue_peak = queue.peak_bytes();
  return run;
}

DecodeRun DecodeFile(const std::string& path, const DecodeSetup& setup) {
  auto data = ReadFile(path);
  if (!data.ok()) {
    DecodeRun run;
    run.status = data.status();
    return run;
  }
  return Decode(*data, setup);
}

DecodeRun Decode(const std::vector<uint8_t>& data) {
  static const DecodeSetup defaults;
  return Decode(data, defaults);
}

DecodeRun DecodeFile(const std::string& path) {
  static const DecodeSetup defaults;
  return DecodeFile(path, defaults);
}

}  // namespace media_test

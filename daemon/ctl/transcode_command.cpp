// conveyorctl transcode: the call itself. A writer thread sends the input
// (transcode_input.h) while this thread reads the responses into the output writers
// (transcode_output.h) and reports Started, Progress and Summary.
#include "transcode_command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "introspect_commands.h"
#include "progress_line.h"
#include "stage_orient.h"
#include "transcode_input.h"
#include "transcode_output.h"

namespace conveyor::ctl {
namespace {

std::string FormatSeconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f s", s);
  return buf;
}

std::string DescribeStarted(const v1::Started& s) {
  std::string out = "session " + s.session_id() + " on " + s.worker();
  if (!s.backend().empty()) out += " (" + s.backend() + ")";
  out += ": source " + (s.source_codec().empty() ? std::string("?") : s.source_codec()) + " " +
         std::to_string(s.source_width()) + "x" + std::to_string(s.source_height());
  if (s.has_time_base()) {
    out += ", time base " + std::to_string(s.time_base().num()) + "/" +
           std::to_string(s.time_base().den());
  }
  if (!s.decoder().empty()) {
    out += ", decoded on the " + std::string(s.decoder() == "gpu" ? "GPU" : "CPU") + " (" + s.decoder_name() +
           (s.decoder_api().empty() ? "" : ", " + s.decoder_api()) + ")";
  }
  if (s.exif_orientation() > 1 || s.rotation_degrees() != 0) {
    out += ", display " + std::string(OrientationName(OrientationFromExif(static_cast<int>(s.exif_orientation())))) +
           (s.autorotated() ? " (applied)" : " (kept as metadata)");
  }
  for (const std::string& note : s.notes()) out += "\nnote: " + note;
  return out;
}

std::string DescribeSummary(const v1::Summary& s) {
  std::string out = "done: " + std::to_string(s.frames_in()) + " frames in, " +
                    std::to_string(s.frames_out()) + " out, " + FormatBytes(s.bytes_in()) +
                    " in, " + FormatBytes(s.bytes_out()) + " out, " +
                    FormatSeconds(s.wall_seconds());
  if (s.wall_seconds() > 0) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), " (%.1f fps)", s.frames_out() / s.wall_seconds());
    out += buf;
  }
  if (s.decode_errors() > 0 || s.frames_dropped() > 0 || s.truncated()) {
    out += "\ndamaged input: " + std::to_string(s.decode_errors()) + " decode errors concealed, " +
           std::to_string(s.frames_dropped()) + " frames dropped" + (s.truncated() ? ", truncated" : "");
  }
  if (!s.decoder_failover().empty()) out += "\ndecoder failover: " + s.decoder_failover();
  if (s.frames_deinterlaced() > 0) out += "\ndeinterlaced: " + std::to_string(s.frames_deinterlaced()) + " frames";
  if (s.read_requests() > 0) out += "\nread requests: " + std::to_string(s.read_requests());
  if (s.spooled_bytes() > 0) out += "\nspooled: " + FormatBytes(s.spooled_bytes());
  if (s.stages_size() > 0) {
    // The daemon sums each stage over frames that overlap in time, so a sum can exceed
    // the call's wall time; a frame's average says where a frame spends its time. Reading
    // and decoding count every frame decoded, the later stages the frames encoded.
    out += "\nstages, ms a frame on average:";
    for (int i = 0; i < s.stages_size(); ++i) {
      const std::string& stage = s.stages(i).stage();
      const uint64_t frames = (stage == "demux" || stage == "decode") ? s.frames_in() : s.frames_out();
      char ms[32];
      std::snprintf(ms, sizeof(ms), "%.2f", frames > 0 ? s.stages(i).seconds() * 1000 / frames : 0.0);
      out += (i ? ", " : " ") + stage + " " + ms;
    }
  }
  return out;
}

// What one call did: its status, and whether any output came (after which it cannot be
// made again without the client's writers having seen part of it).
struct Attempt {
  Status status;
  bool produced = false;  // JPEGs, container bytes, a storyboard or Summary came
  bool started = false;   // Started came: the daemon admitted the session
};

// One Transcode call: a writer thread sends `input`, this thread reads the responses into
// the writers.
class TranscodeCall {
 public:
  TranscodeCall(const ClientOptions& client, const TranscodeOptions& options, const v1::JobSpec& spec,
                std::ostream& info, std::ostream& err)
      : client_(client), options_(options), spec_(spec), info_(info), err_(err) {}

  Attempt Run(v1::Transcoder::Stub* stub, InputReader* input, StopSignal* stop, JpegFrameWriter* jpeg,
              ContainerWriter* container, ProgressLine* bar, InterruptWatch* interrupts);
  const std::string& storyboard_index() const { return vtt_; }

 private:
  const ClientOptions& client_;
  const TranscodeOptions& options_;
  const v1::JobSpec& spec_;
  std::ostream& info_;
  std::ostream& err_;
  std::string vtt_;  // a storyboard's index, from its Storyboard messages
};

Attempt TranscodeCall::Run(v1::Transcoder::Stub* stub, InputReader* input, StopSignal* stop, JpegFrameWriter* jpeg,
                           ContainerWriter* container, ProgressLine* bar, InterruptWatch* interrupts) {
  Attempt a;
  ReadRequests requests;
  grpc::ClientContext context;
  PrepareCall(&context, client_);
  std::unique_ptr<TranscodeStream> stream = stub->Transcode(&context);
  // A signal ends the call like a local failure does, so the writers clean up as they
  // go out of scope. Declared after `context`, so it is cleared before that goes.
  const ScopedCancel cancel_on_signal(interrupts, [&context] { context.TryCancel(); });

  std::atomic<uint64_t> sent{0};
  Status writer_status;
  std::thread writer([&] {
    writer_status = StreamInput(stream.get(), spec_, input, &sent, &requests);
    // Stopped because the call was over: its status, not this, is the result.
    if (writer_status.code() == StatusCode::kCancelled && stop->raised()) writer_status = OkStatus();
    if (!writer_status.ok()) context.TryCancel();
  });

  Status local;  // the first local failure while handling responses
  v1::TranscodeResponse response;
  while (stream->Read(&response)) {
    if (!local.ok()) continue;  // cancelled; drain what is already here
    switch (response.message_case()) {
      case v1::TranscodeResponse::kStarted:
        a.started = true;
        if (jpeg) jpeg->SetTimeBase(response.started().time_base());
        if (bar) bar->Started(response.started(), spec_);
        info_ << DescribeStarted(response.started()) << "\n" << std::flush;
        break;
      case v1::TranscodeResponse::kPacket:
        a.produced = true;
        local = jpeg ? jpeg->Add(response.packet()) : Internal("the server sent JPEG packets for container output");
        if (bar && response.packet().rendition() == 0 && response.packet().end_of_frame()) {
          bar->Frame(response.packet().pts());
        }
        break;
      case v1::TranscodeResponse::kContainerChunk:
        a.produced = true;
        local = container ? container->Add(response.container_chunk())
                          : Internal("the server sent container bytes for JPEG frame output");
        break;
      case v1::TranscodeResponse::kProgress:
        if (bar) bar->Progress(response.progress());
        if (options_.progress) {
          const v1::Progress& p = response.progress();
          char buf[128];
          std::snprintf(buf, sizeof(buf), "progress: %llu frames in, %llu out, %.1f fps\n",
                        static_cast<unsigned long long>(p.frames_in()),
                        static_cast<unsigned long long>(p.frames_out()), p.fps());
          err_ << buf << std::flush;
        }
        break;
      case v1::TranscodeResponse::kStoryboard:
        a.produced = true;
        vtt_ += response.storyboard().webvtt();
        break;
      case v1::TranscodeResponse::kReadRequest:
        requests.Post(response.read_request());
        break;
      case v1::TranscodeResponse::kSummary:
        a.produced = true;
        requests.Close();  // no request follows a Summary: the writer half-closes
        if (bar) {
          bar->Finished(response.summary());
          bar->Draw(true);
        }
        info_ << DescribeSummary(response.summary()) << "\n" << std::flush;
        break;
      default: break;  // a newer server's message this client does not know
    }
    if (bar) bar->Draw();
    if (!local.ok()) context.TryCancel();
  }
  if (bar) bar->Draw(true);  // ends the line before any error is printed
  requests.Close();
  stop->Raise();
  writer.join();
  const grpc::Status rpc = stream->Finish();

  // A signal that came once the call had succeeded leaves the output in place.
  if (!rpc.ok() && interrupts != nullptr && interrupts->signal() != 0) {
    std::string what = "interrupted by " + SignalName(interrupts->signal());
    if (options_.output != "-") what += options_.keep_partial ? " (partial output kept)" : " (partial output removed)";
    a.status = Status(StatusCode::kCancelled, what);
  } else if (!local.ok()) {
    a.status = local;
  } else if (!writer_status.ok()) {
    a.status = writer_status;
  } else if (!rpc.ok()) {
    // After Started the daemon was there: its UNAVAILABLE is the session's (the video
    // engines failed a --decode gpu session), not a connection's.
    a.status = a.started ? FromGrpcStatus(rpc) : RpcError(rpc, client_);
  }
  return a;
}

// Whether a failed call may be made again on another daemon: the target balances over
// several, nothing was produced (so nothing was written), and the daemon either could
// not serve it (UNAVAILABLE: gone, draining) or refused it at admission (RESOURCE_EXHAUSTED
// before Started: at its cap or memory budget). The input must be a file, which can be
// read again from the start; stdin's bytes are gone.
bool MayRetry(const ClientOptions& client, const Attempt& a, const InputReader& input, InterruptWatch* interrupts) {
  if (!client.balanced() || a.status.ok() || a.produced) return false;
  if (interrupts != nullptr && interrupts->signal() != 0) return false;
  if (!input.SeekableSize()) return false;
  return a.status.code() == StatusCode::kUnavailable ||
         (a.status.code() == StatusCode::kResourceExhausted && !a.started);
}

}  // namespace

Status RunTranscode(const ClientOptions& client, const TranscodeOptions& options, std::ostream& out,
                    std::ostream& err, InterruptWatch* interrupts) {
  ASSIGN_OR_RETURN(v1::JobSpec spec, BuildJobSpec(options));
  const int renditions = spec.renditions_size();
  std::ostream& info = options.output == "-" ? err : out;

  auto stop = std::make_unique<StopSignal>();
  ASSIGN_OR_RETURN(std::unique_ptr<InputReader> input, InputReader::Open(options.input, stop.get()));
  // A regular file can be read anywhere: the daemon may then seek in it (an MP4 whose moov
  // follows mdat) instead of spooling it.
  if (spec.has_container() && !options.stream_only) {
    if (const std::optional<uint64_t> size = input->SeekableSize()) {
      spec.mutable_container()->set_seekable(true);
      spec.mutable_container()->set_size(*size);
    }
  }
  // A file can be written anywhere: the daemon then finishes the container as the ffmpeg
  // CLI does (duration, index), and a MOV's moov goes in front, as with the CLI's
  // -movflags +faststart. stdout takes live output.
  if (spec.output().has_container() && options.output != "-") {
    v1::ContainerOutput* container = spec.mutable_output()->mutable_container();
    container->set_seekable(true);
    container->set_faststart(container->format() == v1::CONTAINER_FORMAT_MOV && !options.no_faststart);
  }

  std::unique_ptr<JpegFrameWriter> jpeg;
  std::unique_ptr<ContainerWriter> container;
  // Neither makes a file or directory before the daemon has sent output.
  if (spec.output().has_container()) {
    container = std::make_unique<ContainerWriter>(options.output, options.container, renditions, &out,
                                                  options.keep_partial);
  } else {
    ASSIGN_OR_RETURN(FrameNamer namer, FrameNamer::Parse(options.name, renditions));
    jpeg = std::make_unique<JpegFrameWriter>(options.output, std::move(namer), renditions, options.keep_partial,
                                             options.index);
  }
  std::unique_ptr<ProgressLine> bar;
  if (options.progress_bar) bar = std::make_unique<ProgressLine>(err);

  auto stub = v1::Transcoder::NewStub(MakeChannel(client));
  TranscodeCall call(client, options, spec, info, err);
  Attempt a = call.Run(stub.get(), input.get(), stop.get(), jpeg.get(), container.get(), bar.get(), interrupts);
  if (MayRetry(client, a, *input, interrupts)) {
    // round_robin picks the next daemon that is serving; the one that failed has left
    // the pick set if it is gone or NOT_SERVING.
    err << "conveyorctl: " << FormatError(a.status) << "; no output had come, so the call is made once more\n"
        << std::flush;
    stop = std::make_unique<StopSignal>();
    ASSIGN_OR_RETURN(input, InputReader::Open(options.input, stop.get()));
    a = call.Run(stub.get(), input.get(), stop.get(), jpeg.get(), container.get(), bar.get(), interrupts);
  }
  RETURN_IF_ERROR(a.status);
  if (jpeg) {
    if (spec.renditions(0).has_tile()) {
      if (call.storyboard_index().empty()) return Internal("the server sent no storyboard index");
      RETURN_IF_ERROR(jpeg->AddFile(kStoryboardIndexName, call.storyboard_index()));
    }
    RETURN_IF_ERROR(jpeg->Finish());
    info << jpeg->Describe() << "\n";
  } else {
    RETURN_IF_ERROR(container->Finish());
    info << container->Describe() << "\n";
  }
  return OkStatus();
}

}  // namespace conveyor::ctl

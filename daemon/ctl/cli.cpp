// conveyorctl's subcommands (status, sessions, cancel, transcode) on CLI11. Parsing and
// printing live here; each command's work is in its own file.
#include "cli.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <sstream>
#include <string>

#include "channel.h"
#include "daemon_config.h"
#include "default_target.h"
#include "interrupt.h"
#include "introspect_commands.h"
#include "listen_address.h"
#include "output_naming.h"
#include "transcode_command.h"

namespace conveyor::ctl {
namespace {

constexpr double kIntrospectTimeoutS = 10;

int Fail(std::ostream& err, const Status& s) {
  err << "conveyorctl: " << FormatError(s) << "\n";
  return kExitFailed;
}

int Usage(std::ostream& err, const std::string& message) {
  err << "conveyorctl: " << message << "\nRun 'conveyorctl --help' for usage.\n";
  return kExitUsage;
}

}  // namespace

int RunConveyorctl(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CLI::App app("conveyorctl: the command-line client of conveyord, the Conveyor transcode daemon.",
               "conveyorctl");
  app.set_version_flag("--version", std::string("conveyorctl ") + config::ConveyorVersion());
  app.require_subcommand(1);
  app.fallthrough();  // --target, --timeout and the TLS/token flags also after the subcommand
  app.footer(
      "Exit status: 0 success; 1 the call or a local step failed (printed as\n"
      "'conveyorctl: CODE: message'); 2 a bad command line. SIGINT, SIGTERM or SIGHUP\n"
      "during a transcode cancels the call and cleans up its output (see --keep-partial),\n"
      "then conveyorctl ends by the same signal; a second signal ends it at once.");

  ClientOptions client;  // its target starts as the default (default_target.h)
  std::string target_text;
  double timeout_s = -1;
  app.add_option("--target", target_text,
                 "conveyord's address: unix:PATH, HOST:PORT or [IPv6]:PORT. Default: the system\n"
                 "daemon's unix:" + std::string(kSystemSocketDir) +
                     "/conveyord.sock when it is a socket this user may\n"
                     "connect to, else where conveyord started by this user would listen (here:\n" +
                     client.target.ToString() + ").\n"
                     "Several daemons as one service: dns:///HOST:PORT (every address HOST resolves to)\n"
                     "or ipv4:A:PORT,B:PORT: calls go round robin over the daemons that are serving\n"
                     "(not draining, not at their session cap), and a transcode whose daemon fails\n"
                     "before any output is made once more, on another.")
      ->type_name("ADDR");
  app.add_option("--timeout", timeout_s,
                 "Deadline of the call in seconds; 0: none (default: 10 for status, sessions "
                 "and cancel, none for transcode)")
      ->type_name("SECONDS")
      ->check(CLI::NonNegativeNumber);

  std::string tls_ca, tls_cert, tls_key, token_file;
  app.add_option("--tls-ca", tls_ca, "PEM CA certificates that verify conveyord; turns TLS on (TCP targets).")
      ->type_name("FILE");
  app.add_option("--tls-cert", tls_cert, "PEM client certificate, for a conveyord that requires one (mTLS).")
      ->type_name("FILE");
  app.add_option("--tls-key", tls_key, "PEM private key of --tls-cert.")->type_name("FILE");
  app.add_option("--tls-server-name", client.tls_server_name,
                 "Name to check in the server's certificate (default: the target's host).")
      ->type_name("NAME");
  app.add_option("--token-file", token_file,
                 "File whose first non-blank line is the bearer token sent with each call.")
      ->type_name("FILE");

  bool json = false;
  CLI::App* status_cmd = app.add_subcommand("status", "Show the server's workers and load.");
  status_cmd->add_flag("--json", json, "Print the reply as one line of JSON.");
  CLI::App* sessions_cmd = app.add_subcommand("sessions", "List the running sessions.");
  sessions_cmd->add_flag("--json", json, "Print the reply as one line of JSON.");
  std::string session_id;
  CLI::App* cancel_cmd = app.add_subcommand("cancel", "Cancel a running session.");
  cancel_cmd->add_option("SESSION_ID", session_id, "As shown by 'conveyorctl sessions'.")
      ->required();

  TranscodeOptions t;
  CLI::App* transcode_cmd = app.add_subcommand(
      "transcode", "Encode a video file (or stdin) to Motion-JPEG: JPEG files or a container.");
  transcode_cmd->add_option("INPUT", t.input, "Input file, or - for stdin.")->required();
  transcode_cmd
      ->add_option("-o,--output", t.output,
                   "As the ffmpeg CLI reads it: a file named .mkv, .mov or .avi gets that\n"
                   "container; a directory (created if missing) gets JPEG frames, R-NNNNNN.jpg\n"
                   "for rendition R and frame NNNNNN unless --name says otherwise; a name\n"
                   "pattern (frames/%06d.jpg) gets JPEG frames under those names. A container's\n"
                   "file holds rendition 0; rendition n goes to the same name with .n before\n"
                   "its extension (out.mkv, out.1.mkv, ...); - writes one rendition to stdout\n"
                   "(with --container).")
      ->required()
      ->type_name("OUTPUT");
  transcode_cmd
      ->add_option("--rendition", t.renditions,
                   "WxH[:quality[:subsampling]], repeatable, e.g. 1280x720:85:420. 0x0 is the\n"
                   "source size; Wx0 keeps the aspect ratio. Default: one rendition at the\n"
                   "source size, quality 85, 4:2:0.")
      ->type_name("SPEC")
      ->allow_extra_args(false);
  transcode_cmd->add_option("--size", t.size, "Output size WxH (one rendition); Wx0 keeps the aspect ratio.")
      ->type_name("WxH");
  transcode_cmd
      ->add_option("--renditions", t.ladder, "A ladder from one upload: WxH,WxH,... (e.g. 1920x1080,1280x720,640x360).")
      ->type_name("LIST");
  transcode_cmd->add_option("--quality", t.quality, "JPEG quality 1..100 for --size/--renditions (default 85).")
      ->type_name("N");
  transcode_cmd
      ->add_option("--container", t.container,
                   "Write mkv, mov or avi, whatever -o's extension (as ffmpeg's -f).")
      ->type_name("FORMAT");
  transcode_cmd
      ->add_option("--name", t.name,
                   "JPEG frames' names: %d or %06d (the frame's number from 1, as ffmpeg's\n"
                   "image2), {index} (from 0), {pts_ms} (its time in ms), {rendition}; e.g.\n"
                   "'{pts_ms}.jpg'. Several renditions need {rendition}.")
      ->type_name("PATTERN");
  transcode_cmd
      ->add_option("--index", t.index,
                   "Beside the JPEG frames, frames.csv or frames.json: each frame's file,\n"
                   "rendition, index, pts, time in seconds and size.")
      ->check(CLI::IsMember({"csv", "json"}))
      ->type_name("csv|json");
  transcode_cmd
      ->add_option("--raw", t.raw,
                   "The input is tightly packed raw frames, FORMAT:WxH[:FPS] (FPS: N, N.M or\n"
                   "N/D; default 25), e.g. yuv420p:1920x1080:30000/1001. Formats: yuv420p,\n"
                   "yuvj420p, nv12, yuv422p, yuv444p, rgb24, bgr24, rgba, bgra.")
      ->type_name("FORMAT:WxH[:FPS]");
  transcode_cmd
      ->add_option("--format-hint", t.format_hint,
                   "FFmpeg demuxer name for the input (matroska, mpegts, ...); default: probe.")
      ->type_name("NAME");
  transcode_cmd->add_flag("--audio", t.audio,
                          "Copy the input's first audio stream (container output).");
  transcode_cmd->add_flag("--no-seek", t.stream_only,
                          "Send a file front to back only, as from a pipe. By default a regular file is\n"
                          "sent seekable, so the daemon can read an MP4 whose moov follows mdat in place.");
  transcode_cmd->add_flag("--no-faststart", t.no_faststart,
                          "Leave a MOV file's moov (its index) after the frames, as the ffmpeg CLI does\n"
                          "without -movflags +faststart. By default it goes in front, so that players and\n"
                          "web servers can start at once; that costs one pass over the file at the end.");
  transcode_cmd->add_flag("--no-autorotate", t.no_autorotate,
                          "Keep the pixels as decoded for a rotated input (a phone's video): the orientation\n"
                          "goes into each JPEG's Exif tag, or MOV's display matrix. By default the frames are\n"
                          "turned as the input's display matrix says, as the ffmpeg CLI does.");
  transcode_cmd->add_option("--deinterlace", t.deinterlace,
                            "auto: deinterlace the frames the decoder flags interlaced (yadif's algorithm);\n"
                            "on: every frame; off: keep the fields (container output says the field order).")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  transcode_cmd->add_option("--decode", t.decode,
                            "Where to decode container input: auto (the GPU's video engines for what they\n"
                            "take, the CPU for the rest), gpu (the engines or fail), cpu; default: the\n"
                            "daemon's decode.mode.")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  transcode_cmd
      ->add_option("--ss", t.ss,
                   "Start at the first frame whose time is at or after TIME, as ffmpeg -ss before -i\n"
                   "(an exact seek): a regular file is sought to the keyframe before TIME, a pipe is\n"
                   "decoded from its start. TIME: seconds (12.5, 1500ms) or [HH:]MM:SS[.frac], on\n"
                   "the input's own timeline; each frame keeps its source time.")
      ->type_name("TIME");
  transcode_cmd
      ->add_option("--to", t.to,
                   "Stop before the first frame at or after TIME (ffmpeg -to); the rest of the\n"
                   "input is not read.")
      ->type_name("TIME");
  transcode_cmd->add_option("-t,--duration", t.duration, "Stop at --ss plus TIME (ffmpeg -t); not with --to.")
      ->type_name("TIME");
  transcode_cmd
      ->add_option("--frames", t.frames,
                   "Stop after N output frames (ffmpeg -frames:v N); the rest of the input is not\n"
                   "read. 0: no limit.")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  transcode_cmd
      ->add_option("--fps", t.fps,
                   "Write frames at RATE per second, as ffmpeg -vf fps=RATE samples: each frame at the\n"
                   "grid points nearest its time, dropped or repeated (a repeat is the same JPEG).\n"
                   "RATE: N, N.M (up to 3 decimals) or N/D; 0.5 is a frame every 2 s. Frame times are\n"
                   "then on that grid, counted from the input's time 0.")
      ->type_name("RATE");
  transcode_cmd->add_flag("--keyframes", t.keyframes,
                          "Decode and encode keyframes only (ffmpeg -skip_frame nokey): a thumbnail per GOP.");
  transcode_cmd->add_flag("--keep-partial", t.keep_partial,
                          "When the call fails or is interrupted (SIGINT, SIGTERM, SIGHUP), keep what was\n"
                          "written under the final names, as the ffmpeg CLI leaves it: the frames so far, or\n"
                          "the container cut short (it may lack a duration and an index). Without it such a\n"
                          "call leaves nothing: each file is written under a hidden temporary name beside it\n"
                          "(.NAME.PID.N.part), renamed into place when done, and removed on failure.");
  transcode_cmd->add_flag("--strict", t.strict,
                          "Fail on the first decode error, read error or sign of a cut-off input. Without\n"
                          "it, damage is concealed as the ffmpeg CLI conceals it and the summary counts it.");
  transcode_cmd
      ->add_option("--label", t.label,
                   "Shown in 'conveyorctl sessions' (default: the input's name).")
      ->type_name("TEXT");
  transcode_cmd->add_flag("--progress", t.progress, "Print the server's progress lines on stderr.");
  bool no_bar = false, bar = false;
  transcode_cmd->add_flag("--progress-bar", bar, "Draw a progress bar on stderr (default when stdout is a terminal).");
  transcode_cmd->add_flag("--no-progress-bar", no_bar, "Never draw the progress bar.");

  TranscodeOptions th;
  th.tile = "10x10";
  th.size = "160x90";
  std::string every = "10";
  CLI::App* thumbnails_cmd = app.add_subcommand(
      "thumbnails", "Seek-bar previews: sprites of thumbnails and their WebVTT index, as video.js reads them.");
  thumbnails_cmd->add_option("INPUT", th.input, "Input file, or - for stdin.")->required();
  thumbnails_cmd
      ->add_option("-o,--output", th.output,
                   "Directory (created if missing) for sprite_1.jpg, sprite_2.jpg, ... and\n"
                   "thumbnails.vtt, whose cues name each thumbnail as sprite_N.jpg#xywh=x,y,w,h.")
      ->required()
      ->type_name("DIR");
  thumbnails_cmd
      ->add_option("--every", every,
                   "A thumbnail every TIME of the input, sampled as ffmpeg -vf fps=1/TIME samples\n"
                   "(10s, 2.5, 500ms, 1:00).")
      ->type_name("TIME")
      ->capture_default_str();
  thumbnails_cmd->add_option("--tile", th.tile, "COLUMNSxROWS thumbnails a sprite, row by row (ffmpeg's tile=).")
      ->type_name("CxR")
      ->capture_default_str();
  thumbnails_cmd->add_option("--size", th.size, "A thumbnail's WxH, even numbers; Wx0 keeps the aspect ratio.")
      ->type_name("WxH")
      ->capture_default_str();
  thumbnails_cmd->add_option("--quality", th.quality, "JPEG quality 1..100 of the sprites (default 85).")
      ->type_name("N");
  thumbnails_cmd->add_option("--ss", th.ss, "Start at TIME, as transcode --ss.")->type_name("TIME");
  thumbnails_cmd->add_option("--to", th.to, "Stop before TIME, as transcode --to.")->type_name("TIME");
  thumbnails_cmd->add_option("-t,--duration", th.duration, "Stop at --ss plus TIME.")->type_name("TIME");
  thumbnails_cmd->add_option("--decode", th.decode, "auto, gpu or cpu, as transcode --decode.")
      ->check(CLI::IsMember({"auto", "gpu", "cpu"}));
  thumbnails_cmd->add_flag("--keep-partial", th.keep_partial, "Keep what was written when the call fails.");
  thumbnails_cmd->add_option("--label", th.label, "Shown in 'conveyorctl sessions'.")->type_name("TEXT");

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    std::ostringstream ignored;
    return app.exit(e, out, ignored);
  } catch (const CLI::ParseError& e) {
    return Usage(err, e.what());
  } catch (const std::exception& e) {
    return Usage(err, e.what());
  }

  if (!target_text.empty()) {
    if (Status parsed = ParseTarget(target_text, &client); !parsed.ok()) {
      return Usage(err, "--target: " + parsed.message());
    }
  }
  const bool transcode = transcode_cmd->parsed() || thumbnails_cmd->parsed();
  if (Status sec = LoadClientSecurity(tls_ca, tls_cert, tls_key, token_file, &client); !sec.ok()) {
    return Fail(err, sec);
  }
  client.timeout_s = timeout_s >= 0 ? timeout_s : (transcode ? 0 : kIntrospectTimeoutS);

  // A signal that ended the call exits as the ffmpeg CLI does, with 128 + its number.
  auto run_transcode = [&](const TranscodeOptions& o) {
    InterruptWatch interrupts;
    const Status done = RunTranscode(client, o, out, err, &interrupts);
    if (!done.ok() && done.code() == StatusCode::kCancelled && interrupts.signal() != 0) {
      Fail(err, done);
      return kExitSignalBase + interrupts.signal();
    }
    return done.ok() ? kExitOk : Fail(err, done);
  };
  Status s;
  if (status_cmd->parsed()) {
    s = RunStatusCommand(client, json, out);
  } else if (sessions_cmd->parsed()) {
    s = RunSessionsCommand(client, json, out);
  } else if (cancel_cmd->parsed()) {
    s = RunCancelCommand(client, session_id, out);
  } else if (thumbnails_cmd->parsed()) {
    auto rate = EveryAsFrameRate(every);
    if (!rate.ok()) return Usage(err, "--every: " + rate.status().message());
    th.fps = *rate;
    th.name = "sprite_%d.jpg";  // the names the daemon's index gives the sprites
    const auto target = ResolveOutput(th.output, "", "");
    if (!target.ok() || !target->container.empty() || !target->name.empty()) {
      return Usage(err, "-o: thumbnails go into a directory, not '" + th.output + "'");
    }
    const auto spec = BuildJobSpec(th);
    if (!spec.ok()) return Usage(err, spec.status().message());
    th.progress_bar = !no_bar && isatty(STDOUT_FILENO);
    return run_transcode(th);
  } else {
    const auto target = ResolveOutput(t.output, t.container, t.name);
    if (!target.ok()) return Usage(err, target.status().message());
    t.output = target->output;
    t.container = target->container;
    t.name = target->name;
    const auto spec = BuildJobSpec(t);
    if (!spec.ok()) return Usage(err, spec.status().message());
    // The bar goes to stderr, drawn when a person is watching stdout (and stdout is not
    // the output itself).
    t.progress_bar = !no_bar && (bar || (isatty(STDOUT_FILENO) && t.output != "-"));
    return run_transcode(t);
  }
  return s.ok() ? kExitOk : Fail(err, s);
}

}  // namespace conveyor::ctl

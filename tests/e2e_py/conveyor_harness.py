"""Harness for the Python end-to-end client: stubs, the conveyord child, the Transcode
client and the checks of its outcome, media made with the ffmpeg CLI and probed with
ffprobe, and threads for calls at once. The checks of the pictures that come back (djpeg,
PSNR) are in picture_checks.py.

Everything here uses only the standard library, Debian's python3-grpcio and
python3-protobuf (run it with /usr/bin/python3). Stubs are generated at run time, so the
client always speaks the proto in the tree it tests.
"""

import collections
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

MiB = 1 << 20
GRPC_PYTHON_PLUGIN = "/usr/bin/grpc_python_plugin"
GRPC_PROTO_DIR = "/usr/share/grpc-proto"
PROTOC_INCLUDE = "/usr/include"  # google/protobuf/timestamp.proto


class Skip(Exception):
    """A case cannot run on this host (GTest's GTEST_SKIP): reported, exit code 77."""


class CheckFailed(AssertionError):
    pass


def check(cond, message):
    if not cond:
        raise CheckFailed(message)


def log(message):
    print(message, flush=True)


def run(argv, cwd=None, capture=True, check_rc=True, timeout=300):
    """Runs a command; returns CompletedProcess with text stdout/stderr."""
    p = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None, timeout=timeout)
    if check_rc and p.returncode != 0:
        err = p.stderr.decode(errors="replace") if p.stderr else ""
        raise CheckFailed("command failed (rc=%d): %s\n%s" % (p.returncode, " ".join(argv), err[-4000:]))
    return p


# ---------------------------------------------------------------- stubs


def require_tools():
    """Skips (with the reason) when this host lacks what every case needs."""
    try:
        import grpc  # noqa: F401
        import google.protobuf  # noqa: F401
    except ImportError as e:
        raise Skip("%s has no %s (apt-get install python3-grpcio python3-protobuf)" % (sys.executable, e.name))
    for tool, package in (("protoc", "protobuf-compiler"), (GRPC_PYTHON_PLUGIN, "protobuf-compiler-grpc"),
                          ("ffmpeg", "ffmpeg"), ("ffprobe", "ffmpeg"), ("djpeg", "libjpeg-turbo-progs")):
        if shutil.which(tool) is None:
            raise Skip("%s is missing (apt-get install %s)" % (tool, package))
    for proto in ("grpc/health/v1/health.proto", "grpc/reflection/v1alpha/reflection.proto"):
        if not os.path.exists(os.path.join(GRPC_PROTO_DIR, proto)):
            raise Skip("%s/%s is missing (apt-get install grpc-proto)" % (GRPC_PROTO_DIR, proto))


def _protoc(include_dirs, out_dir, files, grpc=True):
    argv = ["protoc"] + ["-I" + d for d in include_dirs] + ["--python_out=" + out_dir]
    if grpc:
        argv += ["--grpc_out=" + out_dir, "--plugin=protoc-gen-grpc=" + GRPC_PYTHON_PLUGIN]
    run(argv + files)


class Stubs:
    """Generated modules: pb / pb_grpc (conveyor.v1), health / health_grpc, refl / refl_grpc."""

    def __init__(self, proto_dir, work_dir):
        out = os.path.join(work_dir, "stubs")
        os.makedirs(out)
        _protoc([proto_dir, PROTOC_INCLUDE], out, ["conveyor/v1/transcoder.proto"])
        # A regular package, so that an installed conveyor package (python3-conveyor), which
        # would win over a namespace package, does not stand in for these stubs.
        for d in ("conveyor", "conveyor/v1"):
            open(os.path.join(out, d, "__init__.py"), "w").close()
        # The standard protos live under grpc/...; generated as they are, they would make a
        # local package `grpc` that shadows grpcio. Copied under another directory name, the
        # modules are e2e_std.*; the proto packages (grpc.health.v1, ...) stay as they are,
        # so the service names on the wire are unchanged.
        std_src = os.path.join(work_dir, "std_protos")
        os.makedirs(os.path.join(std_src, "e2e_std"))
        for name, rel in (("health.proto", "grpc/health/v1/health.proto"),
                          ("reflection.proto", "grpc/reflection/v1alpha/reflection.proto")):
            shutil.copy(os.path.join(GRPC_PROTO_DIR, rel), os.path.join(std_src, "e2e_std", name))
        _protoc([std_src], out, ["e2e_std/health.proto", "e2e_std/reflection.proto"])
        sys.path.insert(0, out)
        importlib.invalidate_caches()
        self.pb = importlib.import_module("conveyor.v1.transcoder_pb2")
        check(self.pb.__file__.startswith(out), "conveyor.v1 imported from %s, not %s" % (self.pb.__file__, out))
        self.pb_grpc = importlib.import_module("conveyor.v1.transcoder_pb2_grpc")
        self.health = importlib.import_module("e2e_std.health_pb2")
        self.health_grpc = importlib.import_module("e2e_std.health_pb2_grpc")
        self.refl = importlib.import_module("e2e_std.reflection_pb2")
        self.refl_grpc = importlib.import_module("e2e_std.reflection_pb2_grpc")
        import grpc  # noqa: F401  (must be grpcio, not a generated package)
        check(hasattr(grpc, "insecure_channel"), "the grpc module is shadowed: %s" % grpc.__file__)


# ---------------------------------------------------------------- the daemon


class Daemon:
    """conveyord on a unix socket in work_dir; its log goes to work_dir/conveyord.log."""

    def __init__(self, binary, work_dir, stubs, extra_flags=()):
        import grpc
        self.grpc = grpc
        self.stubs = stubs
        self.socket_path = os.path.join(work_dir, "conveyord.sock")
        self.target = "unix:" + self.socket_path
        self.log_path = os.path.join(work_dir, "conveyord.log")
        level = os.environ.get("CONVEYOR_E2E_LOG_LEVEL", "warn")
        # No metrics endpoint: daemons of parallel cases must not race for its port.
        argv = [binary, "--config", "", "--listen", self.target, "--workers", "cpu", "--cpu-threads", "2",
                "--log-level", level, "--metrics-listen", ""] + list(extra_flags)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)
        self.channels = []
        self._wait_ready()

    def log_tail(self, n=3000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-n:]
        except OSError:
            return ""

    def _wait_ready(self, timeout_s=30):
        # The socket file first: a channel that finds no socket backs off for a second or
        # more before it tries again. Then GetServerStatus must answer.
        t0 = time.monotonic()
        give_up = t0 + timeout_s
        while not os.path.exists(self.socket_path):
            check(self.proc.poll() is None,
                  "conveyord exited early with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            check(time.monotonic() < give_up, "conveyord made no socket in %d s" % timeout_s)
            time.sleep(0.01)
        stub = self.pb_stub()
        while True:
            check(self.proc.poll() is None,
                  "conveyord exited early with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            try:
                self.status = stub.GetServerStatus(self.stubs.pb.GetServerStatusRequest(), timeout=0.5)
                break
            except self.grpc.RpcError as e:
                check(time.monotonic() < give_up, "GetServerStatus never answered: %s" % e)
                time.sleep(0.05)
        log("conveyord ready in %.2f s: version %s, workers %s" %
            (time.monotonic() - t0, self.status.version, [w.name for w in self.status.workers]))

    def channel(self):
        # A larger receive limit than the default 4 MiB, so that an oversized response is
        # measured and reported by the test instead of failing the call.
        ch = self.grpc.insecure_channel(self.target, options=[("grpc.max_receive_message_length", 64 * MiB)])
        self.channels.append(ch)
        return ch

    def pb_stub(self):
        return self.stubs.pb_grpc.TranscoderStub(self.channel())

    def stop(self, timeout_s=20):
        """SIGTERM; returns the exit code (None if it had to be killed)."""
        for ch in self.channels:
            ch.close()
        self.channels = []
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            rc = None
        self._log.close()
        return rc


# ---------------------------------------------------------------- the Transcode client


class Frame:
    __slots__ = ("index", "pts", "data")

    def __init__(self, index, pts, data):
        self.index, self.pts, self.data = index, pts, data


class Outcome:
    def __init__(self):
        self.code = None          # grpc.StatusCode
        self.details = ""
        self.started = None       # Started
        self.summary = None       # Summary
        self.frames = collections.defaultdict(list)       # rendition -> [Frame]
        self.containers = collections.defaultdict(bytearray)  # rendition -> bytes
        self.progress = 0
        self.shared_packets = 0   # OutputPackets whose JPEG was in a shared-memory slot
        self.largest_message = 0
        self.kinds = []           # response kinds in order, runs collapsed
        self.protocol_errors = []  # ordering problems seen while reading
        self.seconds = 0.0

    @property
    def ok(self):
        import grpc
        return self.code == grpc.StatusCode.OK

    def describe(self):
        return "%s: %s" % (self.code.name if self.code else None, self.details)


def container_requests(pb, path, chunk=MiB, pause_s=0.0):
    with open(path, "rb") as f:
        while True:
            data = f.read(chunk)
            if not data:
                return
            yield pb.TranscodeRequest(container_chunk=data)
            if pause_s:
                time.sleep(pause_s)


def bytes_requests(pb, data, chunk=MiB):
    for off in range(0, len(data), chunk):
        yield pb.TranscodeRequest(container_chunk=data[off:off + chunk])


def raw_frame_requests(pb, frames, chunk=MiB):
    """frames: iterable of (pts, bytes). Each frame split at `chunk`, end_of_frame on its last."""
    for pts, data in frames:
        for off in range(0, len(data), chunk):
            part = data[off:off + chunk]
            yield pb.TranscodeRequest(frame_chunk=pb.RawFrameChunk(
                pts=pts, data=part, end_of_frame=off + len(part) >= len(data)))


def transcode(stub, pb, spec, inputs=(), timeout_s=120, read_shared=None, on_response=None):
    """One Transcode call: spec, then `inputs` (TranscodeRequest iterable), then half-close.

    read_shared(SharedJpeg) -> bytes reads a JPEG the daemon put in a shared-memory slot
    (OutputPacket.shared); on_response(resp) sees every response after it is taken in."""
    import grpc

    def requests():
        yield pb.TranscodeRequest(spec=spec)
        for r in inputs:
            yield r

    out = Outcome()
    partial = {}  # rendition -> (frame_index, pts, bytearray)
    t0 = time.monotonic()
    call = stub.Transcode(requests(), timeout=timeout_s)
    try:
        for resp in call:
            out.largest_message = max(out.largest_message, resp.ByteSize())
            kind = resp.WhichOneof("message")
            if not out.kinds or out.kinds[-1] != kind:
                out.kinds.append(kind)
            if out.summary is not None:
                out.protocol_errors.append("%s after Summary" % kind)
            if kind == "started":
                # Only ReadRequests may come first: the demuxer can seek before the streams are known.
                if out.started is not None or any(k != "read_request" for k in out.kinds[:-1]):
                    out.protocol_errors.append("Started is not the first response, or came twice")
                out.started = resp.started
            elif kind == "packet":
                p = resp.packet
                cur = partial.get(p.rendition)
                if cur is None:
                    cur = partial[p.rendition] = [p.frame_index, p.pts, bytearray()]
                elif cur[0] != p.frame_index or cur[1] != p.pts:
                    out.protocol_errors.append(
                        "rendition %d: frame %d began before frame %d ended" % (p.rendition, p.frame_index, cur[0]))
                if p.HasField("shared"):
                    out.shared_packets += 1
                    cur[2] += read_shared(p.shared) if read_shared else b""
                cur[2] += p.data
                if p.end_of_frame:
                    out.frames[p.rendition].append(Frame(cur[0], cur[1], bytes(cur[2])))
                    del partial[p.rendition]
            elif kind == "container_chunk":
                out.containers[resp.container_chunk.rendition] += resp.container_chunk.data
            elif kind == "progress":
                out.progress += 1
            elif kind == "summary":
                out.summary = resp.summary
            if on_response:
                on_response(resp)
        out.code = grpc.StatusCode.OK
        if partial:
            out.protocol_errors.append("frames without end_of_frame at the end: %s" % sorted(partial))
    except grpc.RpcError as e:
        out.code = e.code()
        out.details = e.details() or ""
    out.t_start, out.t_end = t0, time.monotonic()
    out.seconds = out.t_end - t0
    return out


def expect_ok(out, what):
    check(out.ok, "%s: expected OK, got %s" % (what, out.describe()))
    check(not out.protocol_errors, "%s: response order: %s" % (what, out.protocol_errors))
    check(out.started is not None, "%s: no Started" % what)
    first = next((k for k in out.kinds if k != "read_request"), None)
    check(first == "started", "%s: first response is %s, not Started" % (what, first))
    check(out.kinds[-1] == "summary", "%s: last response is %s, not Summary" % (what, out.kinds[-1]))


def expect_error(out, what, code, *needles):
    check(out.code == code, "%s: expected %s, got %s" % (what, code.name, out.describe()))
    for n in needles:
        check(n.lower() in out.details.lower(), "%s: the message does not name %r: %r" % (what, n, out.details))


# ---------------------------------------------------------------- media (ffmpeg CLI)


def ffmpeg(*args, timeout=300):
    run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + list(args), timeout=timeout)


def has_encoder(name):
    p = run(["ffmpeg", "-hide_banner", "-encoders"], check_rc=False)
    return any(line.split()[1:2] == [name] for line in p.stdout.decode(errors="replace").splitlines()
               if len(line.split()) > 1)


def ffprobe_json(path, *args):
    p = run(["ffprobe", "-v", "error", "-of", "json"] + list(args) + [path])
    return json.loads(p.stdout.decode())


def _f(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def _rate(s):
    try:
        n, d = s.split("/")
        return float(n) / float(d) if float(d) else None
    except (AttributeError, ValueError):
        return None


class VideoProbe:
    """The first video stream of a file: codec, size, frames, pts (presentation order)."""

    def __init__(self, path):
        j = ffprobe_json(path, "-count_frames", "-show_entries",
                         "stream=index,codec_type,codec_name,width,height,nb_read_frames,avg_frame_rate,"
                         "r_frame_rate,duration,pix_fmt:format=duration,format_name:"
                         "packet=stream_index,pts_time,duration_time:frame=stream_index,pts_time,"
                         "best_effort_timestamp_time,pict_type")
        streams = j.get("streams", [])
        video = [s for s in streams if s.get("codec_type") == "video"]
        check(video, "%s: no video stream (%s)" % (path, streams))
        v = video[0]
        self.path = path
        self.streams = streams
        self.codec = v.get("codec_name")
        self.width, self.height = v.get("width"), v.get("height")
        self.pix_fmt = v.get("pix_fmt")
        self.nb_read_frames = int(v.get("nb_read_frames", -1))
        self.fps = _rate(v.get("avg_frame_rate")) or _rate(v.get("r_frame_rate"))
        self.stream_duration = _f(v.get("duration"))
        self.format_duration = _f(j.get("format", {}).get("duration"))
        self.format_name = j.get("format", {}).get("format_name")
        idx = v["index"]
        both = j.get("packets_and_frames", [])
        self.packets = [p for p in both if p.get("type") == "packet" and p.get("stream_index") == idx]
        self.frames = [f for f in both if f.get("type") == "frame" and f.get("stream_index") == idx]
        audio = [s for s in streams if s.get("codec_type") == "audio"]
        self.audio_packet_pts = [_f(p.get("pts_time")) for p in both if p.get("type") == "packet" and audio
                                 and p.get("stream_index") == audio[0]["index"] and p.get("pts_time") is not None]
        self.packet_pts = [_f(p.get("pts_time")) for p in self.packets]
        self.frame_pts = [_f(f.get("pts_time")) if f.get("pts_time") is not None
                          else _f(f.get("best_effort_timestamp_time")) for f in self.frames]

    def has_audio(self):
        return any(s.get("codec_type") == "audio" for s in self.streams)

    def audio_codecs(self):
        return [s.get("codec_name") for s in self.streams if s.get("codec_type") == "audio"]

    def span_seconds(self):
        """First pts to the end of the last frame (its packet duration, or 1/fps)."""
        pts = [p for p in self.packet_pts if p is not None]
        if not pts:
            return None
        end = None
        for p in self.packets:
            t, d = _f(p.get("pts_time")), _f(p.get("duration_time"))
            if t is None:
                continue
            e = t + (d if d else (1.0 / self.fps if self.fps else 0.0))
            end = e if end is None else max(end, e)
        return end - min(pts)


def strictly_increasing(values):
    return all(b > a for a, b in zip(values, values[1:]))


# ---------------------------------------------------------------- misc


def make_work_dir(tag):
    return tempfile.mkdtemp(prefix="conveyor-pye2e-%s-" % tag)


class Threads:
    """Runs callables on threads and collects results or exceptions."""

    def __init__(self):
        self.threads, self.results = [], {}

    def start(self, key, fn, *args):
        def body():
            try:
                self.results[key] = ("ok", fn(*args))
            except BaseException as e:  # reported by join()
                self.results[key] = ("exc", e)
        t = threading.Thread(target=body, name=str(key), daemon=True)
        t.start()
        self.threads.append(t)

    def join(self, timeout_s=300):
        give_up = time.monotonic() + timeout_s
        for t in self.threads:
            t.join(max(0.0, give_up - time.monotonic()))
            check(not t.is_alive(), "thread %s did not finish in %d s" % (t.name, timeout_s))
        out = {}
        for k, (how, v) in self.results.items():
            if how == "exc":
                raise v
            out[k] = v
        return out

"""Client: one channel to conveyord, and the calls on it. frames() yields the JPEGs of a
video as they come; transcode() writes an MJPEG container. Both take the same selection
(start, end, duration, max_frames, keyframes_only, fps) as the JobSpec, which samples as
the ffmpeg CLI does."""

import fractions
import os
import stat

import grpc

from .errors import ConveyorError
from .request_stream import RequestStream, Source
from .shared_memory import SharedJpegSlots
from .v1 import transcoder_pb2 as pb
from .v1 import transcoder_pb2_grpc as pb_grpc

SYSTEM_SOCKET = "/run/conveyor/conveyord.sock"
SHARED_SLOTS = 4
CONTAINER_FORMATS = {".mkv": pb.CONTAINER_FORMAT_MATROSKA, ".mov": pb.CONTAINER_FORMAT_MOV,
                     ".avi": pb.CONTAINER_FORMAT_AVI}
FORMAT_NAMES = {"matroska": pb.CONTAINER_FORMAT_MATROSKA, "mkv": pb.CONTAINER_FORMAT_MATROSKA,
                "mov": pb.CONTAINER_FORMAT_MOV, "avi": pb.CONTAINER_FORMAT_AVI}


def default_target():
    """$CONVEYOR_TARGET, else where conveyorctl looks: the system daemon's socket when this
    user may connect to it, else the socket a daemon started by this user serves."""
    target = os.environ.get("CONVEYOR_TARGET")
    if target:
        return target
    try:
        if stat.S_ISSOCK(os.stat(SYSTEM_SOCKET).st_mode) and os.access(SYSTEM_SOCKET, os.W_OK, effective_ids=True):
            return "unix:" + SYSTEM_SOCKET
    except OSError:
        pass
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return "unix:" + os.path.join(runtime, "conveyor", "conveyord.sock")
    return "unix:/tmp/conveyor-%d/conveyord.sock" % os.getuid()


# Several daemons as one service: round robin over the addresses a "dns:///HOST:PORT" or
# "ipv4:A:P,B:P" target resolves to, each in the pick set while its grpc.health.v1 says
# SERVING for the Transcoder (gRPC's client-side health checking), so a daemon that is
# draining or at its session cap drops out.
BALANCED_SCHEMES = ("dns:", "ipv4:", "ipv6:")
BALANCED_SERVICE_CONFIG = ('{"loadBalancingConfig": [{"round_robin": {}}], '
                           '"healthCheckConfig": {"serviceName": "conveyor.v1.Transcoder"}}')


def may_retry(client, error, started, produced, source_seekable):
    """Whether a failed call may be made once more, on another daemon: the target balances
    over several, nothing was produced, the input can be read again from its start, and
    the daemon could not serve the call (UNAVAILABLE: gone, draining) or refused it at
    admission (RESOURCE_EXHAUSTED before Started: its session cap or memory budget)."""
    if not client.balanced or produced or not source_seekable:
        return False
    return (error.code == grpc.StatusCode.UNAVAILABLE or
            (error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and started is None))


def to_rational(rate):
    """fps as a Rational: 1, 0.5, Fraction(30000, 1001) or "30000/1001"."""
    r = fractions.Fraction(rate)
    if isinstance(rate, float):
        r = r.limit_denominator(1001 * 1000)
    if r <= 0 or r.numerator >= 2 ** 31 or r.denominator >= 2 ** 31:
        raise ValueError("fps must be positive and fit a 32-bit rational, not %r" % (rate,))
    return pb.Rational(num=r.numerator, den=r.denominator)


def job_spec(size=(0, 0), quality=0, fps=None, start=None, end=None, duration=None, max_frames=0,
             keyframes_only=False, format_hint="", label="conveyor-python", strict=False):
    """The JobSpec both calls send; range checks are the daemon's (its message names the field)."""
    width, height = size
    spec = pb.JobSpec(renditions=[pb.RenditionSpec(width=width, height=height, quality=quality)],
                      client_label=label, max_frames=max_frames, keyframes_only=keyframes_only)
    spec.container.format_hint = format_hint
    spec.container.strict = strict
    if fps is not None:
        spec.frame_rate.CopyFrom(to_rational(fps))
    if start is not None:
        spec.start_seconds = start
    if end is not None:
        spec.end_seconds = end
    if duration is not None:
        spec.duration_seconds = duration
    return spec


def _make_room(out, offset, size, block=4 << 20):
    """ContainerChunk.insert: moves the file's bytes from offset to its end on by size,
    from the end backwards, so that nothing is overwritten before it is read."""
    end = out.seek(0, os.SEEK_END)
    if offset > end:
        raise ConveyorError(grpc.StatusCode.INTERNAL, "the server inserted bytes at %d, past the end (%d)" %
                            (offset, end))
    at = end
    while at > offset:
        n = min(block, at - offset)
        at -= n
        out.seek(at)
        data = out.read(n)
        if len(data) != n:
            raise ConveyorError(grpc.StatusCode.INTERNAL, "could not read back %d bytes at %d" % (n, at))
        out.seek(at + size)
        out.write(data)


class Frames:
    """The JPEGs of one Transcode call, as (pts_seconds, jpeg_bytes) in output order.
    close() (or leaving a `with` block) cancels the call if it is still going.
    started and summary hold the daemon's Started and Summary once they have come;
    shared_jpegs counts the JPEGs read from shared memory rather than from messages."""

    def __init__(self, client, spec, input, shared_memory, timeout, own_client=False):
        self.started = None
        self.summary = None
        self.shared_jpegs = 0
        self._client = client
        self._own_client = own_client
        self._source = Source(input)  # a missing file fails here, not at the first frame
        spec.container.seekable = self._source.seekable
        spec.container.size = self._source.size
        self._gen = self._run(spec, shared_memory, timeout)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._gen)

    def close(self):
        self._gen.close()  # runs _run's cleanup when it has started
        self._source.close()
        if self._own_client:
            self._client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _run(self, spec, shared_memory, timeout):
        try:
            if shared_memory is None:
                # On by default for a local daemon; one that has it off (server.shared_memory)
                # refuses the spec before reading input, and a seekable input can start over.
                try:
                    yield from self._call_once_more_if_safe(spec, self._client.target.startswith("unix:"), timeout)
                except ConveyorError as e:
                    if not (e.code == grpc.StatusCode.FAILED_PRECONDITION and self.started is None and
                            self._source.seekable and "spec.output.frames.shared_memory_slots" in e.details):
                        raise
                    yield from self._call(spec, False, timeout)
            else:
                yield from self._call_once_more_if_safe(spec, shared_memory, timeout)
        finally:
            self._source.close()
            if self._own_client:
                self._client.close()

    def _call_once_more_if_safe(self, spec, shared_memory, timeout):
        self._produced = False
        try:
            yield from self._call(spec, shared_memory, timeout)
        except ConveyorError as e:
            if not may_retry(self._client, e, self.started, self._produced, self._source.seekable):
                raise
            self.started = None
            yield from self._call(spec, shared_memory, timeout)

    def _call(self, spec, shared_memory, timeout):
        spec.output.frames.shared_memory_slots = SHARED_SLOTS if shared_memory else 0
        requests = RequestStream(spec, self._source, keep_open=shared_memory)
        slots = None
        call = None
        try:
            call = self._client.stub.Transcode(iter(requests), timeout=timeout)
            time_base = None
            partial = bytearray()
            for resp in call:
                kind = resp.WhichOneof("message")
                if kind == "read_request":
                    requests.read_request(resp.read_request)
                elif kind == "started":
                    self.started = resp.started
                    time_base = resp.started.time_base
                    if shared_memory and resp.started.HasField("shared_memory_output"):
                        slots = SharedJpegSlots(resp.started.shared_memory_output)
                elif kind == "packet":
                    p = resp.packet
                    if p.HasField("shared"):
                        if slots is None:
                            raise ConveyorError(grpc.StatusCode.INTERNAL, "a JPEG in a slot without shared memory")
                        partial += slots.read(p.shared)
                        self.shared_jpegs += 1
                        requests.release(p.shared.slot)
                    partial += p.data
                    if p.end_of_frame:
                        data = bytes(partial)
                        partial.clear()
                        self._produced = True
                        yield p.pts * time_base.num / time_base.den, data
                elif kind == "summary":
                    self._produced = True
                    self.summary = resp.summary
                    requests.stop()
        except grpc.RpcError as e:
            raise ConveyorError.from_rpc_error(e) from None
        finally:
            requests.stop()
            if call is not None:
                call.cancel()  # nothing once the call has ended
            if slots is not None:
                slots.close()


class Result:
    """What transcode() returns: the daemon's Started and Summary."""

    def __init__(self, started, summary):
        self.started = started
        self.summary = summary


class Client:
    """A channel to conveyord: target as gRPC names it ("unix:/path", "host:port");
    default_target() when None. Several daemons as one service: "dns:///HOST:PORT" or
    "ipv4:A:PORT,B:PORT", balanced round robin over those serving; a call whose daemon
    fails before any output is made once more, on another, when its input can be read
    again (a path, bytes or a seekable file)."""

    def __init__(self, target=None, credentials=None):
        self.target = target or default_target()
        self.balanced = self.target.startswith(BALANCED_SCHEMES)
        options = [("grpc.max_receive_message_length", 16 << 20)]
        if self.balanced:
            options.append(("grpc.service_config", BALANCED_SERVICE_CONFIG))
        if credentials is not None:
            self.channel = grpc.secure_channel(self.target, credentials, options=options)
        else:
            self.channel = grpc.insecure_channel(self.target, options=options)
        self.stub = pb_grpc.TranscoderStub(self.channel)

    def close(self):
        self.channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def frames(self, input, fps=None, size=(0, 0), start=None, end=None, duration=None, max_frames=0,
               keyframes_only=False, quality=0, shared_memory=None, format_hint="", timeout=None,
               label="conveyor-python", _own_client=False):
        """The JPEGs of `input` (a path, bytes or a binary file object) as (pts_seconds,
        jpeg_bytes), as they arrive. size=(W, 0) keeps the aspect ratio; (0, 0) is the
        source size. fps samples the output as `ffmpeg -vf fps=R` does. start/end/duration
        are seconds on the input's timeline, as `ffmpeg -ss/-to/-t`; max_frames as
        `-frames:v`; keyframes_only as `-skip_frame nokey`. shared_memory (default: on for
        a unix socket, unless the daemon has it off) takes the JPEGs from the daemon's
        memory instead of messages.
        Errors raise ConveyorError with the gRPC status."""
        spec = job_spec(size, quality, fps, start, end, duration, max_frames, keyframes_only, format_hint, label)
        return Frames(self, spec, input, shared_memory, timeout, own_client=_own_client)

    def transcode(self, input, output, format=None, fps=None, size=(0, 0), start=None, end=None, duration=None,
                  max_frames=0, keyframes_only=False, quality=0, audio=False, format_hint="", timeout=None,
                  label="conveyor-python"):
        """Writes an MJPEG container of `input` to `output` (a path or a binary file
        object). format: "matroska"/"mkv", "mov" or "avi"; None takes it from output's
        extension. A path or a seekable file gets a finished container (Matroska with
        duration and cues, MOV with its moov in front as with ffmpeg's -movflags
        +faststart when the file can also be read, AVI with its index); a pipe gets live
        output.
        audio copies the input's audio. Returns a Result with the daemon's Summary; on an
        error, a file made at a path is removed."""
        if format is None:
            name = output if isinstance(output, (str, os.PathLike)) else getattr(output, "name", "")
            ext = os.path.splitext(str(name))[1].lower()
            if ext not in CONTAINER_FORMATS:
                raise ValueError("format: cannot tell it from %r; give one of %s" % (name, sorted(FORMAT_NAMES)))
            container_format = CONTAINER_FORMATS[ext]
        elif format in FORMAT_NAMES:
            container_format = FORMAT_NAMES[format]
        else:
            raise ValueError("format: one of %s, not %r" % (sorted(FORMAT_NAMES), format))
        spec = job_spec(size, quality, fps, start, end, duration, max_frames, keyframes_only, format_hint, label)
        spec.audio_passthrough = audio
        # Read too: a MOV's moov is inserted in front of what was written (faststart).
        owned = open(output, "w+b") if isinstance(output, (str, os.PathLike)) else None
        out = owned or output
        done = False
        try:
            seekable = bool(getattr(out, "seekable", lambda: False)())
            readable = bool(getattr(out, "readable", lambda: False)())
            spec.output.container.format = container_format
            spec.output.container.seekable = seekable
            spec.output.container.faststart = (seekable and readable and
                                               container_format == pb.CONTAINER_FORMAT_MOV)
            source = Source(input)
            spec.container.seekable = source.seekable
            spec.container.size = source.size
            try:
                started, summary = self._transcode_call(spec, source, out, seekable, timeout)
            except ConveyorError as e:
                if not may_retry(self, e, e.started, e.produced, source.seekable):
                    raise
                started, summary = self._transcode_call(spec, source, out, seekable, timeout)
            finally:
                source.close()
            done = True
            return Result(started, summary)
        finally:
            if owned is not None:
                owned.close()
                if not done:
                    os.unlink(output)  # no half-written container is left behind

    def _transcode_call(self, spec, source, out, seekable, timeout):
        """One Transcode call writing the container into out: (Started, Summary). A failure
        raises ConveyorError with .started and .produced set, for may_retry."""
        requests = RequestStream(spec, source, keep_open=False)
        call = self.stub.Transcode(iter(requests), timeout=timeout)
        started = summary = None
        produced = False
        try:
            try:
                for resp in call:
                    kind = resp.WhichOneof("message")
                    if kind == "read_request":
                        requests.read_request(resp.read_request)
                    elif kind == "started":
                        started = resp.started
                    elif kind == "container_chunk":
                        produced = True
                        chunk = resp.container_chunk
                        if chunk.insert:
                            _make_room(out, chunk.offset, len(chunk.data))
                        if seekable:
                            out.seek(chunk.offset)
                        out.write(chunk.data)
                    elif kind == "summary":
                        produced = True
                        summary = resp.summary
                        requests.stop()
            except grpc.RpcError as e:
                raise ConveyorError.from_rpc_error(e) from None
        except ConveyorError as e:
            e.started, e.produced = started, produced
            raise
        finally:
            requests.stop()
            call.cancel()
        return started, summary

    def list_sessions(self, timeout=10):
        """The daemon's sessions now (ListSessions): SessionInfo messages."""
        try:
            return list(self.stub.ListSessions(pb.ListSessionsRequest(), timeout=timeout).sessions)
        except grpc.RpcError as e:
            raise ConveyorError.from_rpc_error(e) from None

    def server_status(self, timeout=10):
        try:
            return self.stub.GetServerStatus(pb.GetServerStatusRequest(), timeout=timeout)
        except grpc.RpcError as e:
            raise ConveyorError.from_rpc_error(e) from None

"""End-to-end cases of seekable container input and of the daemon's input spool.

An MP4 whose moov atom follows mdat is the ffmpeg CLI's default output. A client that can
seek says ContainerInput.seekable and answers ReadRequests (this module's own client, not
conveyorctl's); one that cannot streams it and the daemon spools it. Both must give what
the ffmpeg CLI decodes from the file. The protocol's misuses each get a status naming the
field: an offset the daemon did not ask for, a seek_id it never sent, a range past the
declared size, container_chunk on a seekable job, a request never answered, a half-close
before the daemon has read what it needs, and a spool past limits.input_spool_bytes.
"""

import queue
import threading

import conveyor_harness as h
from conveyor_harness import check, log
from picture_checks import check_jpeg_frames

CASES = []
FLAGS = {}


def case(flags=()):
    def register(fn):
        CASES.append(fn)
        FLAGS[fn.__name__] = list(flags)
        return fn
    return register


def make_mp4s(ctx):
    """(late, fast): the same 4 s H.264 + AAC clip with moov at the end and at the front."""
    src = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=sample_rate=48000",
           "-t", "4", "-c:v", "libx264", "-preset", "veryfast", "-g", "25", "-pix_fmt", "yuv420p", "-c:a", "aac"]
    late, fast = ctx.path("late.mp4"), ctx.path("fast.mp4")
    h.ffmpeg(*(src + [late]))
    h.ffmpeg(*(src + ["-movflags", "faststart", fast]))
    return late, fast


def spec(pb, seekable=False, size=0):
    s = pb.JobSpec(container=pb.ContainerInput(seekable=seekable, size=size), client_label="pye2e seek")
    s.renditions.append(pb.RenditionSpec())
    return s


class SeekingClient:
    """A client holding the input in memory: it sends it from offset 0 and answers each
    ReadRequest from its offset, as ContainerInput.seekable asks. `misbehave` changes one
    thing: "ignore_requests", "half_close_at_end", or a callable(pb) -> first request."""

    def __init__(self, ctx, data, chunk=16384, misbehave=None):
        self.ctx, self.data, self.chunk, self.misbehave = ctx, data, chunk, misbehave
        self.requests = []
        self.bytes_sent = 0

    def run(self, job, timeout_s=60):
        pb = self.ctx.pb
        inbox = queue.Queue()
        done = threading.Event()

        def inputs():
            if callable(self.misbehave):
                yield self.misbehave(pb)
                done.wait(timeout_s)
                return
            seek_id, offset, at_end = 0, 0, False
            while not done.is_set():
                if at_end and self.misbehave == "half_close_at_end":
                    return  # before any request is answered
                try:
                    r = inbox.get(block=at_end, timeout=0.05 if at_end else None)
                    if self.misbehave != "ignore_requests":
                        seek_id, offset, at_end = r.seek_id, r.offset, False
                except queue.Empty:
                    pass
                if at_end:
                    continue
                part = self.data[offset:offset + self.chunk]
                at_end = offset + len(part) >= len(self.data)
                self.bytes_sent += len(part)
                yield pb.TranscodeRequest(container_range=pb.ContainerRange(
                    seek_id=seek_id, offset=offset, data=part, end_of_input=at_end))
                offset += len(part)

        def on_response(resp):
            kind = resp.WhichOneof("message")
            if kind == "read_request":
                self.requests.append((resp.read_request.seek_id, resp.read_request.offset))
                inbox.put(resp.read_request)
            elif kind == "summary":
                done.set()

        try:
            return h.transcode(self.ctx.stub, pb, job, inputs(), timeout_s, on_response=on_response)
        finally:
            done.set()


def ffmpeg_count(path):
    return h.VideoProbe(path).nb_read_frames


@case()
def seekable_and_spooled_input(ctx):
    pb = ctx.pb
    late, fast = make_mp4s(ctx)
    want = ffmpeg_count(late)
    with open(late, "rb") as f:
        late_bytes = f.read()
    with open(fast, "rb") as f:
        fast_bytes = f.read()
    failures = []

    def expect(name, o, frames, read_requests, spooled):
        """read_requests: the allowed counts."""
        s = o.summary
        log("%-22s %s: %d frames, read_requests %s, spooled %s, %d bytes in" %
            (name, o.describe(), len(o.frames.get(0, [])), s.read_requests if s else "-",
             s.spooled_bytes if s else "-", s.bytes_in if s else 0))
        try:
            h.expect_ok(o, name)
            check(len(o.frames[0]) == frames, "%s: %d frames, the ffmpeg CLI decodes %d" %
                  (name, len(o.frames[0]), frames))
            check(h.strictly_increasing([f.pts for f in o.frames[0]]), "%s: pts not increasing" % name)
            check_jpeg_frames(o.frames[0], 320, 240, ctx.work, name)
            check(s.read_requests in read_requests, "%s: %d read requests, want one of %s" %
                  (name, s.read_requests, read_requests))
            check(s.spooled_bytes == spooled, "%s: %d bytes spooled, want %d" % (name, s.spooled_bytes, spooled))
        except h.CheckFailed as e:
            failures.append(str(e))

    # Seekable, moov at the end: a request past mdat for moov (unless mdat is short enough
    # to read through), one back to mdat.
    c = SeekingClient(ctx, late_bytes)
    o = c.run(spec(pb, True, len(late_bytes)))
    expect("late moov, seekable", o, want, (1, 2), 0)
    log("requests: %s (file %d bytes)" % (c.requests, len(late_bytes)))
    # Seekable, faststart: never a request.
    o = SeekingClient(ctx, fast_bytes).run(spec(pb, True, len(fast_bytes)))
    expect("faststart, seekable", o, ffmpeg_count(fast), (0,), 0)
    # Streamed (a client that cannot seek): the daemon spools all of it.
    o = h.transcode(ctx.stub, pb, spec(pb), h.bytes_requests(pb, late_bytes, 16384))
    expect("late moov, streamed", o, want, (0,), len(late_bytes))
    o = h.transcode(ctx.stub, pb, spec(pb), h.bytes_requests(pb, fast_bytes, 16384))
    expect("faststart, streamed", o, ffmpeg_count(fast), (0,), 0)

    # Misuse, each with a status that names what was wrong.
    INVALID = ctx.grpc.StatusCode.INVALID_ARGUMENT

    def first(**kw):
        return lambda pb_: pb_.TranscodeRequest(container_range=pb_.ContainerRange(data=b"\0" * 64, **kw))

    misuse = [
        ("unrequested offset", spec(pb, True, len(late_bytes)), first(offset=100), INVALID,
         "container_range.offset 100 is not where the input goes on (0)"),
        ("unknown seek_id", spec(pb, True, len(late_bytes)), first(seek_id=5), INVALID,
         "container_range.seek_id 5 was never requested"),
        ("past the size", spec(pb, True, 10), first(), INVALID, "run past spec.container.size 10"),
        ("chunk on seekable", spec(pb, True, len(late_bytes)),
         lambda pb_: pb_.TranscodeRequest(container_chunk=b"\0" * 64), INVALID,
         "container_chunk: this job's input is seekable"),
        ("range on a stream", spec(pb), first(), INVALID, "spec.container.seekable is false"),
    ]
    for name, job, req, code, needle in misuse:
        o = SeekingClient(ctx, late_bytes, misbehave=req).run(job, 20)
        log("%-22s %s" % (name, o.describe()))
        if o.code != code or needle not in o.details:
            failures.append("%s: got %s, want %s with %r" % (name, o.describe(), code.name, needle))
    o = SeekingClient(ctx, late_bytes, misbehave="half_close_at_end").run(spec(pb, True, len(late_bytes)), 30)
    log("%-22s %s" % ("half-close too early", o.describe()))
    if o.code != ctx.grpc.StatusCode.FAILED_PRECONDITION or "client has ended its input" not in o.details:
        failures.append("half-close too early: got %s" % o.describe())
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


@case(flags=["--input-spool-bytes", "65536", "--idle-timeout", "2"])
def spool_bound_and_unanswered_request(ctx):
    pb = ctx.pb
    late, _ = make_mp4s(ctx)
    with open(late, "rb") as f:
        late_bytes = f.read()
    check(len(late_bytes) > 65536, "the clip is too small to pass the spool bound")
    failures = []
    o = h.transcode(ctx.stub, pb, spec(pb), h.bytes_requests(pb, late_bytes, 16384))
    log("spool past its bound: %s" % o.describe())
    if o.code != ctx.grpc.StatusCode.RESOURCE_EXHAUSTED or "limits.input_spool_bytes (65536)" not in o.details:
        failures.append("spool past its bound: got %s, want RESOURCE_EXHAUSTED naming the limit" % o.describe())
    # A seekable client is not bound by the spool.
    o = SeekingClient(ctx, late_bytes).run(spec(pb, True, len(late_bytes)))
    log("seekable under the bound: %s, %d frames" % (o.describe(), len(o.frames.get(0, []))))
    if not o.ok or len(o.frames.get(0, [])) != ffmpeg_count(late):
        failures.append("seekable under the spool bound: %s, %d frames" % (o.describe(), len(o.frames.get(0, []))))
    c = SeekingClient(ctx, late_bytes, misbehave="ignore_requests")
    o = c.run(spec(pb, True, len(late_bytes)), 30)
    log("unanswered request: %s (requests %s)" % (o.describe(), c.requests))
    if o.code != ctx.grpc.StatusCode.DEADLINE_EXCEEDED or "has had no answer" not in o.details:
        failures.append("unanswered request: got %s, want DEADLINE_EXCEEDED naming the request" % o.describe())
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))

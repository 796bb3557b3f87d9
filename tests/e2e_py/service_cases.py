"""End-to-end cases of the service around the transcode: health, reflection and readiness,
bad input and its statuses, exit with health watchers, and concurrent sessions of every
kind."""

import os
import signal
import threading
import time

import conveyor_harness as h
from conveyor_harness import check, log
from e2e_specs import check_frame_pts, check_summary, container_spec, h264_file, raw_spec, testsrc
from picture_checks import check_jpeg_frames, djpeg_check, jpeg_size

CASES = []
FLAGS = {}  # extra conveyord flags of a case


def case(fn):
    CASES.append(fn)
    return fn


# ================================================================ 5


@case
def health_and_reflection(ctx):
    s = ctx.stubs
    grpc = ctx.grpc
    ch = ctx.daemon.channel()
    health = s.health_grpc.HealthStub(ch)
    serving = s.health.HealthCheckResponse.SERVING
    for name in ("", "conveyor.v1.Transcoder"):
        r = health.Check(s.health.HealthCheckRequest(service=name), timeout=5)
        log("health %r: %s" % (name, s.health.HealthCheckResponse.ServingStatus.Name(r.status)))
        check(r.status == serving, "health %r is %s, want SERVING" % (name, r.status))
    try:
        r = health.Check(s.health.HealthCheckRequest(service="no.such.Service"), timeout=5)
        raise h.CheckFailed("health of an unknown service answered %s, want NOT_FOUND" % r.status)
    except grpc.RpcError as e:
        log("health 'no.such.Service': %s" % e.code().name)
        check(e.code() == grpc.StatusCode.NOT_FOUND, "unknown service: %s, want NOT_FOUND" % e.code())

    refl = s.refl_grpc.ServerReflectionStub(ch)
    R = s.refl.ServerReflectionRequest
    responses = list(refl.ServerReflectionInfo(iter([R(list_services=""),
                                                     R(file_containing_symbol="conveyor.v1.Transcoder")]), timeout=5))
    check(len(responses) == 2, "reflection gave %d responses to 2 requests" % len(responses))
    names = sorted(x.name for x in responses[0].list_services_response.service)
    log("reflection (v1alpha) lists: %s" % names)
    check("conveyor.v1.Transcoder" in names, "reflection does not list conveyor.v1.Transcoder: %s" % names)
    from google.protobuf import descriptor_pb2
    files = {}
    for raw in responses[1].file_descriptor_response.file_descriptor_proto:
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
        files[fd.name] = fd
    log("reflection: the file of conveyor.v1.Transcoder and its deps: %s" % sorted(files))
    fd = files.get("conveyor/v1/transcoder.proto")
    check(fd is not None, "no conveyor/v1/transcoder.proto in %s" % sorted(files))
    svc = {x.name: x for x in fd.service}.get("Transcoder")
    check(svc is not None, "the file holds no service Transcoder")
    methods = {m.name: (m.client_streaming, m.server_streaming) for m in svc.method}
    log("reflection: Transcoder methods %s" % methods)
    check(methods.get("Transcode") == (True, True), "Transcode is not bidirectional streaming: %s" % methods)
    for m in ("GetServerStatus", "ListSessions", "CancelSession"):
        check(m in methods, "method %s missing" % m)

    st = ctx.stub.GetServerStatus(ctx.pb.GetServerStatusRequest(), timeout=5)
    log("status: version %s, workers %s, sessions %d/%d, draining %s" %
        (st.version, [(x.name, x.backend) for x in st.workers], st.sessions_active, st.max_sessions, st.draining))
    check([x.backend for x in st.workers] == ["cpu"] and not st.draining and st.version, "unexpected status %s" % st)


# ================================================================ 6


def one_of(details, needles):
    return any(n.lower() in details.lower() for n in needles)


@case
def bad_inputs(ctx):
    pb = ctx.pb
    grpc = ctx.grpc
    INVALID = grpc.StatusCode.INVALID_ARGUMENT
    good_src = h264_file(ctx.path("good.mkv"), "640x360", 48)
    trunc_src = h264_file(ctx.path("whole.mkv"), "320x240", 24)
    with open(trunc_src, "rb") as f:
        whole = f.read()
    half = whole[:len(whole) // 2]
    h.ffmpeg(*(testsrc("320x240") + ["-frames:v", "6", "-c:v", "ffv1", ctx.path("ffv1.mkv")]))
    garbage = os.urandom(64 * 1024)
    src_frames = h.VideoProbe(trunc_src).nb_read_frames
    r0 = [pb.RenditionSpec()]
    yuv_64x48 = bytes(range(256)) * 18  # 4608 = 64*48*3/2

    def faststart_spec(container_format, seekable):
        spec = container_spec(pb, r0)
        spec.output.container.format = container_format
        spec.output.container.seekable = seekable
        spec.output.container.faststart = True
        return spec

    calls = {
        "garbage": (container_spec(pb, r0), lambda: h.bytes_requests(pb, garbage, 16384)),
        "truncated_mkv": (container_spec(pb, r0), lambda: h.bytes_requests(pb, half, 16384)),
        "ffv1_mkv": (container_spec(pb, r0), lambda: h.container_requests(pb, ctx.path("ffv1.mkv"))),
        "empty_input": (container_spec(pb, r0), lambda: iter(())),
        "raw_wrong_size": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=r0),
                           lambda: h.raw_frame_requests(pb, [(0, yuv_64x48), (1, yuv_64x48[:-10])])),
        "raw_pts_backwards": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=r0),
                              lambda: h.raw_frame_requests(pb, [(5, yuv_64x48), (9, yuv_64x48), (7, yuv_64x48)])),
        "raw_pts_repeated": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=r0),
                             lambda: h.raw_frame_requests(pb, [(0, yuv_64x48), (0, yuv_64x48)])),
        "raw_0x0": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 0, 0, renditions=r0), lambda: iter(())),
        "raw_100000x100000": (raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 100000, 100000, renditions=r0), lambda: iter(())),
        "no_renditions": (container_spec(pb, []), lambda: h.container_requests(pb, good_src)),
        "faststart_mkv": (faststart_spec(pb.CONTAINER_FORMAT_MATROSKA, True), lambda: h.container_requests(pb, good_src)),
        "faststart_live": (faststart_spec(pb.CONTAINER_FORMAT_MOV, False), lambda: h.container_requests(pb, good_src)),
    }
    # The good session sends the first half of its file, then holds until every bad session
    # has ended, then sends the rest: so it is open all through them, whatever the load.
    good_size = os.path.getsize(good_src)
    half_sent, bad_done = threading.Event(), threading.Event()

    def good_requests():
        reqs = list(h.container_requests(pb, good_src, chunk=4096))
        for k, r in enumerate(reqs):
            if k == len(reqs) // 2:
                half_sent.set()
                bad_done.wait(120)
            yield r

    good_spec = container_spec(pb, [pb.RenditionSpec(), pb.RenditionSpec(width=320)], label="pye2e good")
    good_thread = h.Threads()
    good_thread.start("good", h.transcode, ctx.daemon.pb_stub(), pb, good_spec, good_requests())
    check(half_sent.wait(60), "the good session never sent half its input")
    threads = h.Threads()
    for name, (spec, inputs) in calls.items():
        spec.client_label = "pye2e bad " + name
        threads.start(name, h.transcode, ctx.daemon.pb_stub(), pb, spec, inputs(), 60)
    try:
        res = threads.join(180)
    finally:
        bad_done.set()
    res.update(good_thread.join(120))
    # The whole file the truncated one was cut from, for its pts (after the concurrent part).
    res["whole"] = h.transcode(ctx.stub, pb, container_spec(pb, r0), h.container_requests(pb, trunc_src))
    h.expect_ok(res["whole"], "the uncut file")
    for name in list(calls) + ["good"]:
        o = res[name]
        nf = {r: len(v) for r, v in o.frames.items()}
        log("%-18s %-17s %5.2f s  frames %s  %r" % (name, o.code.name, o.seconds, nf, o.details))

    failures = []

    def expect(name, code, needles):
        o = res[name]
        if o.code != code:
            hint = ""
            if o.code == grpc.StatusCode.CANCELLED and "server side" in o.details:
                hint = " (the daemon cancelled the call, losing its status: see e2e_py.bad_frame_status_repeated)"
            failures.append("%s: got %s (%r), want %s%s" % (name, o.code.name, o.details, code.name, hint))
        elif not one_of(o.details, needles):
            failures.append("%s: the message %r names none of %s" % (name, o.details, needles))

    expect("garbage", INVALID, ["format", "input", "invalid data"])
    expect("ffv1_mkv", INVALID, ["ffv1"])  # the codec allow-list refuses it; the message names it
    expect("empty_input", INVALID, ["empty"])
    expect("raw_wrong_size", INVALID, ["frame 1"])
    expect("raw_pts_backwards", INVALID, ["frame 2).pts: 7 is not after the previous frame's pts 9"])
    expect("raw_pts_repeated", INVALID, ["frame 1).pts: 0 is not after the previous frame's pts 0"])
    expect("raw_0x0", INVALID, ["spec.raw.width", "spec.raw.height"])
    expect("raw_100000x100000", INVALID, ["spec.raw.width", "spec.raw.height"])
    expect("no_renditions", INVALID, ["spec.renditions"])
    expect("faststart_mkv", INVALID, ["spec.output.container.faststart: only for MOV"])
    expect("faststart_live", INVALID, ["spec.output.container.faststart: needs seekable output"])

    # Truncated mid-stream (Matroska cut at half its bytes, inside a cluster). A live stream
    # that ends early looks like this, and the bytes before the cut are valid, so the right
    # outcome is what ffmpeg itself does with the file: every frame it can decode from those
    # bytes is delivered, in order, with the source's pts, and the stream ends OK with a
    # Summary that counts them (the frame cut in half is dropped). INVALID_ARGUMENT after
    # those frames would be acceptable too; losing them, or INTERNAL/UNKNOWN, would not.
    half_path = ctx.path("half.mkv")
    with open(half_path, "wb") as f:
        f.write(half)
    ffmpeg_n = h.VideoProbe(half_path).nb_read_frames
    src_pts = [f.pts for f in res["whole"].frames[0]]
    o = res["truncated_mkv"]
    n = len(o.frames.get(0, []))
    log("truncated_mkv: %d bytes of %d sent; %d of %d frames delivered (ffprobe decodes %d from the same bytes); %s" %
        (len(half), len(whole), n, src_frames, ffmpeg_n, o.describe()))
    if o.code not in (grpc.StatusCode.OK, INVALID):
        failures.append("truncated_mkv: got %s (%r), want OK or INVALID_ARGUMENT" % (o.code.name, o.details))
    if not 0 < n < src_frames or n != ffmpeg_n:
        failures.append("truncated_mkv: %d frames delivered from half of a %d-frame file; ffmpeg decodes %d" %
                        (n, src_frames, ffmpeg_n))
    else:
        try:
            check_jpeg_frames(o.frames[0], 320, 240, ctx.work, "trunc")
            check_frame_pts(o, "truncated_mkv", 0, src_pts[:n])
            if o.code == grpc.StatusCode.OK:
                h.expect_ok(o, "truncated_mkv")
                check_summary(o, "truncated_mkv", n, n)
        except h.CheckFailed as e:
            failures.append(str(e))

    g = res["good"]
    try:
        h.expect_ok(g, "good session")
        check_frame_pts(g, "good", 0, [f.pts for f in g.frames[0]])
        check(len(g.frames[0]) == 48 and len(g.frames[1]) == 48,
              "good: %d/%d frames, want 48/48" % (len(g.frames[0]), len(g.frames[1])))
        check(h.strictly_increasing([f.pts for f in g.frames[0]]), "good: pts not increasing")
        check_jpeg_frames(g.frames[0], 640, 360, ctx.work, "good0")
        check_jpeg_frames(g.frames[1], 320, 180, ctx.work, "good1")
        check_summary(g, "good", 48, 48)
        bad_start = min(res[k].t_start for k in calls) - g.t_start
        bad_end = max(res[k].t_end for k in calls) - g.t_start
        log("good session: %d bytes in %.2f s; the bad ones ran from %.2f s to %.2f s into it" %
            (good_size, g.seconds, bad_start, bad_end))
        check(bad_start > 0 and bad_end < g.seconds, "the good session was not running all along")
    except h.CheckFailed as e:
        failures.append(str(e))
    check(not failures, "%d problem(s):\n  " % len(failures) + "\n  ".join(failures))


# ================================================================ 6b


@case
def bad_frame_status_repeated(ctx):
    """The wrong-size raw frame of bad_inputs, 210 times (3 variants, 3 threads): every call
    must end INVALID_ARGUMENT naming the frame. Once, a race can hide the status: a failure
    while a response write (Started, a packet) is still in flight must still reach the client
    as that failure, not as CANCELLED."""
    pb = ctx.pb
    good = bytes(range(256)) * 18  # one 64x48 yuv420p frame
    bad = good[:-10]
    variants = {
        "frame 0": [(0, bad)],
        "frame 1": [(0, good), (1, bad)],
        "frame 1 then more": [(0, good), (1, bad)] + [(k, good) for k in range(2, 30)],
    }
    reps = 70

    def spec():
        return raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=[pb.RenditionSpec()], label="pye2e repeat")

    def worker(name, frames):
        stub = ctx.daemon.pb_stub()
        counts = {}
        for _ in range(reps):
            o = h.transcode(stub, pb, spec(), h.raw_frame_requests(pb, frames), 30)
            key = (o.code.name, o.details)
            counts[key] = counts.get(key, 0) + 1
        return counts

    threads = h.Threads()
    for name, frames in variants.items():
        threads.start(name, worker, name, frames)
    t0 = time.monotonic()
    res = threads.join(240)
    log("%d calls in %.1f s" % (reps * len(variants), time.monotonic() - t0))
    failures = []
    for name, counts in res.items():
        want = "frame " + name.split()[1]
        for (code, details), k in sorted(counts.items(), key=lambda x: -x[1]):
            right = code == "INVALID_ARGUMENT" and want in details
            log("  wrong size at %-18s %3d x %s %r%s" % (name + ":", k, code, details, "" if right else "   <-- wrong"))
            if not right:
                failures.append("wrong size at %s: %d of %d calls ended %s %r, want INVALID_ARGUMENT naming %r" %
                                (name, k, reps, code, details, want))
    check(not failures, "\n  ".join(["status lost:"] + failures))


@case
def health_watch_follows_readiness(ctx):
    """grpc.health.v1 reports readiness as /readyz does: with max_sessions 1, Watch streams
    SERVING, NOT_SERVING while the one session is held open, and SERVING again once it
    ends; Check agrees for both service names."""
    s, pb = ctx.stubs, ctx.pb
    health = s.health_grpc.HealthStub(ctx.daemon.channel())
    H = s.health.HealthCheckResponse
    seen = []
    cv = threading.Condition()
    watch = health.Watch(s.health.HealthCheckRequest(service="conveyor.v1.Transcoder"))

    def read_watch():
        try:
            for r in watch:
                with cv:
                    seen.append(r.status)
                    cv.notify_all()
        except ctx.grpc.RpcError:
            pass  # cancelled at the end

    def wait_for(status, timeout_s=10):
        with cv:
            return cv.wait_for(lambda: seen and seen[-1] == status, timeout=timeout_s)

    def both_names():
        return [health.Check(s.health.HealthCheckRequest(service=n), timeout=5).status
                for n in ("", "conveyor.v1.Transcoder")]

    threading.Thread(target=read_watch, daemon=True).start()
    check(wait_for(H.SERVING), "Watch never said SERVING (saw %s)" % seen)

    release = threading.Event()
    frame = bytes(range(256)) * 18  # one 64x48 yuv420p frame

    def held_input():
        yield from h.raw_frame_requests(pb, [(0, frame)])
        release.wait(30)

    spec = raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, 64, 48, renditions=[pb.RenditionSpec()], label="held")
    threads = h.Threads()
    threads.start("held", h.transcode, ctx.stub, pb, spec, held_input(), 60)
    check(wait_for(H.NOT_SERVING), "Watch did not turn NOT_SERVING at the session cap (saw %s)" % seen)
    check(both_names() == [H.NOT_SERVING] * 2, "Check at the cap: %s, want NOT_SERVING twice" % both_names())
    release.set()
    out = threads.join(60)["held"]
    h.expect_ok(out, "the held session")
    check(wait_for(H.SERVING), "Watch did not return to SERVING after the session ended (saw %s)" % seen)
    check(both_names() == [H.SERVING] * 2, "Check after: %s, want SERVING twice" % both_names())
    watch.cancel()
    log("Watch saw %s" % [H.ServingStatus.Name(x) for x in seen])


FLAGS["health_watch_follows_readiness"] = ["--max-sessions", "1"]


@case
def exit_with_health_watchers(ctx):
    """A balancing client holds a grpc.health.v1 Watch on every daemon for as long as it
    runs. On SIGTERM such a stream turns NOT_SERVING, and the daemon then exits at once
    (with no session, in well under a second) instead of waiting for the watchers to
    leave."""
    s = ctx.stubs
    health = s.health_grpc.HealthStub(ctx.daemon.channel())
    H = s.health.HealthCheckResponse
    seen = []
    watch = health.Watch(s.health.HealthCheckRequest(service="conveyor.v1.Transcoder"))

    def read_watch():
        try:
            for r in watch:
                seen.append(r.status)
        except ctx.grpc.RpcError:
            pass  # the daemon ended the stream

    reader = threading.Thread(target=read_watch, daemon=True)
    reader.start()
    t0 = time.monotonic()
    while not seen and time.monotonic() - t0 < 10:
        time.sleep(0.01)
    check(seen[:1] == [H.SERVING], "Watch never said SERVING (saw %s)" % seen)
    t0 = time.monotonic()
    ctx.daemon.proc.send_signal(signal.SIGTERM)  # not stop(): that closes the watcher's channel first
    rc = ctx.daemon.proc.wait(timeout=10)
    took = time.monotonic() - t0
    reader.join(5)
    log("exit %s %.3f s after SIGTERM; Watch saw %s" % (rc, took, [H.ServingStatus.Name(x) for x in seen]))
    check(rc == 0, "conveyord exited %s" % rc)
    check(H.NOT_SERVING in seen, "the watcher was not told NOT_SERVING before the end (saw %s)" % seen)
    check(took < 1.0, "an idle daemon took %.2f s to exit with a watcher connected" % took)


# ================================================================ 7


@case
def concurrent_8(ctx):
    pb = ctx.pb
    n = 24
    t0 = time.monotonic()
    # Container sessions: each its own size, so that mixed-up output would show.
    containers = [
        ("h264_mkv", h264_file(ctx.path("c0.mkv"), "320x240", n)),
        ("h264_mp4", h264_file(ctx.path("c1.mp4"), "352x288", n, rate=30, extra=["-movflags", "+faststart"])),
        ("h264_ts", h264_file(ctx.path("c2.ts"), "256x144", n)),
    ]
    if h.has_encoder("libvpx-vp9"):
        vp9 = ctx.path("c3.webm")
        h.ffmpeg(*(testsrc("384x216") + ["-frames:v", str(n), "-c:v", "libvpx-vp9", "-deadline", "realtime",
                                         "-cpu-used", "8", vp9]))
        containers.append(("vp9_webm", vp9))
    else:
        containers.append(("h264_mkv2", h264_file(ctx.path("c3.mkv"), "384x216", n)))
    probes = {name: h.VideoProbe(path) for name, path in containers}
    log("media made in %.1f s" % (time.monotonic() - t0))

    # Raw sessions: flat frames whose luma encodes (session, frame), pts with gaps and offsets.
    raw = []
    for s, (w, hh) in enumerate([(160, 120), (192, 108), (96, 64), (224, 128)]):
        frames = []
        for k in range(n):
            y = 16 + (s * 53 + k * 8) % 219
            frames.append((1000 * s + 3 * k, bytes([y]) * (w * hh) + bytes([128]) * (2 * ((w + 1) // 2) * ((hh + 1) // 2))))
        raw.append(("raw%d_%dx%d" % (s, w, hh), w, hh, frames))

    # All 8 start together, and each holds after half its input until all 8 have sent half:
    # so all 8 are open at once, whatever the load.
    start, halfway = threading.Barrier(8, timeout=60), threading.Barrier(8, timeout=60)

    def held(requests):
        reqs = list(requests)
        for k, r in enumerate(reqs):
            if k == len(reqs) // 2:
                halfway.wait()
            yield r

    def run_container(name, path):
        spec = container_spec(pb, [pb.RenditionSpec(name=name)], label="pye2e c8 " + name)
        start.wait()
        return h.transcode(ctx.daemon.pb_stub(), pb, spec, held(h.container_requests(pb, path, chunk=8192)))

    def run_raw(name, w, hh, frames):
        spec = raw_spec(pb, pb.PIXEL_FORMAT_YUV420P, w, hh, rate=(30, 1), label="pye2e c8 " + name,
                        renditions=[pb.RenditionSpec(name=name)], matrix=pb.COLOR_MATRIX_BT601)
        start.wait()
        return h.transcode(ctx.daemon.pb_stub(), pb, spec, held(h.raw_frame_requests(pb, frames)))

    threads = h.Threads()
    for name, path in containers:
        threads.start(name, run_container, name, path)
    for name, w, hh, frames in raw:
        threads.start(name, run_raw, name, w, hh, frames)
    t1 = time.monotonic()
    res = threads.join(240)
    log("8 sessions in %.2f s" % (time.monotonic() - t1))
    last_start = max(o.t_start for o in res.values())
    first_end = min(o.t_end for o in res.values())
    log("all 8 were open together for %.2f s" % (first_end - last_start))
    check(last_start < first_end, "the 8 sessions did not overlap")
    failures = []
    for name, path in containers:
        o, p = res[name], probes[name]
        try:
            h.expect_ok(o, name)
            frames = o.frames.get(0, [])
            check(len(frames) == p.nb_read_frames == n, "%s: %d frames, source %d" % (name, len(frames), p.nb_read_frames))
            check([f.index for f in frames] == list(range(n)), "%s: frame_index out of order" % name)
            tb = o.started.time_base
            got = [f.pts * tb.num / tb.den for f in frames]
            want = sorted(p.frame_pts)
            check(h.strictly_increasing(got), "%s: pts not increasing" % name)
            check(all(abs(a - b) <= 0.5 / p.fps for a, b in zip(got, want)),
                  "%s: frame times %s, source %s" % (name, got[:4], want[:4]))
            check_jpeg_frames(frames, p.width, p.height, ctx.work, name)
            check_summary(o, name, n, n)
            log("%-16s OK %5.2f s  %d frames %dx%d, pts %s..%s (time_base %d/%d)" %
                (name, o.seconds, len(frames), p.width, p.height, frames[0].pts, frames[-1].pts, tb.num, tb.den))
        except h.CheckFailed as e:
            failures.append(str(e))
    for s, (name, w, hh, frames_in) in enumerate(raw):
        o = res[name]
        try:
            h.expect_ok(o, name)
            check_frame_pts(o, name, 0, [p for p, _ in frames_in])
            d = os.path.join(ctx.work, "gray_" + name)
            os.makedirs(d)
            for k, f in enumerate(o.frames[0]):
                info = jpeg_size(f.data)
                check(info and info[:2] == (w, hh), "%s frame %d: %s, want %dx%d" % (name, k, info, w, hh))
                gw, gh, px = djpeg_check(f.data, d, "%04d.jpg" % k, grayscale=True)
                mean = sum(px) / len(px)
                want = (frames_in[k][1][0] - 16) * 255.0 / 219.0
                check(abs(mean - want) <= 2.0, "%s frame %d: mean luma %.1f, want %.1f (someone else's frame?)" %
                      (name, k, mean, want))
            check_summary(o, name, n, n)
            log("%-16s OK %5.2f s  %d frames %dx%d, pts %s..%s, luma matches each frame" %
                (name, o.seconds, len(o.frames[0]), w, hh, o.frames[0][0].pts, o.frames[0][-1].pts))
        except h.CheckFailed as e:
            failures.append(str(e))
    check(not failures, "%d session(s) wrong:\n  " % len(failures) + "\n  ".join(failures))

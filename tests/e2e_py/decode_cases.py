"""End-to-end cases of the decoder choice (JobSpec.decode, decode.mode) on a daemon whose
worker is the CPU: no video engines, so decode auto and cpu decode on the CPU and say so in
Started (decoder "cpu", FFmpeg's decoder name, no hwaccel), decode gpu is refused with
FAILED_PRECONDITION naming it, and a raw-input job cannot ask for the GPU decoder. The
GPU host runs the hardware side (tests/gpu/h200_bundle/decode_identity.sh).
"""

import conveyor_harness as h
from conveyor_harness import check, log

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def spec(pb, decode=None):
    s = pb.JobSpec(container=pb.ContainerInput(), client_label="pye2e decode")
    if decode is not None:
        s.decode = decode
    s.renditions.append(pb.RenditionSpec())
    return s


@case
def decoder_choice_on_a_cpu_worker(ctx):
    pb = ctx.pb
    path = ctx.path("decode.mp4")
    h.ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "0.4", "-c:v", "libx264", "-preset",
             "veryfast", "-pix_fmt", "yuv420p", path)
    frames = None
    for name, decode in (("unspecified", None), ("auto", pb.DECODE_AUTO), ("cpu", pb.DECODE_CPU)):
        o = h.transcode(ctx.stub, pb, spec(pb, decode), h.container_requests(pb, path))
        h.expect_ok(o, "decode " + name)
        st = o.started
        log("decode %s: Started.decoder %r, decoder_name %r, decoder_api %r, notes %r" %
            (name, st.decoder, st.decoder_name, st.decoder_api, list(st.notes)))
        check(st.decoder == "cpu", "decode %s: Started.decoder %r, want cpu" % (name, st.decoder))
        check(st.decoder_name == "h264", "decode %s: Started.decoder_name %r, want h264" % (name, st.decoder_name))
        check(st.decoder_api == "", "decode %s: Started.decoder_api %r on the CPU" % (name, st.decoder_api))
        check(not any(n.startswith("decode:") for n in st.notes),
              "decode %s: a CPU worker has nothing to explain: %r" % (name, list(st.notes)))
        got = [f.data for f in o.frames[0]]
        check(len(got) == 10, "decode %s: %d frames, want 10" % (name, len(got)))
        if frames is None:
            frames = got
        check(got == frames, "decode %s: other JPEG bytes than the first run's" % name)
    o = h.transcode(ctx.stub, pb, spec(pb, pb.DECODE_GPU), h.container_requests(pb, path))
    h.expect_error(o, "decode gpu on the CPU worker", ctx.grpc.StatusCode.FAILED_PRECONDITION, "decode: gpu",
                   "video engines")
    check(not o.frames, "decode gpu: frames came before the refusal")
    raw = pb.JobSpec(raw=pb.RawInput(width=64, height=64, pixel_format=pb.PIXEL_FORMAT_YUV420P),
                     decode=pb.DECODE_GPU)
    raw.renditions.append(pb.RenditionSpec())
    o = h.transcode(ctx.stub, pb, raw, ())
    h.expect_error(o, "raw input with decode gpu", ctx.grpc.StatusCode.INVALID_ARGUMENT, "spec.decode")
    o = h.transcode(ctx.stub, pb, spec(pb, 7), h.container_requests(pb, path))
    h.expect_error(o, "an unknown decode value", ctx.grpc.StatusCode.INVALID_ARGUMENT, "spec.decode")

"""Tools for the Python client's tests: conveyord from the build on a unix socket, media
from the ffmpeg CLI, and checks with ffprobe and djpeg. Standard library only; the
package under test is imported by the cases, never here."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Skip(Exception):
    """The case cannot run on this host: exit code 77, with the reason."""


class CheckFailed(AssertionError):
    pass


def check(cond, message):
    if not cond:
        raise CheckFailed(message)


def log(message):
    print(message, flush=True)


def run(argv, timeout=300, **kwargs):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, **kwargs)
    if p.returncode != 0:
        raise CheckFailed("command failed (rc=%d): %s\n%s" %
                          (p.returncode, " ".join(argv), p.stderr.decode(errors="replace")[-3000:]))
    return p


def require_tools():
    try:
        import grpc  # noqa: F401
        import google.protobuf  # noqa: F401
    except ImportError as e:
        raise Skip("%s has no %s (apt-get install python3-grpcio python3-protobuf)" % (sys.executable, e.name))
    for tool, package in (("ffmpeg", "ffmpeg"), ("ffprobe", "ffmpeg"), ("djpeg", "libjpeg-turbo-progs")):
        if shutil.which(tool) is None:
            raise Skip("%s is missing (apt-get install %s)" % (tool, package))


def work_dir(tag):
    return tempfile.mkdtemp(prefix="conveyor-pyclient-%s-" % tag)


class Daemon:
    """conveyord --workers cpu on WORK/conveyord.sock; target is its gRPC address."""

    def __init__(self, binary, work, config=""):
        self.socket_path = os.path.join(work, "conveyord.sock")
        self.target = "unix:" + self.socket_path
        self.log_path = os.path.join(work, "conveyord.log")
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen([binary, "--config", config, "--listen", self.target, "--workers", "cpu",
                                      "--cpu-threads", "2", "--log-level", "warn", "--metrics-listen", ""],
                                     stdout=self._log, stderr=subprocess.STDOUT)
        # The socket file appears at bind(), a moment before listen(): wait until a
        # connection is taken, or the first call can meet "Connection refused".
        give_up = time.monotonic() + 30
        while not self._accepts():
            check(self.proc.poll() is None, "conveyord exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            check(time.monotonic() < give_up, "conveyord took no connection on its socket in 30 s")
            time.sleep(0.02)

    def _accepts(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(self.socket_path)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def log_tail(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-3000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return self.proc.returncode


def ffmpeg(*args):
    run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + list(args))


def make_h264(path, seconds, size="320x180", rate=25, gop=25, faststart=False):
    """testsrc2 in H.264 with a keyframe every `gop` frames; an MP4's moov follows mdat
    unless faststart."""
    args = ["-f", "lavfi", "-i", "testsrc2=size=%s:rate=%d" % (size, rate), "-t", str(seconds),
            "-c:v", "libx264", "-preset", "ultrafast", "-g", str(gop), "-keyint_min", str(gop),
            "-sc_threshold", "0", "-bf", "2", "-pix_fmt", "yuv420p"]
    if faststart:
        args += ["-movflags", "+faststart"]
    ffmpeg(*(args + [path]))
    return path


def probe_frames(path, *extra):
    """[(pts_seconds, key)] of the first video stream's decoded frames, in output order."""
    p = run(["ffprobe", "-v", "error", "-of", "json"] + list(extra) +
            ["-select_streams", "v:0", "-show_entries", "frame=pts_time,key_frame", path])
    return [(float(f["pts_time"]), f.get("key_frame") == 1) for f in json.loads(p.stdout)["frames"]]


def probe_container(path):
    """(format_name, format duration or None, decoded video frame count, codec, width, height)."""
    p = run(["ffprobe", "-v", "error", "-of", "json", "-count_frames", "-select_streams", "v:0",
             "-show_entries", "stream=codec_name,width,height,nb_read_frames:format=format_name,duration", path])
    j = json.loads(p.stdout)
    s = j["streams"][0]
    duration = j["format"].get("duration")
    return (j["format"]["format_name"], float(duration) if duration else None, int(s["nb_read_frames"]),
            s["codec_name"], s["width"], s["height"])


def djpeg_size(data, work, name):
    """(width, height) of a JPEG that djpeg decodes without a warning."""
    path = os.path.join(work, name)
    with open(path, "wb") as f:
        f.write(data)
    p = subprocess.run(["djpeg", "-pnm", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0 and not p.stderr, "%s: djpeg rc=%d: %s" % (name, p.returncode, p.stderr.decode()))
    fields = p.stdout.split(None, 4)
    return int(fields[1]), int(fields[2])


def close_to(a, b, tol=1e-3):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))

#!/usr/bin/env python3
"""Three conveyord on 127.0.0.2, .3 and .4 acting as one service behind one ipv4: target,
with conveyorctl and the Python client balancing round robin over the daemons whose
grpc.health.v1 says SERVING:

1. 30 concurrent conveyorctl transcodes: each daemon serves some (its metrics say how
   many), and every output has all its frames.
2. A drain: one daemon gets SIGTERM while its sessions are mid-input. They finish; no new
   call reaches it while six more run (its health says NOT_SERVING, so its started and
   refused counts stay put), and the other two take them.
3. A crash: one daemon is stopped (SIGSTOP) while sessions on it have written output, six
   calls are made through one Python client already connected to all three (round robin
   sends two to the stopped one, where they hang), then it gets SIGKILL. Its sessions that had written output fail with
   UNAVAILABLE and leave no output behind; the calls that had not are made again on the
   others and finish whole. Nothing is silently truncated.

Standard library plus Debian's grpcio (for the Python client under test)."""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

SHORT_FRAMES = 50   # short.mp4: 2 s at 25 frames/s
PAUSED_FRAMES = 100  # paused.mkv: 4 s at 25 frames/s, sent with a pause part way


class CheckFailed(AssertionError):
    pass


def check(cond, message):
    if not cond:
        raise CheckFailed(message)


def log(message):
    print(message, flush=True)


class Daemon:
    """conveyord on HOST:0 (gRPC and metrics), its ports read from its endpoints file."""

    def __init__(self, binary, host, work, name):
        self.name = name
        self.log_path = os.path.join(work, name + ".log")
        endpoints = os.path.join(work, name + ".endpoints")
        argv = [binary, "--config", "", "--listen", host + ":0", "--metrics-listen", host + ":0",
                "--endpoints-file", endpoints, "--workers", "cpu", "--cpu-threads", "1", "--max-sessions", "40",
                "--drain-timeout", "60", "--log-level", "info"]
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)
        give_up = time.monotonic() + 30
        self.grpc = self.metrics = None
        while self.grpc is None or self.metrics is None:
            check(self.proc.poll() is None, "%s exited early:\n%s" % (name, self.log_tail()))
            check(time.monotonic() < give_up, "%s wrote no endpoints file" % name)
            time.sleep(0.05)
            try:
                with open(endpoints) as f:
                    for line in f:
                        kind, _, address = line.strip().partition(" ")
                        if kind == "grpc":
                            self.grpc = address
                        elif kind == "metrics":
                            self.metrics = address
            except OSError:
                pass
        while self.ready() is None:
            check(time.monotonic() < give_up, "%s never answered /readyz" % name)
            time.sleep(0.05)

    def log_tail(self, n=3000):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-n:]
        except OSError:
            return ""

    def ready(self):
        """True/False from /readyz (200/503); None when it does not answer."""
        try:
            with urllib.request.urlopen("http://%s/readyz" % self.metrics, timeout=2) as r:
                return r.status == 200
        except urllib.error.HTTPError as e:
            return False if e.code == 503 else None
        except OSError:
            return None

    def metric(self, name):
        with urllib.request.urlopen("http://%s/metrics" % self.metrics, timeout=5) as r:
            text = r.read().decode()
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        check(m is not None, "%s has no %s" % (self.name, name))
        return float(m.group(1))

    def started(self):
        return int(self.metric("conveyor_sessions_started_total"))

    def active(self):
        return int(self.metric("conveyor_sessions_active"))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


class Ctl:
    """One conveyorctl transcode into its own directory of JPEG frames."""

    def __init__(self, conveyorctl, target, source, out_dir, label, pause_after=None, pause_s=0):
        self.out_dir = out_dir
        self.label = label
        argv = [conveyorctl, "--target", target, "transcode", "-" if pause_after else source, "-o", out_dir,
                "--no-progress-bar", "--label", label]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE if pause_after else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.feeder = None
        if pause_after:
            # The input as a live source sends it: part, a pause, the rest.
            def feed():
                try:
                    with open(source, "rb") as f:
                        data = f.read()
                    self.proc.stdin.write(data[:pause_after])
                    self.proc.stdin.flush()
                    time.sleep(pause_s)
                    self.proc.stdin.write(data[pause_after:])
                    self.proc.stdin.close()
                except (BrokenPipeError, ValueError):
                    pass  # the call is over (the daemon was killed)
            self.feeder = threading.Thread(target=feed, daemon=True)
            self.feeder.start()
        self.rc = self.out = self.err = None

    def wait(self, timeout=120):
        if self.feeder is not None:
            self.feeder.join(timeout)  # communicate() would close stdin under it
            self.proc.stdin = None
        out, err = self.proc.communicate(timeout=timeout)
        self.rc, self.out, self.err = self.proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        return self

    def jpegs(self):
        if not os.path.isdir(self.out_dir):
            return 0
        return len([n for n in os.listdir(self.out_dir) if n.endswith(".jpg")])

    def expect_whole(self, frames, what):
        check(self.rc == 0, "%s (%s): exit %s: %s" % (what, self.label, self.rc, self.err.strip()[-500:]))
        check(self.jpegs() == frames, "%s (%s): %d JPEGs, want %d" % (what, self.label, self.jpegs(), frames))


def ffmpeg(*args):
    subprocess.run(["ffmpeg", "-v", "error", "-y"] + list(args), check=True)


def wait_until(cond, timeout_s, what):
    give_up = time.monotonic() + timeout_s
    while not cond():
        check(time.monotonic() < give_up, "timed out waiting for " + what)
        time.sleep(0.05)


def ipv4_target(daemons):
    return "ipv4:" + ",".join(d.grpc for d in daemons)


def spread(conveyorctl, daemons, work, short):
    target = ipv4_target(daemons)
    before = [d.started() for d in daemons]
    calls = [Ctl(conveyorctl, target, short, os.path.join(work, "spread", str(i)), "spread-%d" % i)
             for i in range(30)]
    for c in calls:
        c.wait()
    for c in calls:
        c.expect_whole(SHORT_FRAMES, "30 at once")
    served = [d.started() - b for d, b in zip(daemons, before)]
    log("30 concurrent transcodes through %s: %s" % (target, dict(zip((d.name for d in daemons), served))))
    check(sum(served) == 30, "the daemons started %d sessions for 30 calls" % sum(served))
    check(all(n > 0 for n in served), "a daemon served none of the 30: %s" % served)


def drain(conveyorctl, conveyor, daemons, work, short, paused, pause_at):
    a, others = daemons[0], daemons[1:]
    # Three sessions on each daemon, held mid-input by their paused sources.
    held = [Ctl(conveyorctl, d.grpc, paused, os.path.join(work, "held", "%s-%d" % (d.name, i)),
                "held-%s-%d" % (d.name, i), pause_after=pause_at, pause_s=8)
            for d in daemons for i in range(3)]
    wait_until(lambda: all(d.active() >= 3 for d in daemons), 30, "three sessions on each daemon")
    a.proc.send_signal(signal.SIGTERM)
    wait_until(lambda: a.ready() is False, 10, a.name + " to say it is draining")
    started_on_a = a.started()
    refused_by_a = a.metric('conveyor_sessions_rejected_total{reason="draining"}')
    before = [d.started() for d in others]
    client = conveyor.Client(ipv4_target(daemons))
    try:
        results = {}

        def one(i):
            try:
                results[i] = len(list(client.frames(short, label="after-drain-%d" % i)))
            except Exception as e:  # reported below
                results[i] = e
        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        client.close()
    check(all(results.get(i) == SHORT_FRAMES for i in range(6)), "calls during the drain: %s" % results)
    check(a.proc.poll() is None, "%s ended before its held sessions" % a.name)
    check(a.started() == started_on_a, "%s started %d sessions while draining" % (a.name, a.started() - started_on_a))
    # Health checking kept the calls off it: none even reached it to be refused.
    refused = a.metric('conveyor_sessions_rejected_total{reason="draining"}') - refused_by_a
    check(refused == 0, "%d calls reached %s while it said NOT_SERVING" % (refused, a.name))
    took = [d.started() - b for d, b in zip(others, before)]
    log("during %s's drain the others took %s of 6 calls" % (a.name, took))
    check(sum(took) == 6, "the other daemons started %d sessions for 6 calls" % sum(took))
    for c in held:
        c.wait()
        c.expect_whole(PAUSED_FRAMES, "held through the drain")
    check(a.proc.wait(timeout=60) == 0, "%s exited %s after its drain" % (a.name, a.proc.returncode))
    log("%s drained: its held sessions finished whole, and it exited 0" % a.name)


def crash(conveyorctl, conveyor, daemons, work, short, paused, pause_at):
    b = daemons[1]
    held = [Ctl(conveyorctl, d.grpc, paused, os.path.join(work, "crash", "%s-%d" % (d.name, i)),
                "crash-%s-%d" % (d.name, i), pause_after=pause_at, pause_s=6)
            for d in daemons for i in range(2)]
    # Each has output written: its directory holds JPEGs from the part before the pause.
    wait_until(lambda: all(c.jpegs() > 0 for c in held), 30, "output from every held session")
    on_b = [c for c in held if c.label.startswith("crash-%s-" % b.name)]
    # A client already connected to every daemon (a stopped one would never finish a new
    # connection's handshake, and so never be picked).
    client = conveyor.Client(ipv4_target(daemons))
    results, ended = {}, {}
    try:
        for i in range(3):
            check(len(list(client.frames(short, label="warm-%d" % i))) == SHORT_FRAMES, "a warm-up call")
        b.proc.send_signal(signal.SIGSTOP)

        def one(i):
            try:
                results[i] = len(list(client.frames(short, label="crash-call-%d" % i)))
            except Exception as e:  # reported below
                results[i] = e
            ended[i] = time.monotonic()
        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        time.sleep(1.5)  # the two sent to the stopped daemon hang
        killed_at = time.monotonic()
        b.proc.kill()
        b.proc.wait()
        for t in threads:
            t.join(60)
    finally:
        client.close()
    check(all(results.get(i) == SHORT_FRAMES for i in range(6)), "calls around the crash: %s" % results)
    retried = sum(1 for i in range(6) if ended[i] > killed_at)
    log("around %s's crash: %d of 6 calls ended after it, made again on another daemon" % (b.name, retried))
    check(retried >= 1, "no call waited on the stopped daemon: round robin should have sent it two")
    for c in held:
        c.wait()
        if c in on_b:
            check(c.rc != 0 and "UNAVAILABLE" in c.err,
                  "%s had output when its daemon died: exit %s, %r" % (c.label, c.rc, c.err.strip()[-300:]))
            check(not os.path.exists(c.out_dir), "%s left partial output in %s" % (c.label, c.out_dir))
        else:
            c.expect_whole(PAUSED_FRAMES, "on a daemon that lived")
    log("%s's sessions with output ended UNAVAILABLE and left nothing; the others finished whole" % b.name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conveyord", required=True)
    ap.add_argument("--conveyorctl", required=True)
    ap.add_argument("--python-path", required=True)
    args = ap.parse_args()
    sys.path.insert(0, args.python_path)
    import conveyor  # the package under test, from the build's tree

    work = tempfile.mkdtemp(prefix="conveyor-scale-out-")
    daemons = []
    try:
        short = os.path.join(work, "short.mp4")
        paused = os.path.join(work, "paused.mkv")
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "2", "-c:v", "libx264", "-g", "25", short)
        ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "4", "-c:v", "libx264", "-g", "25", paused)
        pause_at = os.path.getsize(paused) * 2 // 5
        daemons = [Daemon(args.conveyord, "127.0.0.%d" % (i + 2), work, "d%d" % (i + 2)) for i in range(3)]
        log("daemons: %s" % ", ".join("%s %s" % (d.name, d.grpc) for d in daemons))
        spread(args.conveyorctl, daemons, work, short)
        drain(args.conveyorctl, conveyor, daemons, work, short, paused, pause_at)
        daemons[0].stop()
        daemons[0] = Daemon(args.conveyord, "127.0.0.2", work, "d2b")
        crash(args.conveyorctl, conveyor, daemons, work, short, paused, pause_at)
        log("PASS")
        return 0
    except CheckFailed as e:
        log("FAIL: %s" % e)
        for d in daemons:
            log("--- %s log tail:\n%s" % (d.name, d.log_tail()))
        return 1
    finally:
        for d in daemons:
            d.stop()
        if os.environ.get("CONVEYOR_KEEP_WORK"):
            log("kept " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

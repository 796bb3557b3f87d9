#!/usr/bin/env python3
"""What the schemas cannot see: the rendered overlays (JSON from validate.mjs) against the
config conveyord resolves from them, against each other, and against the container recipe
and the packaging. Prints each check; exits 1 on any failure. With --self-test it also
breaks copies of the objects and config on purpose, and fails unless each breakage is found."""
import argparse
import atexit
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

# What each overlay is: its workload kind, its GPU resource, the workers it must run and
# the image (the package's name) it must name.
OVERLAYS = {
    "nvidia": dict(kind="DaemonSet", gpu="nvidia.com/gpu", workers="gpu", image="conveyor-nvidia", tls=False),
    "amd": dict(kind="DaemonSet", gpu="amd.com/gpu", workers="gpu", image="conveyor-amd", tls=False),
    "cpu": dict(kind="Deployment", gpu=None, workers="cpu", image="conveyor-cpu", tls=False),
    "nvidia-tls": dict(kind="DaemonSet", gpu="nvidia.com/gpu", workers="gpu", image="conveyor-nvidia", tls=True),
}
GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
VIDEO_GID = 44  # fixed by Debian's base-passwd
# The margin past the drain that the pod gets to stop, as the systemd unit leaves it.
STOP_MARGIN_S = 15
# The pod-template fields in which the flavours may differ (the rest must be equal).
FLAVOUR_FIELDS = ("nodeSelector", "affinity", "tolerations", "topologySpreadConstraints")
FLAVOUR_CONTAINER_FIELDS = ("args", "resources", "image")


class Ctx:
    """What the checks compare against, read once."""

    def __init__(self, args):
        self.conveyord = args.conveyord
        self.containerfile_text = open(args.containerfile).read()
        self.containerfile = parse_containerfile(self.containerfile_text)
        self.version = re.search(r"project\(conveyor VERSION ([0-9.]+)", open(args.cmake_lists).read()).group(1)
        self.cpack = dict(re.findall(r'^set\((CPACK_\w+) "([^"]*)"\)$', open(args.cpack_config).read(), re.M))
        self.exported = set(re.findall(r'"(conveyor_[a-z_]+)"', open(args.daemon_metrics).read()))
        with open(args.adapter_rules) as f:
            self.adapter_rules = json.load(f)[0]["rules"]["custom"]
        self.tmp = tempfile.mkdtemp(prefix="conveyor-k8s-check.")
        atexit.register(shutil.rmtree, self.tmp, ignore_errors=True)


def parse_containerfile(text):
    text = re.sub(r"\\\n", " ", text)
    out = {"args": {}, "lines": []}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        word, _, rest = line.partition(" ")
        out["lines"].append((word.upper(), rest.strip()))
        if word.upper() == "ARG" and "=" in rest:
            k, v = rest.split("=", 1)
            out["args"][k.strip()] = v.strip()
    return out


def expand(s, variables):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables.get(m.group(1) or m.group(2), m.group(0)), s)


class Checks:
    def __init__(self, name):
        self.name, self.failures, self.passed = name, [], []

    def expect(self, ok, what, why=""):
        (self.passed if ok else self.failures).append(what if ok else f"{what}: {why}")
        return ok


def one(objects, kind):
    found = [o for o in objects if o["kind"] == kind]
    return found[0] if len(found) == 1 else None


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def resolve_port(container, port):
    if isinstance(port, int):
        return port
    for p in container.get("ports", []):
        if p.get("name") == port:
            return p["containerPort"]
    return None


def host_port(address):
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def run_daemon(ctx, argv, config_text):
    path = os.path.join(ctx.tmp, "conveyord.toml")
    with open(path, "w") as f:
        f.write(config_text)
    argv = [a if a != "@CONFIG@" else path for a in argv]
    return subprocess.run([ctx.conveyord, *argv], capture_output=True, text=True, timeout=60)


def resolved_config(ctx, objects, checks):
    """The config the container's command line makes of the ConfigMap, as conveyord prints it."""
    workload = one(objects, OVERLAYS[checks.name]["kind"])
    pod = workload["spec"]["template"]["spec"]
    container = pod["containers"][0]
    command = container.get("command", [])
    if not checks.expect(command[:2] == ["/usr/bin/conveyord", "--config"] and len(command) >= 3,
                         "the command is conveyord --config FILE", f"command is {command}"):
        return None
    config_path = command[2]
    mount = next((m for m in container.get("volumeMounts", []) if m["mountPath"] == os.path.dirname(config_path)), None)
    volume = next((v for v in pod.get("volumes", []) if mount and v["name"] == mount["name"]), None)
    cm_name = (volume or {}).get("configMap", {}).get("name")
    cm = next((o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == cm_name), None)
    key = os.path.basename(config_path)
    if not checks.expect(cm is not None and key in cm.get("data", {}),
                         f"--config {config_path} is the ConfigMap's {key}, mounted",
                         f"no ConfigMap volume mounted at {os.path.dirname(config_path)} with key {key}"):
        return None
    text = cm["data"][key]
    alone = run_daemon(ctx, ["--config", "@CONFIG@", "--print-config"], text)
    checks.expect(alone.returncode == 0, "conveyord --config CONFIGMAP --print-config accepts the file",
                  alone.stderr.strip())
    full = run_daemon(ctx, ["--config", "@CONFIG@", *command[3:], *container.get("args", []), "--print-config"], text)
    if not checks.expect(full.returncode == 0, "conveyord accepts the container's whole command line",
                         full.stderr.strip()):
        return None
    return tomllib.loads(full.stdout)


def check_overlay(ctx, name, objects):
    expect = OVERLAYS[name]
    checks = Checks(name)
    workload = one(objects, expect["kind"])
    if not checks.expect(workload is not None, f"one {expect['kind']}", "missing or repeated"):
        return checks
    other = "Deployment" if expect["kind"] == "DaemonSet" else "DaemonSet"
    checks.expect(one(objects, other) is None and not any(o["kind"] == other for o in objects), f"no {other}", "found one")
    namespace = one(objects, "Namespace")
    ns = namespace["metadata"]["name"] if namespace else None
    checks.expect(ns is not None and all(o["metadata"].get("namespace") == ns for o in objects if o["kind"] != "Namespace"),
                  f"every object in namespace {ns}",
                  ", ".join(f"{o['kind']} in {o['metadata'].get('namespace')}" for o in objects
                            if o["kind"] != "Namespace" and o["metadata"].get("namespace") != ns))
    template = workload["spec"]["template"]
    pod, labels = template["spec"], template["metadata"].get("labels", {})
    checks.expect(selects(workload["spec"]["selector"].get("matchLabels"), labels), "the workload selects its pods", "")
    container = pod["containers"][0]
    config = resolved_config(ctx, objects, checks)
    if config is None:
        return checks
    server, workers = config["server"], config["workers"]

    # gRPC: the port the daemon listens on is the container's and the Service's.
    grpc_port = resolve_port(container, "grpc")
    tcp = [host_port(a) for a in server["listen"] if not a.startswith("unix:")]
    checks.expect(len(tcp) == 1 and tcp[0][0] not in ("127.0.0.1", "::1", "localhost") and tcp[0][1] == grpc_port,
                  f"server.listen {server['listen']} serves the container port grpc ({grpc_port}) on the pod address",
                  f"container port grpc is {grpc_port}")
    service = one(objects, "Service")
    if checks.expect(service is not None, "a Service", "missing"):
        spec = service["spec"]
        checks.expect(spec.get("clusterIP") == "None", "the Service is headless (clusterIP: None)",
                      f"clusterIP is {spec.get('clusterIP', 'not set')}")
        checks.expect(selects(spec.get("selector"), labels), "the Service selects the pods", f"{spec.get('selector')}")
        sp = next((p for p in spec.get("ports", []) if p.get("name") == "grpc"), {})
        checks.expect(resolve_port(container, sp.get("targetPort", sp.get("port"))) == grpc_port and sp.get("port") == grpc_port,
                      f"the Service's port grpc ({sp.get('port')}) targets the daemon's gRPC port",
                      f"targetPort {sp.get('targetPort')}")
        checks.expect(not spec.get("publishNotReadyAddresses", False), "only ready pods are published", "")

    # Metrics and probes: the kubelet and Prometheus reach the port the daemon serves.
    mhost, mport = host_port(server["metrics_listen"])
    checks.expect(mhost in ("0.0.0.0", "::", "") and mport == resolve_port(container, "metrics"),
                  f"server.metrics_listen {server['metrics_listen']} is the container port metrics on the pod address",
                  f"container port metrics is {resolve_port(container, 'metrics')}")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz"), ("startupProbe", "/healthz")):
        get = container.get(probe, {}).get("httpGet", {})
        required = probe != "startupProbe"
        if not get and not required:
            continue
        checks.expect(get.get("path") == path and resolve_port(container, get.get("port")) == mport,
                      f"{probe} GETs {path} on the metrics port {mport}",
                      f"GETs {get.get('path')} on port {get.get('port')}")
    monitor = one(objects, "PodMonitor")
    if checks.expect(monitor is not None, "a PodMonitor", "missing"):
        endpoints = monitor["spec"].get("podMetricsEndpoints", [])
        checks.expect(selects(monitor["spec"]["selector"].get("matchLabels"), labels) and len(endpoints) == 1
                      and resolve_port(container, endpoints[0].get("port")) == mport
                      and endpoints[0].get("path", "/metrics") == "/metrics",
                      f"the PodMonitor scrapes /metrics on port {mport} of the pods", f"{endpoints}")

    # Stopping: the drain ends before the kubelet's SIGKILL.
    grace, drain = pod.get("terminationGracePeriodSeconds", 30), workers["drain_timeout_s"]
    checks.expect(grace >= drain + STOP_MARGIN_S,
                  f"terminationGracePeriodSeconds {grace} >= workers.drain_timeout_s {drain:g} + {STOP_MARGIN_S}",
                  "the kubelet would kill the daemon mid-drain")

    # Workers and the GPU resource of the flavour.
    checks.expect(workers["workers"] == expect["workers"], f"workers.workers is {expect['workers']}",
                  f"resolves to {workers['workers']}")
    limits = container.get("resources", {}).get("limits", {})
    for resource in GPU_RESOURCES:
        if resource == expect["gpu"]:
            checks.expect(isinstance(limits.get(resource), int) and limits[resource] >= 1,
                          f"limits ask for {resource}", f"limits are {limits}")
        else:
            checks.expect(resource not in limits, f"no {resource}", f"limits are {limits}")
    image = f"{expect['image']}:{ctx.version}"
    checks.expect(container.get("image") == image, f"the image is {image}", f"it is {container.get('image')}")

    # Security: the restricted profile, and somewhere to write for each path the daemon writes.
    psc, csc = pod.get("securityContext", {}), container.get("securityContext", {})
    uid, gid = ctx.containerfile_user
    checks.expect(psc.get("runAsNonRoot") is True and psc.get("runAsUser") == uid and psc.get("runAsGroup") == gid,
                  f"runAsNonRoot as {uid}:{gid}, the Containerfile's USER",
                  f"runAsNonRoot {psc.get('runAsNonRoot')}, {psc.get('runAsUser')}:{psc.get('runAsGroup')}")
    checks.expect(csc.get("readOnlyRootFilesystem") is True and csc.get("allowPrivilegeEscalation") is False
                  and csc.get("capabilities", {}).get("drop") == ["ALL"] and not csc.get("capabilities", {}).get("add")
                  and not csc.get("privileged"),
                  "readOnlyRootFilesystem, no privilege escalation, every capability dropped", f"{csc}")
    seccomp = csc.get("seccompProfile", psc.get("seccompProfile", {})).get("type")
    checks.expect(seccomp == "RuntimeDefault", "seccomp RuntimeDefault", f"{seccomp}")
    checks.expect(not any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC"))
                  and not any("hostPath" in v for v in pod.get("volumes", [])),
                  "no host namespaces or hostPath volumes", "")
    if expect["gpu"]:
        groups = psc.get("supplementalGroups", [])
        checks.expect(VIDEO_GID in groups and ctx.render_gid in groups,
                      f"supplementalGroups {groups} hold video ({VIDEO_GID}) and render ({ctx.render_gid})", "")
    emptydirs = {v["name"] for v in pod.get("volumes", []) if "emptyDir" in v}
    writable = [m["mountPath"] for m in container.get("volumeMounts", []) if m["name"] in emptydirs and not m.get("readOnly")]
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    for what, path in (("server.spool_directory", server["spool_directory"]), ("/tmp", "/tmp"),
                       ("$HOME", env.get("HOME")), ("$RUNTIME_DIRECTORY", env.get("RUNTIME_DIRECTORY"))):
        checks.expect(path is not None and any(path == w or path.startswith(w + "/") for w in writable),
                      f"{what} ({path}) is on a writable emptyDir", f"writable mounts are {writable}")

    # Disruptions and scaling.
    pdb = one(objects, "PodDisruptionBudget")
    if checks.expect(pdb is not None and selects(pdb["spec"]["selector"].get("matchLabels"), labels),
                     "a PodDisruptionBudget for the pods", "missing or selecting other pods"):
        if expect["kind"] == "DaemonSet":
            # Without a scale subresource only an integer minAvailable is allowed.
            checks.expect(isinstance(pdb["spec"].get("minAvailable"), int) and "maxUnavailable" not in pdb["spec"],
                          "the DaemonSet's budget is an integer minAvailable", f"{pdb['spec']}")
    hpa = one(objects, "HorizontalPodAutoscaler")
    if expect["kind"] == "Deployment":
        check_hpa(ctx, checks, hpa, workload)
    else:
        checks.expect(hpa is None, "no HPA (a DaemonSet scales by nodes)", "found one")

    # Transport: plaintext inside the cluster, or TLS from the Secret.
    if expect["tls"]:
        cert_dir = os.path.dirname(server["tls_cert_file"])
        secret_volumes = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
        checks.expect(server["tls_cert_file"] and server["tls_key_file"] and not server["allow_insecure_tcp"]
                      and any(m["mountPath"] == cert_dir and m["name"] in secret_volumes
                              for m in container.get("volumeMounts", [])),
                      f"TLS from the Secret mounted at {cert_dir}, plaintext off", f"{server}")
    else:
        checks.expect(server["allow_insecure_tcp"] and not server["tls_cert_file"],
                      "plaintext gRPC inside the cluster (allow_insecure_tcp)", "")
    return checks


def check_hpa(ctx, checks, hpa, workload):
    if not checks.expect(hpa is not None, "an HPA for the Deployment", "missing"):
        return
    target = hpa["spec"]["scaleTargetRef"]
    checks.expect(target["kind"] == workload["kind"] and target["name"] == workload["metadata"]["name"],
                  "the HPA scales the Deployment", f"{target}")
    checks.expect("replicas" not in workload["spec"], "the Deployment leaves replicas to the HPA", "it sets replicas")
    metrics = hpa["spec"].get("metrics", [])
    names = [m["pods"]["metric"]["name"] for m in metrics if m.get("type") == "Pods"]
    rules = {r["name"]["as"]: r for r in ctx.adapter_rules}
    checks.expect(len(names) == 1 and names[0] in rules,
                  f"the HPA's Pods metric {names} is the adapter rule's", f"rules define {sorted(rules)}")
    for name in names:
        rule = rules.get(name, {})
        used = set(re.findall(r"conveyor_[a-z_]+", rule.get("seriesQuery", "") + rule.get("metricsQuery", "")))
        checks.expect(used == {"conveyor_sessions_active", "conveyor_sessions_max"} and used <= ctx.exported,
                      f"the rule divides conveyor_sessions_active by conveyor_sessions_max, both exported",
                      f"it uses {sorted(used)}; exported: {sorted(used & ctx.exported)}")


def strip_flavour(pod):
    pod = copy.deepcopy(pod)
    for k in FLAVOUR_FIELDS:
        pod.pop(k, None)
    pod.get("securityContext", {}).pop("supplementalGroups", None)
    c = pod["containers"][0]
    for k in FLAVOUR_CONTAINER_FIELDS:
        c.pop(k, None)
    c["env"] = [e for e in c.get("env", []) if not e["name"].startswith("NVIDIA_")]
    return pod


def check_across(ctx, rendered):
    checks = Checks("across overlays")
    pods = {n: one(objs, OVERLAYS[n]["kind"])["spec"]["template"]["spec"] for n, objs in rendered.items()
            if one(objs, OVERLAYS[n]["kind"])}
    if "nvidia" in pods and "cpu" in pods:
        a, b = strip_flavour(pods["nvidia"]), strip_flavour(pods["cpu"])
        diff = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        diff += sorted(f"containers[0].{k}" for k in set(a["containers"][0]) | set(b["containers"][0])
                       if a["containers"][0].get(k) != b["containers"][0].get(k))
        checks.expect(not diff, "the DaemonSet's and the Deployment's pod templates agree but for the flavour's fields",
                      f"they differ in {diff}")
    # The TLS component's config file is a copy of base's with the key pair: nothing else may drift.
    quiet = Checks("nvidia")
    plain = resolved_config(ctx, rendered["nvidia"], quiet)
    quiet.name = "nvidia-tls"
    tls = resolved_config(ctx, rendered["nvidia-tls"], quiet)
    if checks.expect(plain is not None and tls is not None, "both configs resolve", "; ".join(quiet.failures)):
        tls_keys = {"allow_insecure_tcp", "tls_cert_file", "tls_key_file", "tls_client_ca_file"}
        differ = sorted(f"{t}.{k}" for t in tls for k in tls[t] if k not in tls_keys and tls[t][k] != plain[t].get(k))
        checks.expect(not differ, "the TLS config is the plain one but for the TLS keys", f"differs in {differ}")
    return checks


def check_containerfile(ctx, manifests_command):
    checks = Checks("Containerfile")
    cf = ctx.containerfile
    lines = cf["lines"]
    checks.expect(lines and lines[0] == ("FROM", "debian:12-slim"), "FROM debian:12-slim", f"{lines[:1]}")
    checks.expect(cf["args"].get("VERSION") == ctx.version, f"ARG VERSION is the project's {ctx.version}",
                  f"{cf['args'].get('VERSION')}")
    # The file cpack makes: NAME_VERSION_ARCH.deb (CPACK_DEBIAN_FILE_NAME DEB-DEFAULT).
    flavour = ctx.cpack.get("CPACK_PACKAGE_NAME", "").removeprefix("conveyor-")
    made = f"{ctx.cpack.get('CPACK_PACKAGE_NAME')}_{ctx.cpack.get('CPACK_PACKAGE_VERSION')}_amd64.deb"
    checks.expect(ctx.cpack.get("CPACK_DEBIAN_FILE_NAME") == "DEB-DEFAULT", "cpack names the file NAME_VERSION_ARCH.deb",
                  f"CPACK_DEBIAN_FILE_NAME is {ctx.cpack.get('CPACK_DEBIAN_FILE_NAME')}")
    variables = dict(cf["args"], FLAVOUR=flavour)
    copies = [expand(rest.split()[0], variables) for word, rest in lines if word == "COPY"]
    installs = [rest for word, rest in lines if word == "RUN" and "apt-get install" in rest]
    checks.expect(copies == [made], f"COPY takes {made}, the package this build dir makes", f"it takes {copies}")
    checks.expect(any(f"/tmp/{made}" in expand(r, variables) for r in installs), "apt-get installs that file", "")
    user = [rest for word, rest in lines if word == "USER"]
    checks.expect(bool(user) and re.fullmatch(r"\d+:\d+", user[-1]) is not None, f"USER is numeric uid:gid ({user})", "")
    entry = [json.loads(rest) for word, rest in lines if word == "ENTRYPOINT"]
    checks.expect(entry and entry[-1] == manifests_command, f"ENTRYPOINT is the pods' command {manifests_command}",
                  f"it is {entry}")
    exposed = sorted(int(p) for word, rest in lines if word == "EXPOSE" for p in rest.split())
    checks.expect(exposed == sorted(ctx.pod_ports), f"EXPOSE {exposed} are the pods' ports", f"pods: {ctx.pod_ports}")
    return checks


def read_containerfile_ids(ctx):
    lines = ctx.containerfile["lines"]
    user = [rest for word, rest in lines if word == "USER"]
    uid, gid = (int(x) for x in user[-1].split(":")) if user and ":" in user[-1] else (None, None)
    run = " ".join(rest for word, rest in lines if word == "RUN")
    render = re.search(r"groupadd --system --gid (\d+) render", run)
    ctx.containerfile_user = (uid, gid)
    ctx.render_gid = int(render.group(1)) if render else None


def report(all_checks):
    failed = 0
    for c in all_checks:
        for p in c.passed:
            print(f"check: {c.name}: ok: {p}")
        for f in c.failures:
            print(f"check: {c.name}: FAIL: {f}")
        failed += len(c.failures)
    return failed


def self_test(ctx, rendered):
    """Each breakage of an overlay or of the Containerfile must be found: a check that
    cannot fail proves nothing."""
    def pod(objs):
        return next(o for o in objs if o["kind"] in ("DaemonSet", "Deployment"))["spec"]["template"]["spec"]

    def set_config(objs, old, new):
        cm = next(o for o in objs if o["kind"] == "ConfigMap")
        assert old in cm["data"]["conveyord.toml"], old
        cm["data"]["conveyord.toml"] = cm["data"]["conveyord.toml"].replace(old, new)

    breakages = {
        "a grace period of only the drain": ("nvidia", lambda o: pod(o).update(terminationGracePeriodSeconds=30)),
        "readiness on /healthz": ("nvidia", lambda o: pod(o)["containers"][0]["readinessProbe"]["httpGet"].update(path="/healthz")),
        "liveness on the gRPC port": ("cpu", lambda o: pod(o)["containers"][0]["livenessProbe"]["httpGet"].update(port="grpc")),
        "metrics on another port than the container's": ("nvidia", lambda o: set_config(o, '"0.0.0.0:9464"', '"0.0.0.0:9465"')),
        "metrics on loopback": ("cpu", lambda o: set_config(o, '"0.0.0.0:9464"', '"127.0.0.1:9464"')),
        "a drain longer than the grace period": ("cpu", lambda o: set_config(o, "drain_timeout_s = 30.0", "drain_timeout_s = 40.0")),
        "plaintext TCP not allowed (the daemon refuses it)": ("nvidia", lambda o: set_config(o, "allow_insecure_tcp = true", "allow_insecure_tcp = false")),
        "a key the daemon does not know": ("cpu", lambda o: set_config(o, "[limits]", "[limits]\nmax_session = 3")),
        "capabilities kept": ("nvidia", lambda o: pod(o)["containers"][0]["securityContext"].pop("capabilities")),
        "a writable root filesystem": ("cpu", lambda o: pod(o)["containers"][0]["securityContext"].update(readOnlyRootFilesystem=False)),
        "root": ("nvidia", lambda o: pod(o)["securityContext"].update(runAsUser=0)),
        "the spool on the root filesystem": ("nvidia", lambda o: pod(o)["containers"][0]["volumeMounts"].pop(1)),
        "no GPU asked for": ("amd", lambda o: pod(o)["containers"][0]["resources"]["limits"].pop("amd.com/gpu")),
        "the other vendor's GPU": ("nvidia", lambda o: pod(o)["containers"][0]["resources"]["limits"].update({"amd.com/gpu": 1})),
        "a GPU flavour on the CPU": ("nvidia", lambda o: pod(o)["containers"][0].update(args=["--workers", "cpu"])),
        "the render group left out": ("amd", lambda o: pod(o)["securityContext"].update(supplementalGroups=[44])),
        "a Service with a cluster IP": ("nvidia", lambda o: next(x for x in o if x["kind"] == "Service")["spec"].pop("clusterIP")),
        "the Service on another port": ("cpu", lambda o: next(x for x in o if x["kind"] == "Service")["spec"]["ports"][0].update(targetPort=8080)),
        "an image of another flavour": ("amd", lambda o: pod(o)["containers"][0].update(image="conveyor-nvidia:0.1.0")),
        "the HPA on a metric no rule defines": ("cpu", lambda o: next(x for x in o if x["kind"] == "HorizontalPodAutoscaler")["spec"]["metrics"][0]["pods"]["metric"].update(name="conveyor_sessions_active")),
        "a pod template that drifted": ("cpu", lambda o: pod(o)["containers"][0]["readinessProbe"].update(periodSeconds=30)),
    }
    command = pod(rendered["nvidia"])["containers"][0]["command"]
    containerfile_breakages = {
        "a .deb name that cpack does not make": ("conveyor-${FLAVOUR}_${VERSION}_amd64.deb /tmp/", "conveyor-${FLAVOUR}-${VERSION}.deb /tmp/"),
        "an image user other than the pods'": ("USER 10001:10001", "USER 10002:10002"),
        "an entrypoint with another config path": ('"/etc/conveyor/conveyord.toml"]', '"/etc/conveyord.toml"]'),
        "a render GID other than the pods'": ("--gid 109 render", "--gid 110 render"),
    }
    failed = 0
    for what, (old, new) in containerfile_breakages.items():
        assert old in ctx.containerfile_text, old
        broken = copy.copy(ctx)
        broken.containerfile = parse_containerfile(ctx.containerfile_text.replace(old, new))
        read_containerfile_ids(broken)
        found = check_containerfile(broken, command).failures + check_overlay(broken, "amd", rendered["amd"]).failures
        print(f"self-test: {what}: {'found (' + found[0][:160] + ')' if found else 'NOT FOUND'}")
        failed += not found
    for what, (name, breakit) in breakages.items():
        broken = copy.deepcopy(rendered)
        breakit(broken[name])
        found = check_overlay(ctx, name, broken[name]).failures + check_across(ctx, broken).failures
        if found:
            print(f"self-test: {what}: found ({found[0].splitlines()[0][:160]})")
        else:
            print(f"self-test: {what}: NOT FOUND")
            failed += 1
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rendered", required=True, help="folder of NAME.json from validate.mjs")
    ap.add_argument("--overlays", required=True, help="deploy/kubernetes/overlays")
    ap.add_argument("--conveyord", required=True)
    ap.add_argument("--containerfile", required=True)
    ap.add_argument("--cmake-lists", required=True)
    ap.add_argument("--cpack-config", required=True)
    ap.add_argument("--daemon-metrics", required=True)
    ap.add_argument("--adapter-rules", required=True, help="prometheus-adapter-rules as JSON")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    ctx = Ctx(args)
    read_containerfile_ids(ctx)
    names = sorted(f[:-5] for f in os.listdir(args.rendered) if f.endswith(".json") and f[:-5] in os.listdir(args.overlays))
    if names != sorted(OVERLAYS):
        sys.exit(f"check: the overlays are {names}, and this check knows {sorted(OVERLAYS)}: "
                 "say in OVERLAYS what a new one must be")
    rendered = {}
    for name in OVERLAYS:
        with open(os.path.join(args.rendered, f"{name}.json")) as f:
            rendered[name] = json.load(f)
    all_checks = [check_overlay(ctx, name, objects) for name, objects in rendered.items()]
    all_checks.append(check_across(ctx, rendered))
    nvidia_pod = one(rendered["nvidia"], "DaemonSet")["spec"]["template"]["spec"]
    ctx.pod_ports = [p["containerPort"] for p in nvidia_pod["containers"][0]["ports"]]
    all_checks.append(check_containerfile(ctx, nvidia_pod["containers"][0]["command"]))
    failed = report(all_checks)
    total = sum(len(c.passed) + len(c.failures) for c in all_checks)
    print(f"check: {total - failed} of {total} checks passed")
    if args.self_test:
        missed = self_test(ctx, rendered)
        print(f"self-test: {missed} breakages not found" if missed else "self-test: every breakage found")
        failed += missed
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

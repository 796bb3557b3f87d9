"""Reads an Nsight Systems cuda_gpu_trace CSV and prints, per stream, busy time and the
gaps between consecutive operations, and for the kernels of all streams together the
share of time in which 0, 1, 2 or more kernels ran at once."""
import csv
import sys
from collections import defaultdict

rows = list(csv.DictReader(open(sys.argv[1])))
if not rows:
    sys.exit("empty trace")
start_key = next(k for k in rows[0] if k.startswith("Start"))
dur_key = next(k for k in rows[0] if k.startswith("Duration"))
name_key = "Name"
stream_key = next(k for k in rows[0] if k.startswith("Strm") or k.startswith("Stream"))
ops = []
for r in rows:
    s = float(r[start_key]); d = float(r[dur_key])
    ops.append((s, s + d, r[stream_key], r[name_key]))
ops.sort()
t0, t1 = ops[0][0], max(o[1] for o in ops)
# skip the first 20 % (warm-up, tables) for steady-state figures
cut = t0 + 0.2 * (t1 - t0)
ops = [o for o in ops if o[0] >= cut]
span = max(o[1] for o in ops) - ops[0][0]
by_stream = defaultdict(list)
for o in ops:
    by_stream[o[2]].append(o)
print(f"steady-state span {span/1e6:.2f} ms, {len(ops)} operations")
for s, lst in sorted(by_stream.items(), key=lambda kv: -len(kv[1])):
    busy = sum(e - b for b, e, _, _ in lst)
    gaps = sorted(lst[i + 1][0] - lst[i][1] for i in range(len(lst) - 1))
    kinds = defaultdict(float)
    for b, e, _, n in lst:
        kinds[n.split("(")[0].split("<")[0][-40:]] += e - b
    g50 = gaps[len(gaps) // 2] / 1e3 if gaps else 0
    g90 = gaps[int(len(gaps) * 0.9)] / 1e3 if gaps else 0
    top = ", ".join(f"{k.strip()} {v/len(lst)/1e3:.1f}us" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:4])
    print(f"stream {s}: {len(lst)} ops, busy {100*busy/span:.1f}%, gap p50 {g50:.1f}us p90 {g90:.1f}us; mean per op: {top}")
# kernel concurrency
events = []
for b, e, _, n in ops:
    if "memcpy" in n.lower() or "memset" in n.lower():
        continue
    events.append((b, 1)); events.append((e, -1))
events.sort()
level, last, hist = 0, events[0][0], defaultdict(float)
for t, d in events:
    hist[min(level, 3)] += t - last
    level += d; last = t
total = sum(hist.values())
print("kernels running at once: " + ", ".join(f"{k}{'+' if k == 3 else ''}: {100*v/total:.1f}%" for k, v in sorted(hist.items())))

#!/usr/bin/env python3
"""Checks a flight recorder snapshot against the Trace Event format's rules,
then against what the caller expects of it.

  check_trace.py TRACE.json [--region NAME=MS] [--region-at-least NAME=MS]
                 [--wait NAME=MS] [--thread NAME]
                 [--tolerance 0.05] [--signal N] [--heap] [--cpu]

Structure: the file is one JSON object with a traceEvents array; every event
has ph, pid, tid (numbers) and a numeric ts (but metadata); X events have a
duration >= 0 and, per thread, nest (each is inside or after the previous
open one); B/E pair up per thread in stack order; b/e async events pair by
(cat, id); M events name threads, and every thread with events is named.
Prints one line per failure and exits 1.
"""
import json
import sys

def main():
    args = sys.argv[1:]
    path = args.pop(0)
    regions, waits, threads, at_least = [], [], [], []
    tol, sig, heap, cpu = 0.05, None, False, False
    while args:
        a = args.pop(0)
        if a == "--region": n, ms = args.pop(0).split("="); regions.append((n, float(ms)))
        elif a == "--region-at-least": n, ms = args.pop(0).split("="); at_least.append((n, float(ms)))
        elif a == "--wait": n, ms = args.pop(0).split("="); waits.append((n, float(ms)))
        elif a == "--thread": threads.append(args.pop(0))
        elif a == "--tolerance": tol = float(args.pop(0))
        elif a == "--signal": sig = int(args.pop(0))
        elif a == "--heap": heap = True
        elif a == "--cpu": cpu = True
        else: sys.exit("unknown argument " + a)
    errors = []
    def fail(msg):
        errors.append(msg)
    with open(path, "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except Exception as e:  # not JSON, or not UTF-8
        print(f"{path}: not valid JSON: {e}")
        return 1
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list) or not events:
        print(f"{path}: no traceEvents array")
        return 1
    names = {}
    used_tids = set()
    xs = {}
    be = {}
    asyncs = {}
    for i, e in enumerate(events):
        where = f"{path}: event {i}"
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str):
            fail(f"{where}: not an event object with ph"); continue
        ph = e["ph"]
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail(f"{where}: pid/tid not integers")
        if ph == "M":
            if e.get("name") == "thread_name":
                names[e["tid"]] = e.get("args", {}).get("name")
            continue
        if not isinstance(e.get("ts"), (int, float)):
            fail(f"{where}: ts not a number"); continue
        if not isinstance(e.get("name"), str):
            fail(f"{where}: no name")
        used_tids.add(e["tid"])
        if ph == "X":
            if not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0:
                fail(f"{where}: X without a duration >= 0")
            else:
                xs.setdefault(e["tid"], []).append((e["ts"], e["dur"], e["name"]))
        elif ph in "BE":
            be.setdefault(e["tid"], []).append((e["ts"], ph, e["name"]))
        elif ph in "be":
            if "id" not in e:
                fail(f"{where}: async event without id")
            asyncs.setdefault((e.get("cat"), e.get("id")), []).append((e["ts"], ph))
        elif ph == "i":
            if e.get("s") not in ("t", "p", "g"):
                fail(f"{where}: instant event with scope {e.get('s')!r}")
        elif ph == "C":
            if not isinstance(e.get("args"), dict) or not all(isinstance(v, (int, float)) for v in e["args"].values()):
                fail(f"{where}: counter without numeric args")
        else:
            fail(f"{where}: unexpected phase {ph!r}")
    for tid in sorted(used_tids):
        if not names.get(tid):
            fail(f"{path}: thread {tid} has events but no thread_name")
    for tid, lst in xs.items():
        # Sorted by start, longer first on ties: each must end within the
        # innermost open slice it starts in (1 ns of rounding allowed).
        lst.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for ts, dur, name in lst:
            while stack and ts >= stack[-1][0] + stack[-1][1] - 0.001:
                stack.pop()
            if stack and ts + dur > stack[-1][0] + stack[-1][1] + 0.001:
                fail(f"{path}: thread {tid}: X {name!r} at {ts} overlaps {stack[-1][2]!r} without nesting")
            stack.append((ts, dur, name))
    for tid, lst in be.items():
        stack = []
        for ts, ph, name in sorted(lst, key=lambda x: x[0]):
            if ph == "B": stack.append(name)
            elif not stack: fail(f"{path}: thread {tid}: E {name!r} without B")
            else: stack.pop()
        if stack: fail(f"{path}: thread {tid}: B without E: {stack}")
    for key, lst in asyncs.items():
        phs = [ph for _, ph in sorted(lst)]
        if phs.count("b") != phs.count("e") or (phs and phs[0] != "b"):
            fail(f"{path}: async {key}: unpaired b/e {phs}")
    # Expectations.
    def durations(cat, name):
        return [e["dur"] / 1000.0 for e in events if e.get("ph") == "X" and e.get("cat") == cat and e.get("name") == name]
    for cat, lst in (("region", regions), ("wait", waits)):
        for name, ms in lst:
            got = durations(cat, name)
            if not got:
                fail(f"{path}: no {cat} {name!r}")
            elif not any(abs(d - ms) <= tol * ms for d in got):
                fail(f"{path}: {cat} {name!r} lasted {got} ms, expected {ms} ms within {tol:.0%}")
    for name, ms in at_least:  # a sleep's floor: only a loaded machine lengthens it
        got = durations("region", name)
        if not any(ms <= d <= 3 * ms + 50 for d in got):
            fail(f"{path}: region {name!r} lasted {got} ms, expected at least {ms} ms")
    for t in threads:
        if t not in names.values():
            fail(f"{path}: no thread named {t!r} (threads: {sorted(set(map(str, names.values())))})")
    other = doc.get("otherData", {})
    if sig is not None and other.get("signal") != sig:
        fail(f"{path}: signal {other.get('signal')} in otherData, expected {sig}")
    if heap and not any(e.get("ph") == "C" and e.get("name") == "heap" for e in events):
        fail(f"{path}: no heap counter")
    if cpu and not any(e.get("cat") == "cpu" and e.get("args", {}).get("stack") for e in events):
        fail(f"{path}: no CPU sample with a stack")
    for m in errors:
        print(m)
    if not errors:
        print(f"{path}: OK: {len(events)} events, threads {sorted(set(map(str, names.values())))}")
    return 1 if errors else 0

if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Checks that a crash snapshot of flight_recorder_phases names its frames.

    check_crash_names.py CRASH.json PROGRAM

worker-a's CPU samples: at least one whose innermost frame is PhasesBurn
and whose caller is named too. worker-b's "blocked" wait: its innermost
frame below libdump's own is PhasesWaitForLock. No frame left hex whose
address is in PROGRAM's mappings (it has a symbol table), and the mappings
are in the file for the frames of modules without one.
"""
import json
import os
import re
import sys


def main():
    path, program = sys.argv[1], os.path.realpath(sys.argv[2])
    doc = json.load(open(path))
    events = doc["traceEvents"]
    problems = []
    names = {e["tid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    tids = {n: t for t, n in names.items()}
    hexre = re.compile(r"^0x[0-9a-f]+$")

    a = tids.get("worker-a")
    samples = [e["args"]["stack"] for e in events if e.get("cat") == "cpu" and e.get("tid") == a]
    if not any(s and "PhasesBurn(" in s[0] and len(s) > 1 and not hexre.match(s[1]) for s in samples):
        problems.append(f"no CPU sample of worker-a in PhasesBurn with a named caller: {samples[:3]}")

    b = tids.get("worker-b")
    waits = [e["args"]["stack"] for e in events
             if e.get("cat") == "wait" and e.get("name") == "blocked" and e.get("tid") == b]
    # Offline (readdump --symbolize) libdump's own frames of the
    # interposition are still on top: the program's frames begin below them.
    waits = [[f for f in s if "libdump::" not in f] for s in waits]
    if not any(s and "PhasesWaitForLock(" in s[0] for s in waits):
        problems.append(f"no blocked wait of worker-b in PhasesWaitForLock: {waits[:3]}")

    maps = doc.get("otherData", {}).get("maps", "")
    own = []
    for line in maps.splitlines():
        f = line.split()
        if len(f) >= 6 and os.path.realpath(f[5]) == program:
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            own.append((lo, hi))
    if not own:
        problems.append("no mapping of the program in otherData.maps")
    for e in events:
        for frame in e.get("args", {}).get("stack", []) if isinstance(e.get("args"), dict) else []:
            if hexre.match(frame) and any(lo <= int(frame, 16) - 1 < hi for lo, hi in own):
                problems.append(f"hex frame {frame} in the program ({e.get('cat')} event)")

    for p in problems:
        print("FAIL:", p)
    if not problems:
        print(f"{path}: worker-a's samples name PhasesBurn, worker-b's wait names PhasesWaitForLock; "
              "no hex frame in the program")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

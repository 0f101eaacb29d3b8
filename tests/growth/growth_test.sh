#!/usr/bin/env bash
# readdump --growth on two series written by growth_program: the leaking one
# names app::SessionCache (held by the global g_cache) as the top accumulation
# point, grown by exactly the 200 Sessions added after the first dump; the
# steady one has no growing class and no accumulation point.
#
#   growth_test.sh GROWTH_PROGRAM READDUMP WORKDIR
set -euo pipefail
prog=$1 readdump=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$prog" leak "$dir/leak" >/dev/null
"$prog" steady "$dir/steady" >/dev/null

"$readdump" --growth "$dir"/leak.{1,2,3} >"$dir/leak.txt"
"$readdump" --growth --json "$dir"/leak.{1,2,3} >"$dir/leak.json"
"$readdump" --growth --json "$dir"/steady.{1,2,3} >"$dir/steady.json"

python3 - "$dir/leak.json" "$dir/steady.json" <<'PY'
import json, sys
leak = json.load(open(sys.argv[1]))
steady = json.load(open(sys.argv[2]))
def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)
c = leak["classes"][0]
check(c["class"] == "app::Session" and c["grows"], "first class row is not the growing app::Session: %r" % c)
check(c["count"] == [100, 200, 300], "Session counts per dump %r, want [100, 200, 300]" % c["count"])
check(leak["by_object"], "a series of dumps is compared by object")
check(leak["survived_objects"] > 100, "the 100 first Sessions survive every dump")
steps = leak["steps"]
check(len(steps) == 2 and all(s["new_objects"] >= 100 for s in steps), "each step adds the 100 Sessions: %r" % steps)
p = leak["accumulation_points"][0]
check(p["class"] == "app::SessionCache", "top accumulation point is %s, want app::SessionCache" % p["class"])
check(p["retained"][0] < p["retained"][1] < p["retained"][2], "its retained size grows: %r" % p["retained"])
g = p["grown_by"][0]
check(g["class"] == "app::Session" and g["count"] == 200,
      "it grew by %r, want the 200 Sessions added after the first dump" % g)
path = p["path"]
check(path["reachable"] and path["path"][0]["class"] == "app::SessionCache", "its path starts at the cache: %r" % path)
check(any("g_cache" in r["label"] or r["kind"] for r in path["roots"]), "a root holds it: %r" % path["roots"])
check(not any(c["grows"] and c["class"] == "app::Session" for c in steady["classes"]), "steady: Session grows")
check(not any(c["grows"] for c in steady["classes"] if c["class"].startswith("app::")),
      "steady: a class of the program grows: %r" % [c for c in steady["classes"] if c["grows"]])
check(not any(p["class"].startswith("app::") for p in steady["accumulation_points"]),
      "steady: accumulation points %r" % steady["accumulation_points"])
PY

grep -q '^grows	+[0-9]*	.*	app::Session$' "$dir/leak.txt" || fail "text output has no growing app::Session row"
grep -q 'app::SessionCache@0x' "$dir/leak.txt" || fail "text output names no accumulation point"

# The gate: exit 3 when a class grew more than the limit, 0 otherwise.
set +e
"$readdump" --growth --max-growth 1000 "$dir"/leak.{1,2,3} >/dev/null 2>"$dir/gate.err"; rc=$?
set -e
[ "$rc" = 3 ] || fail "--max-growth 1000 on the leak: exit $rc, want 3"
grep -q 'app::Session grew by' "$dir/gate.err" || fail "the gate names no class: $(cat "$dir/gate.err")"
"$readdump" --growth --max-growth 100000000 "$dir"/leak.{1,2,3} >/dev/null || fail "a high limit must pass"
# Usage: one dump is not a series; several without --growth are refused.
set +e
"$readdump" --growth "$dir/leak.1" >/dev/null 2>&1; [ $? = 2 ] || fail "--growth with one dump must be a usage error"
"$readdump" "$dir/leak.1" "$dir/leak.2" >/dev/null 2>&1; [ $? = 2 ] || fail "two FILEs without --growth must be a usage error"
set -e
echo "growth series: ok"

# Sourced by the tests that make python3 dump its heap: what every such dump
# must be. Needs $readdump.

# check_python_dump DUMP: private (0600), complete (no DUMP.partial), valid,
# and holding python3's 20000-entry dict (more than 20000 objects). Prints the
# object count.
check_python_dump() {
  local dump=$1 mode objects
  [ -f "$dump" ] || { echo "FAIL: no dump at $dump" >&2; return 1; }
  [ ! -e "$dump.partial" ] || { echo "FAIL: $dump.partial left behind" >&2; return 1; }
  mode=$(stat -c %a "$dump")
  [ "$mode" = 600 ] || { echo "FAIL: dump mode $mode, want 600" >&2; return 1; }
  "$readdump" --validate "$dump" >&2
  objects=$("$readdump" --json "$dump" | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["objects"]["count"])')
  [ "$objects" -gt 20000 ] || { echo "FAIL: only $objects objects in python3's heap" >&2; return 1; }
  echo "$objects"
}

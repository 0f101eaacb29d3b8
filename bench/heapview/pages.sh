#!/usr/bin/env bash
# heapview's page times once indexed: a dump of N list nodes whose first K
# also point at node 0 (make_fanin_dump), served by heapview; each page is
# fetched R times with curl and the median of curl's total time printed.
# Usage: bench/heapview/pages.sh [BUILD_DIR] [N] [K] [R]
set -euo pipefail
build=${1:-build}
n=${2:-1000000}
k=${3:-100000}
reps=${4:-7}
dir=$(mktemp -d /dev/shm/libdump-bench-pages.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$dir"' EXIT
"$build/bench/heapview/make_fanin_dump" "$dir/fanin.dump" "$n" "$k"
"$build/tools/heapview/heapview" --port 0 "$dir/fanin.dump" > "$dir/out" 2> "$dir/err" &
pid=$!
url=
for _ in $(seq 1 6000); do
  url=$(sed -n 's/^heapview: serving \(http:[^ ]*\) .*/\1/p' "$dir/out")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "heapview did not start"; cat "$dir/err"; exit 1; }
hub=0x7f0000000000
last=$(printf '0x%x' $((0x7f0000000000 + 32 * (n - 1))))
near=$(printf '0x%x' $((0x7f0000000000 + 32 * 500)))
echo "$n objects, $k referrers to $hub; median of $reps fetches (curl time_total)"
printf '%-44s %10s %12s\n' page ms bytes
for page in "object/$hub" "object/$hub?page=$((k / 100 - 1))" "api/object/$hub" "histogram" "dominators" \
            "roots" "path/$near" "path/$last" "reachable/$near" "instances?name=fanin::Node&page=5000"; do
  times=()
  for _ in $(seq 1 "$reps"); do
    times+=("$(curl -s -o "$dir/body" -w '%{time_total}' --max-time 120 "$url$page")")
  done
  med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(((reps + 1) / 2))p")
  printf '%-44s %10.1f %12d\n' "/$page" "$(echo "$med * 1000" | bc -l)" "$(stat -c %s "$dir/body")"
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/bin/bash
# The flight recorder's cost beside Go's runtime/trace, in one run: the
# annotations with nothing recording (ns each, against the bare loop), a
# recorded region (ns), and a region-heavy workload (~1 us of arithmetic per
# region) in blocks alternately untraced and traced: CPU ratios, with an A/A
# line and, for libdump, the two clock reads a recorded region needs at least.
# Usage: bench/flight_recorder/run.sh [BUILD_DIR] [PAIRS]
set -euo pipefail
B=${1:-build}
PAIRS=${2:-20}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
(cd "$(dirname "$0")/go" && HOME=${HOME:-$T} GOCACHE=$T/gocache GOFLAGS= go build -o "$T/gopeer" .)
echo "== libdump flight recorder (default window: 10 MiB, 10 s)"
"$B/bench/flight_recorder/bench_flight_recorder" "$PAIRS"
echo "== Go $(go env GOVERSION) runtime/trace"
"$T/gopeer" "$PAIRS"

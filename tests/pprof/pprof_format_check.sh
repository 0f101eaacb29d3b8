#!/bin/sh
# Reads profiles written by libdump's profilers with a second real reader,
# npm's pprof-format (pprof-format/check.mjs), beside go_pprof_check.sh.
#   pprof_format_check.sh PROFILE_WRITER WORKDIR
# Fails (never skips) when node or the package is missing: scripts/setup.sh
# installs both.
set -eu
W=$1
D=$2
H=$(cd "$(dirname "$0")/pprof-format" && pwd)
command -v node >/dev/null 2>&1 || { echo "FAIL: node not found"; exit 1; }
[ -f "$H/node_modules/pprof-format/package.json" ] ||
  { echo "FAIL: pprof-format not installed in $H (scripts/setup.sh runs npm ci there)"; exit 1; }
rm -rf "$D" && mkdir -p "$D"
"$W" "$D"
node "$H/check.mjs" "$D"

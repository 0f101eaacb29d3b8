# Sourced by the `go tool pprof` checks with D set to their work directory:
# fails (never skips) when go is missing, since CI installs golang-go; gives
# go a home and a build cache there; empties the directory.
command -v go >/dev/null 2>&1 || { echo "FAIL: go not found (apt-get install golang-go)"; exit 1; }
export HOME=${HOME:-$D}
export GOCACHE=${GOCACHE:-$D/gocache}
rm -rf "$D" && mkdir -p "$D"

# What heapview's end-to-end scripts share; sourced, not run.

# wait_for FILE PATTERN [SECONDS]: until FILE holds a line matching PATTERN
# (grep) or the process $pid has exited, up to SECONDS (default 60). Status 0
# when the pattern is there.
wait_for() {
  local tries=$((${3:-60} * 100))
  for _ in $(seq 1 "$tries"); do
    grep -qs "$2" "$1" && return 0
    # Exited: the file may have had its last line written just before.
    kill -0 "$pid" 2>/dev/null || { grep -qs "$2" "$1"; return; }
    sleep 0.01
  done
  return 1
}

# Exits 1 unless puppeteer-core, which drives chromium, is installed.
need_puppeteer() {
  local browser
  browser=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/browser
  if [ ! -d "$browser/node_modules/puppeteer-core" ]; then
    echo "FAIL: puppeteer-core is not installed: run scripts/setup.sh (npm ci in $browser)"
    exit 1
  fi
}

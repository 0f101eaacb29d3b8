#!/bin/sh
# Converts DUMP with dumptohprof and checks the result with VisualVM's heap
# library (HeapCheck.java) against readdump's histogram and thread summary.
#   heap_check.sh DUMPTOHPROF READDUMP DUMP WORKDIR [dumptohprof options] [-- HeapCheck options]
# A DUMP ending in .hprof is checked as it is, with the HeapCheck options only.
# Fails (exit 1) when the VisualVM jar is missing: set-up installs it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dumptohprof=$1 readdump=$2 dump=$3 work=$4
shift 4
conv_opts=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do conv_opts="$conv_opts $1"; shift; done
[ $# -gt 0 ] && shift
jar=${JFLUID_HEAP_JAR:-/usr/share/visualvm/visualvm/modules/org-graalvm-visualvm-lib-jfluid-heap.jar}
if [ ! -f "$jar" ]; then
  echo "FAILED: $jar missing: VisualVM's heap library is needed (scripts/setup.sh installs visualvm)" >&2
  exit 1
fi
mkdir -p "$work/classes"
name=$(basename "$dump")
hprof="$work/$name.hprof"
if [ ! -f "$work/classes/HeapCheck.class" ] || [ "$here/HeapCheck.java" -nt "$work/classes/HeapCheck.class" ]; then
  javac -d "$work/classes" -cp "$jar" "$here/HeapCheck.java"
fi
case $dump in
  *.hprof) exec java -Xmx2g -cp "$jar:$work/classes" HeapCheck "$dump" "$@" ;;
esac
# shellcheck disable=SC2086
# --force: a rerun of the suite replaces the previous run's files.
"$dumptohprof" -q --force $conv_opts --class-map "$work/$name.map" "$dump" "$hprof"
# The dump's own types: those the class map names.
"$readdump" --histogram --raw-types --top 1000000000 "$dump" > "$work/$name.hist"
tf=$("$readdump" "$dump" | sed -n 's/^threads: \([0-9]*\) (\([0-9]*\) frames).*/\1 \2/p')
threads=${tf% *} frames=${tf#* }
exec java -Xmx2g -cp "$jar:$work/classes" HeapCheck "$hprof" --histogram "$work/$name.hist" \
  --class-map "$work/$name.map" --threads "$threads" --frames "$frames" "$@"

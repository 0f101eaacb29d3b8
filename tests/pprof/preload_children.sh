#!/bin/sh
# The preload's profiles of a process tree, read back with `go tool pprof`:
# a bash script profiled with LIBDUMP_CPUPROFILE and LIBDUMP_HEAPPROFILE
# starts two bash children and a dash one. The first process writes PATH,
# each bash child PATH.<pid>, whole; dash ends with _exit and a killed child
# never exits, so they leave nothing, not even a PATH.partial. With %p in the
# path every process writes its own name and no suffix is added.
#   preload_children.sh LIBDUMP_SO LIBDUMPPROF_SO WORKDIR
set -eu
RT=$1
PROF=$2
D=$3
. "$(dirname "$0")/go_workdir.sh"
unset LIBDUMP_PROFILE_ROOT
fail=0
say_fail() { echo "FAIL: $*"; fail=1; }

# CHILD PIDFILE: records its pid, burns ~0.2 s of CPU.
cat > "$D/child.sh" <<'CHILD'
echo $$ > "$1"; i=0; while [ $i -lt 80000 ]; do i=$((i+1)); done
CHILD
# run OUTDIR CPU HEAP: the tree, with pids in OUTDIR/{root,bash1,bash2,dash,killed}.
run() {
  mkdir -p "$1"
  LD_PRELOAD="$RT $PROF" LIBDUMP_CPUPROFILE="$2" LIBDUMP_HEAPPROFILE="$3" bash -c '
    echo $$ > "$1/root"
    bash "$2" "$1/bash1" & bash "$2" "$1/bash2"
    sh "$2" "$1/dash"
    bash -c "echo \$\$ > \"$1/killed\"; kill -9 \$\$"
    wait' run "$1" "$D/child.sh" || true
}
# expect_profile FILE KIND: go tool pprof reads it; CPU ones of a child have samples.
expect_profile() {
  if ! out=$(go tool pprof -symbolize=none -raw "$1" 2>&1); then
    say_fail "go tool pprof cannot read $1"; printf '%s\n' "$out" | head -5; return
  fi
  printf '%s\n' "$out" | grep -q "PeriodType: $2" || say_fail "$1 is not a $2 profile"
}
expect_samples() {
  out=$(go tool pprof -symbolize=none -top -sample_index=samples "$1" 2>&1)
  printf '%s\n' "$out" | grep -Eq "Total samples = [1-9]" || { say_fail "$1 has no samples"; printf '%s\n' "$out" | head -5; }
}
expect_files() {  # DIR NAMES...: exactly these profiles (and the pid files) in DIR
  dir=$1; shift
  want=$(printf '%s\n' "$@" root bash1 bash2 dash killed | sort | tr '\n' ' ')
  have=$(ls "$dir" | sort | tr '\n' ' ')
  [ "$want" = "$have" ] || say_fail "in $dir: want [$want] have [$have]"
}

run "$D/plain" "$D/plain/cpu.pprof" "$D/plain/heap.pprof"
P=$D/plain
b1=$(cat $P/bash1) b2=$(cat $P/bash2)
for f in cpu.pprof cpu.pprof.$b1 cpu.pprof.$b2; do expect_profile "$P/$f" cpu; done
for f in heap.pprof heap.pprof.$b1 heap.pprof.$b2; do expect_profile "$P/$f" space; done
expect_samples "$P/cpu.pprof.$b1"
expect_samples "$P/cpu.pprof.$b2"
expect_files "$P" cpu.pprof cpu.pprof.$b1 cpu.pprof.$b2 heap.pprof heap.pprof.$b1 heap.pprof.$b2

run "$D/pid" "$D/pid/cpu.%p.pprof" "$D/pid/heap.%p.pprof"
P=$D/pid
r=$(cat $P/root) b1=$(cat $P/bash1) b2=$(cat $P/bash2)
for p in $r $b1 $b2; do expect_profile "$P/cpu.$p.pprof" cpu; expect_profile "$P/heap.$p.pprof" space; done
expect_files "$P" cpu.$r.pprof cpu.$b1.pprof cpu.$b2.pprof heap.$r.pprof heap.$b1.pprof heap.$b2.pprof
# A path that cannot be created is reported at start; the program runs as ever.
err=$(LD_PRELOAD="$RT $PROF" LIBDUMP_CPUPROFILE="$D/no/such/dir/cpu.pprof" sh -c 'exit 3' 2>&1) && st=0 || st=$?
[ $st = 3 ] || say_fail "exit status $st under an uncreatable profile path, want 3"
printf '%s\n' "$err" | grep -q "^libdump: CPU profile $D/no/such/dir/cpu.pprof.partial not written: No such file or directory\$" ||
  say_fail "no start-up error for an uncreatable path: [$err]"
[ $fail = 0 ] && echo "ok: one whole profile per exiting process, nothing from the others"
exit $fail

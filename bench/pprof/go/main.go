// Go peer of bench/pprof/alloc_workload.cc (issue 6): the same window of
// 4,096 live objects replaced at random, the same size mixes and generator,
// with Go's own heap profiler (runtime.MemProfileRate) switched between 0 and
// RATE inside one process, as alloc_workload.cc's `alternate` mode does for
// libdump. Go zeroes what it allocates and collects it; both are in its time
// per operation, with the profiler off and on alike.
//
// Usage: allocpeer [-ops N] [-mix mixed|small] [-rate BYTES] [-pairs P]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"syscall"
)

const window = 4096

var live [window][]byte

// cpuNs is the process's CPU time: the collector's threads included, as the
// C++ benchmark's CLOCK_PROCESS_CPUTIME_ID includes every thread.
func cpuNs() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return float64(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(x uint64, ops int64, small bool) uint64 {
	for i := int64(0); i < ops; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		slot := x % window
		var size uint64
		switch {
		case small:
			size = 16 + (x>>40)%241
		case (x>>32)%256 == 0:
			size = 65536
		default:
			size = 16 + (x>>40)%4080
		}
		b := make([]byte, size)
		b[0] = 1
		live[slot] = b
	}
	return x
}

func main() {
	ops := flag.Int64("ops", 100000000, "operations in all")
	mix := flag.String("mix", "mixed", "mixed or small")
	rate := flag.Int("rate", 512*1024, "MemProfileRate of the sampled blocks")
	pairs := flag.Int("pairs", 40, "pairs of blocks (off, on)")
	flag.Parse()
	small := *mix == "small"
	block := *ops / int64(2**pairs)
	if *pairs < 1 || block < 1 || (*mix != "small" && *mix != "mixed") {
		fmt.Fprintln(os.Stderr, "allocpeer: need -pairs >= 1, -ops >= 2 pairs, -mix mixed|small")
		os.Exit(2)
	}
	x := uint64(88172645463325252)
	runtime.MemProfileRate = 0
	x = run(x, block, small) // warm up: the window fills, the heap grows
	ratios := make([]float64, 0, *pairs)
	var offTotal, onTotal float64
	for k := 0; k < *pairs; k++ {
		var t [2]float64
		for j := 0; j < 2; j++ {
			on := (j + k) & 1
			if on == 1 {
				runtime.MemProfileRate = *rate
			} else {
				runtime.MemProfileRate = 0
			}
			t0 := cpuNs()
			x = run(x, block, small)
			t[on] = cpuNs() - t0
		}
		ratios = append(ratios, t[1]/t[0])
		offTotal += t[0]
		onTotal += t[1]
	}
	runtime.MemProfileRate = 0
	sort.Float64s(ratios)
	pct := func(r float64) float64 { return (r - 1) * 100 }
	n := len(ratios)
	fmt.Printf("go %s: rate %d vs 0, %d pairs of %d ops: median %+.2f%% (quartiles %+.2f%% .. %+.2f%%), totals %+.2f%%, %.2f ns/op off\n",
		runtime.Version(), *rate, *pairs, block, pct(ratios[n/2]), pct(ratios[n/4]), pct(ratios[n*3/4]),
		pct(onTotal/offTotal), offTotal/float64(block*int64(*pairs)))
}

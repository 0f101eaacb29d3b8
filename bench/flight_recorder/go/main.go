// The flight recorder benchmark's Go peer: the same region loops with Go's
// runtime/trace (Go 1.19 has no flight recorder; an execution trace written
// to io.Discard is the nearest always-on tracer), printed in the same form
// as bench_flight_recorder.
//
//	go run . [PAIRS]
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/trace"
	"sort"
	"strconv"
	"syscall"
)

func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

//go:noinline
func bare(n uint64, x uint64) uint64 {
	for i := uint64(0); i < n; i++ {
		x = x*6364136223846793005 + 1
	}
	return x
}

//go:noinline
func regions(ctx context.Context, n uint64, x uint64) uint64 {
	for i := uint64(0); i < n; i++ {
		r := trace.StartRegion(ctx, "bench")
		x = x*6364136223846793005 + 1
		r.End()
	}
	return x
}

//go:noinline
func logs(ctx context.Context, n uint64, x uint64) uint64 {
	for i := uint64(0); i < n; i++ {
		trace.Log(ctx, "bench", "message")
		x = x*6364136223846793005 + 1
	}
	return x
}

const workPerRegion = 750

//go:noinline
func heavy(ctx context.Context, n uint64, x uint64) uint64 {
	for i := uint64(0); i < n; i++ {
		r := trace.StartRegion(ctx, "request")
		x = bare(workPerRegion, x)
		r.End()
	}
	return x
}

func nsPer(f func(uint64, uint64) uint64, n uint64, sink *uint64) float64 {
	t0 := cpuNs()
	*sink += f(n, *sink)
	return float64(cpuNs()-t0) / float64(n)
}

func main() {
	pairs := 20
	if len(os.Args) > 1 {
		pairs, _ = strconv.Atoi(os.Args[1])
	}
	ctx := context.Background()
	sink := uint64(1)
	const n = 50000000
	var vb, vr, vl []float64
	for r := 0; r < 7; r++ {
		vb = append(vb, nsPer(bare, n, &sink))
		vr = append(vr, nsPer(func(n, x uint64) uint64 { return regions(ctx, n, x) }, n, &sink))
		vl = append(vl, nsPer(func(n, x uint64) uint64 { return logs(ctx, n, x) }, n, &sink))
	}
	b := median(vb)
	fmt.Printf("go off: bare loop %.2f ns/iter; added per annotation: region %.2f ns, log %.2f ns\n", b, median(vr)-b, median(vl)-b)

	if err := trace.Start(io.Discard); err != nil {
		panic(err)
	}
	var on []float64
	for r := 0; r < 7; r++ {
		on = append(on, nsPer(func(n, x uint64) uint64 { return regions(ctx, n, x) }, 5000000, &sink)-b)
	}
	trace.Stop()
	fmt.Printf("go on: added per region (runtime/trace to io.Discard) %.1f ns\n", median(on))

	perBlock := uint64(1000)
	t0 := cpuNs()
	sink += heavy(ctx, perBlock, sink)
	perBlock = uint64(250e6 / float64(cpuNs()-t0+1) * float64(perBlock))
	var aa, ratio []float64
	regionsPerCPUSecond := 0.0
	for p := 0; p < pairs; p++ {
		t0 = cpuNs()
		sink += heavy(ctx, perBlock, sink)
		off := float64(cpuNs() - t0)
		regionsPerCPUSecond = float64(perBlock) * 1e9 / off
		t0 = cpuNs()
		sink += heavy(ctx, perBlock, sink)
		aa = append(aa, float64(cpuNs()-t0)/off)
		trace.Start(io.Discard)
		t0 = cpuNs()
		sink += heavy(ctx, perBlock, sink)
		ratio = append(ratio, float64(cpuNs()-t0)/off)
		trace.Stop()
	}
	fmt.Printf("go heavy: %.2f M regions per CPU second; CPU against tracing stopped, medians of %d blocks:\n"+
		"  stopped again (A/A) %.4f; tracing %.4f (%+.2f %%)\n",
		regionsPerCPUSecond/1e6, pairs, median(aa), median(ratio), (median(ratio)-1)*100)
	if sink == 42 {
		os.Exit(1)
	}
}

// The lock workload of lock_workload.cc in Go: 8 goroutines take one of 2
// sync.Mutex for a short critical section and every 16 operations hand a
// token to their partner through a sync.Cond. Alternates blocks with the
// block and mutex profiles off and on (runtime.SetBlockProfileRate(10000),
// runtime.SetMutexProfileFraction(100)), as lock_workload.cc does, and
// prints the median wall-time ratio.
package main

import (
	"flag"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"syscall"
	"time"
)

const threads, locks, handoffEvery = 8, 2, 16

type shared struct {
	mu      sync.Mutex
	counter int64
	_       [48]byte
}

type pair struct {
	mu   sync.Mutex
	cv   *sync.Cond
	turn int
}

var gLocks [locks]shared
var gPairs [threads / 2]pair

func worker(id int, ops int64, wg *sync.WaitGroup) {
	defer wg.Done()
	p := &gPairs[id/2]
	me := id % 2
	x := uint32(id)*2654435761 + 1
	for i := int64(0); i < ops; i++ {
		x = x*1664525 + 1013904223
		s := &gLocks[(x>>16)%locks]
		s.mu.Lock()
		s.counter += int64(x & 7)
		s.mu.Unlock()
		if i%handoffEvery == handoffEvery-1 {
			p.mu.Lock()
			for p.turn != me {
				p.cv.Wait()
			}
			p.turn = 1 - me
			p.cv.Signal()
			p.mu.Unlock()
		}
	}
	p.mu.Lock()
	p.turn = 1 - me
	p.cv.Signal()
	p.mu.Unlock()
}

func block(ops int64) float64 {
	for i := range gPairs {
		gPairs[i].turn = 0
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < threads; i++ {
		wg.Add(1)
		go worker(i, ops/threads, &wg)
	}
	wg.Wait()
	return time.Since(start).Seconds()
}

// The process's CPU time (user + system), as the C++ side measures it.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) * 1e-9
}

func setProfiles(on bool) {
	if on {
		runtime.SetBlockProfileRate(10000)
		runtime.SetMutexProfileFraction(100)
	} else {
		runtime.SetBlockProfileRate(0)
		runtime.SetMutexProfileFraction(0)
	}
}

func main() {
	ops := flag.Int64("ops", 2000000, "operations per block")
	pairs := flag.Int("pairs", 20, "off/on pairs")
	aa := flag.Bool("aa", false, "both blocks off (A/A)")
	flag.Parse()
	for i := range gPairs {
		gPairs[i].cv = sync.NewCond(&gPairs[i].mu)
	}
	var ratios, cpuRatios []float64
	var off, on, cpuOff, cpuOn float64
	for k := 0; k < *pairs; k++ {
		var t, c [2]float64
		for j := 0; j < 2; j++ {
			isOn := (j + k) & 1
			setProfiles(isOn == 1 && !*aa)
			c0 := cpuSeconds()
			t[isOn] = block(*ops)
			c[isOn] = cpuSeconds() - c0
		}
		setProfiles(false)
		ratios = append(ratios, t[1]/t[0])
		cpuRatios = append(cpuRatios, c[1]/c[0])
		off += t[0]
		on += t[1]
		cpuOff += c[0]
		cpuOn += c[1]
	}
	sort.Float64s(ratios)
	sort.Float64s(cpuRatios)
	pct := func(r float64) float64 { return (r - 1) * 100 }
	label := "Go block 10us + mutex 1/100"
	if *aa {
		label = "Go A/A (both off)"
	}
	fmt.Printf("%s, %d pairs of %d ops: CPU median %+.2f%% (quartiles %+.2f%% .. %+.2f%%), totals %+.2f%%; "+
		"wall median %+.2f%% (quartiles %+.2f%% .. %+.2f%%); %.0f ns/op off\n",
		label, *pairs, *ops, pct(cpuRatios[len(cpuRatios)/2]), pct(cpuRatios[len(cpuRatios)/4]),
		pct(cpuRatios[len(cpuRatios)*3/4]), pct(cpuOn/cpuOff),
		pct(ratios[len(ratios)/2]), pct(ratios[len(ratios)/4]), pct(ratios[len(ratios)*3/4]),
		off/float64(*pairs)/float64(*ops)*1e9)
}

// Go peer of bench/dump/dump_bench.cc (issue 4): the same graph (same
// generator, node count and sizes) dumped by runtime/debug.WriteHeapDump.
//
// Node i is ONE heap object of s_i bytes (log-uniform in [min, max], rounded
// down to 16): a struct {Next, Other unsafe.Pointer; Pad [s-16]byte} made with
// reflect.StructOf (one type per size), so it has exactly two pointer words;
// Next points to node i-1, Other to a random one of the 1024 before it, and
// every 16-byte cell after the first carries the same 16-bit random word as
// libdump's. GC is off (SetGCPercent(-1)) so the heap is the live graph.
//
// Usage: dumppeer [-n N] [-min B] [-max B] [-reps R] [-shm DIR] [-disk DIR] [-cases null,shm,disk]
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

var root unsafe.Pointer

type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

func nodeSize(r *rng, lo, hi float64) uint64 {
	u := float64(r.next()>>11) * (1.0 / 9007199254740992.0)
	s := uint64(lo*math.Exp(u*math.Log(hi/lo))) &^ 15
	if s < 16 {
		s = 16
	}
	return s
}

var ptrType = reflect.TypeOf(unsafe.Pointer(nil))
var types = map[uint64]reflect.Type{}

func typeOf(s uint64) reflect.Type {
	if t, ok := types[s]; ok {
		return t
	}
	fields := []reflect.StructField{{Name: "Next", Type: ptrType}, {Name: "Other", Type: ptrType}}
	if s > 16 {
		fields = append(fields, reflect.StructField{Name: "Pad", Type: reflect.ArrayOf(int(s-16), reflect.TypeOf(byte(0)))})
	}
	t := reflect.StructOf(fields)
	if uint64(t.Size()) != s {
		panic(fmt.Sprintf("size %d != %d", t.Size(), s))
	}
	types[s] = t
	return t
}

type node struct{ next, other unsafe.Pointer }

func build(n uint64, lo, hi float64) (bytes uint64) {
	r := rng{42}
	var recent [1024]unsafe.Pointer
	var prev unsafe.Pointer
	for i := uint64(0); i < n; i++ {
		s := nodeSize(&r, lo, hi)
		p := reflect.New(typeOf(s)).UnsafePointer()
		nd := (*node)(p)
		nd.next = prev
		if i > 0 {
			m := i
			if m > 1024 {
				m = 1024
			}
			nd.other = recent[r.next()%m]
		}
		for k := uint64(1); k < s/16; k++ {
			*(*uint64)(unsafe.Add(p, 16*k+8)) = r.next() & 0xFFFF
		}
		recent[i%1024] = p
		prev = p
		bytes += s
	}
	root = prev
	return bytes
}

// Largest gap between wake-ups of a goroutine sleeping 50 us at a time.
var maxGap, resetReq, ticks int64

func ticker() {
	last := time.Now()
	for {
		time.Sleep(50 * time.Microsecond)
		t := time.Now()
		g := int64(t.Sub(last))
		if atomic.LoadInt64(&resetReq) != 0 {
			atomic.StoreInt64(&maxGap, 0)
			atomic.StoreInt64(&resetReq, 0)
		} else if g > atomic.LoadInt64(&maxGap) {
			atomic.StoreInt64(&maxGap, g)
		}
		last = t
		atomic.AddInt64(&ticks, 1)
	}
}

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}

func main() {
	n := flag.Uint64("n", 1000000, "nodes")
	lo := flag.Float64("min", 16, "smallest node")
	hi := flag.Float64("max", 4096, "largest node")
	reps := flag.Int("reps", 3, "repetitions per case")
	shm := flag.String("shm", "/dev/shm", "memory directory")
	disk := flag.String("disk", "/tmp", "disk directory")
	cases := flag.String("cases", "null,shm,disk", "cases")
	flag.Parse()
	debug.SetGCPercent(-1)
	t0 := time.Now()
	bytes := build(*n, *lo, *hi)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("go %s: %d nodes, %.3f GB asked (%.3f GB heap in use, %d live objects), built in %.2f s\n",
		runtime.Version(), *n, float64(bytes)/1e9, float64(ms.HeapAlloc)/1e9, ms.Mallocs-ms.Frees, time.Since(t0).Seconds())
	go ticker()
	time.Sleep(10 * time.Millisecond)
	for _, c := range strings.Split(*cases, ",") {
		var secs, pauses []float64
		var dumpBytes int64
		for r := 0; r < *reps; r++ {
			path := "/dev/null"
			switch c {
			case "shm":
				path = fmt.Sprintf("%s/dumppeer_go.%d", *shm, os.Getpid())
			case "disk":
				path = fmt.Sprintf("%s/dumppeer_go.%d", *disk, os.Getpid())
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0600)
			if err != nil {
				panic(err)
			}
			atomic.StoreInt64(&resetReq, 1)
			for atomic.LoadInt64(&resetReq) != 0 {
				runtime.Gosched()
			}
			a := time.Now()
			debug.WriteHeapDump(f.Fd())
			d := time.Since(a)
			// The gap that ends when the world resumes is recorded at the next tick.
			for c := atomic.LoadInt64(&ticks); atomic.LoadInt64(&ticks) < c+2; {
				runtime.Gosched()
			}
			gap := atomic.LoadInt64(&maxGap)
			if st, err := f.Stat(); err == nil && path != "/dev/null" {
				dumpBytes = st.Size()
			}
			f.Close()
			if path != "/dev/null" {
				os.Remove(path)
			}
			secs = append(secs, d.Seconds())
			pauses = append(pauses, float64(gap)/1e6)
		}
		s, p := median(secs), median(pauses)
		fmt.Printf("RESULT impl=go case=%s nodes=%d heap_bytes=%d secs=%.4f pause_ms=%.2f gbps=%.3f mobjps=%.3f dump_bytes=%d pause_ms_per_gb=%.2f\n",
			c, *n, bytes, s, p, float64(bytes)/s/1e9, float64(*n)/s/1e6, dumpBytes, p/(float64(bytes)/1e9))
	}
	runtime.KeepAlive(root)
}

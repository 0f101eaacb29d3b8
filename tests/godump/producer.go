// producer writes a Go heap dump whose contents are known: N list nodes of an
// 80-byte type with pointers at offsets 0 and 16 (a layout the runtime itself
// does not allocate), G goroutines blocked receiving from a channel in
// main.blocker, and F objects with finalizers. The heap dump tests check
// readdump's counts against these numbers.
//
// Usage: producer OUT N G F
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"
)

type node struct {
	next  *node // offset 0
	val   int
	prev  *node // offset 16
	magic uint64
	pad   [6]uint64 // to 80 bytes, a size class of its own
}

type guarded struct {
	id  int
	buf [40]byte
}

var (
	head    *node
	guards  []*guarded
	release = make(chan int)
)

func blocker(ready chan<- bool) {
	ready <- true
	<-release
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: producer OUT N G F")
		os.Exit(2)
	}
	n, _ := strconv.Atoi(os.Args[2])
	g, _ := strconv.Atoi(os.Args[3])
	f, _ := strconv.Atoi(os.Args[4])
	var prev *node
	for i := 0; i < n; i++ {
		x := &node{next: head, val: i, prev: prev, magic: 0x6e6f6465}
		if head != nil {
			head.prev = x
		}
		head = x
		prev = x
	}
	for i := 0; i < f; i++ {
		o := &guarded{id: i}
		runtime.SetFinalizer(o, func(*guarded) {})
		guards = append(guards, o)
	}
	ready := make(chan bool)
	for i := 0; i < g; i++ {
		go blocker(ready)
		<-ready
	}
	// Every blocker is parked once it has signalled and the scheduler has run.
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	// A raw descriptor: an *os.File would add a finalizer of its own.
	fd, err := syscall.Open(os.Args[1], syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	debug.WriteHeapDump(uintptr(fd))
	syscall.Close(fd)
	runtime.KeepAlive(head)
	runtime.KeepAlive(guards)
}

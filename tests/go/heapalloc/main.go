// heapalloc writes a heap profile with Go's own runtime (runtime/pprof), the reference
// producer that heapsnap's `top` and the viewer are checked against. Every allocation
// is recorded (MemProfileRate = 1), in a few named functions:
//
//	leakSmall   1000 × 64 B, kept       (in use)
//	leakLarge   8 × 1 MiB, kept         (in use, largest)
//	churn       5000 × 256 B, dropped   (alloc only)
//	nested → inner   300 × 4 KiB, kept  (a two-level stack)
//
// Usage: heapalloc OUT.pb.gz
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

var keep [][]byte
var sink []byte

//go:noinline
func leakSmall() {
	for i := 0; i < 1000; i++ {
		keep = append(keep, make([]byte, 64))
	}
}

//go:noinline
func leakLarge() {
	for i := 0; i < 8; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
}

//go:noinline
func churn() {
	for i := 0; i < 5000; i++ {
		sink = make([]byte, 256)
	}
}

//go:noinline
func inner() []byte { return make([]byte, 4096) }

//go:noinline
func nested() {
	for i := 0; i < 300; i++ {
		keep = append(keep, inner())
	}
}

func main() {
	runtime.MemProfileRate = 1
	keep = make([][]byte, 0, 4096)
	leakSmall()
	leakLarge()
	churn()
	nested()
	// Heap profiles show the state as of the last completed GC cycle.
	runtime.GC()
	runtime.GC()
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	f.Close()
	runtime.KeepAlive(keep)
}

// heapdiff writes two heap profiles of one process with Go's own runtime
// (runtime/pprof), before and after a change, for the viewer's diff test against
// `go tool pprof -diff_base`. Every allocation is recorded (MemProfileRate = 1).
//
//	                 base (BASE.pb.gz)        new (NEW.pb.gz)
//	leakLarge        8 × 1 MiB kept           6 of them released (in use shrinks)
//	buffers          2000 × 512 B kept        1800 of them released (in use shrinks)
//	leakSmall        1000 × 64 B kept         +2000 more kept (grows)
//	nested → inner   100 × 4 KiB kept         +200 more kept (grows)
//	churn            5000 × 256 B dropped     +1000 more dropped (alloc only)
//	cache            -                        50 × 16 KiB kept (new function)
//
// The alloc_* sample types only grow (they count every allocation since the start);
// the inuse_* types grow and shrink.
//
// Usage: heapdiff BASE.pb.gz NEW.pb.gz
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
)

var (
	small  [][]byte
	large  [][]byte
	nest   [][]byte
	cached [][]byte
	bufs   [][]byte
	sink   []byte
)

//go:noinline
func leakSmall(n int) {
	for i := 0; i < n; i++ {
		small = append(small, make([]byte, 64))
	}
}

//go:noinline
func leakLarge(n int) {
	for i := 0; i < n; i++ {
		large = append(large, make([]byte, 1<<20))
	}
}

//go:noinline
func buffers(n int) {
	for i := 0; i < n; i++ {
		bufs = append(bufs, make([]byte, 512))
	}
}

//go:noinline
func churn(n int) {
	for i := 0; i < n; i++ {
		sink = make([]byte, 256)
	}
}

//go:noinline
func inner() []byte { return make([]byte, 4096) }

//go:noinline
func nested(n int) {
	for i := 0; i < n; i++ {
		nest = append(nest, inner())
	}
}

//go:noinline
func cache(n int) {
	for i := 0; i < n; i++ {
		cached = append(cached, make([]byte, 16<<10))
	}
}

func write(path string) {
	// Heap profiles show the state as of the last completed GC cycle.
	runtime.GC()
	runtime.GC()
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: heapdiff BASE.pb.gz NEW.pb.gz")
		os.Exit(2)
	}
	runtime.MemProfileRate = 1
	// Capacity reserved up front: growing these slices is not what is measured.
	small = make([][]byte, 0, 4096)
	large = make([][]byte, 0, 16)
	nest = make([][]byte, 0, 512)
	cached = make([][]byte, 0, 64)
	bufs = make([][]byte, 0, 2048)
	leakSmall(1000)
	leakLarge(8)
	nested(100)
	buffers(2000)
	churn(5000)
	write(os.Args[1])

	for i := 2; i < len(large); i++ {
		large[i] = nil
	}
	for i := 200; i < len(bufs); i++ {
		bufs[i] = nil
	}
	leakSmall(2000)
	nested(200)
	churn(1000)
	cache(50)
	write(os.Args[2])
	runtime.KeepAlive(small)
	runtime.KeepAlive(large)
	runtime.KeepAlive(nest)
	runtime.KeepAlive(cached)
	runtime.KeepAlive(bufs)
}

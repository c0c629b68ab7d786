// heaptext writes Go's debug=1 text heap profile, what `/debug/pprof/heap?debug=1`
// serves: pprof.Lookup("heap").WriteTo(w, 1), after allocations in known functions
// (some kept, some freed, one inlined into its callers, slices grown by the runtime,
// a map, allocations on other goroutines).
//
// Usage: heaptext OUTFILE RATE (runtime.MemProfileRate: 1 records every allocation,
// 524288 is Go's default sampling).
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
)

var keep [][]byte
var sink []byte
var table = map[int][]byte{}

//go:noinline
func leakSmall() {
	for i := 0; i < 1000; i++ {
		keep = append(keep, make([]byte, 64))
	}
}

//go:noinline
func leakLarge(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
}

//go:noinline
func churn() {
	for i := 0; i < 20000; i++ {
		sink = make([]byte, 4096)
	}
}

// small is inlined into its callers by the compiler.
func small() []byte { return make([]byte, 48) }

//go:noinline
func viaSmall() {
	for i := 0; i < 2000; i++ {
		keep = append(keep, small())
	}
}

//go:noinline
func fillTable() {
	for i := 0; i < 5000; i++ {
		table[i] = make([]byte, 200)
	}
}

//go:noinline
func worker(wg *sync.WaitGroup, mu *sync.Mutex) {
	defer wg.Done()
	b := make([]byte, 256<<10)
	mu.Lock()
	keep = append(keep, b)
	mu.Unlock()
}

func main() {
	rate, err := strconv.Atoi(os.Args[2])
	if err != nil {
		panic(err)
	}
	runtime.MemProfileRate = rate
	leakSmall()
	leakLarge(8)
	churn()
	viaSmall()
	fillTable()
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go worker(&wg, &mu)
	}
	wg.Wait()
	runtime.GC()
	runtime.GC()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup("heap").WriteTo(f, 1); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
	runtime.KeepAlive(keep)
	runtime.KeepAlive(table)
}

// profiles writes the parity corpus of heapsnap's `top` against `go tool pprof -top`,
// every file written by real Go code, none by hand:
//
//   - every runtime profile at debug=0, written by runtime/pprof: heap, allocs, cpu
//     (a short busy loop), block, mutex, goroutine, threadcreate, and heap2 (the heap
//     later, for diffs);
//   - a custom profile of the program's own (pprof.NewProfile("example.com/conns"),
//     the open connections: Go writes it as a count profile of that name), custom.pb.gz;
//   - into TEXTDIR, when given, the same profiles at debug=1 (the legacy text
//     formats: heap.txt, allocs.txt, block.txt, mutex.txt, goroutine.txt,
//     threadcreate.txt, custom.txt), each written right after its debug=0 twin;
//   - profiles written with pprof's own profile package (github.com/google/pprof/profile,
//     the copy vendored in GOROOT, which is what `go tool pprof` reads with) for what
//     the runtime never writes: units.pb.gz (time, bytes in every spelling, custom and
//     empty units, an empty sample type name, a default_sample_type), units2.pb.gz
//     (the same types later, for diffs), frames.pb.gz (drop_frames/keep_frames, inlined
//     and partially inlined functions, comments) and utf8.pb.gz (invalid UTF-8 in names).
//
// Usage: profiles OUTDIR [TEXTDIR]
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"
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
func leakLarge(n int) {
	for i := 0; i < n; i++ {
		keep = append(keep, make([]byte, 1<<20))
	}
}

//go:noinline
func churn() {
	for i := 0; i < 5000; i++ {
		sink = make([]byte, 256)
	}
}

// small is inlined into its callers by the compiler: heap rows labelled (inline).
func small() []byte { return make([]byte, 48) }

//go:noinline
func viaSmall() {
	for i := 0; i < 200; i++ {
		keep = append(keep, small())
	}
}

var spinSink uint64

//go:noinline
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 10000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	spinSink = x
}

//go:noinline
func blockOnChannel() {
	c := make(chan int)
	go func() {
		time.Sleep(5 * time.Millisecond)
		c <- 1
	}()
	<-c
}

//go:noinline
func contend() {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				mu.Lock()
				time.Sleep(10 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

//go:noinline
func parked(c chan struct{}) { <-c }

// conns is a custom profile, as a program keeps one of its own resources (Go's doc:
// names prefixed with the package path): each open connection is an entry.
var conns = pprof.NewProfile("example.com/conns")

type conn struct{ id int }

var open []*conn

//go:noinline
func openConn(i int) {
	c := &conn{i}
	open = append(open, c)
	conns.Add(c, 0)
}

//go:noinline
func openPool() {
	for i := 0; i < 3; i++ {
		openConn(i)
	}
}

//go:noinline
func openOne() { openConn(99) }

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func create(dir, name string) *os.File {
	f, err := os.Create(filepath.Join(dir, name))
	must(err)
	return f
}

// textDir receives the debug=1 twins ("" = not written).
var textDir string

func lookup(dir, name, file string) {
	f := create(dir, file)
	must(pprof.Lookup(name).WriteTo(f, 0))
	must(f.Close())
	if textDir != "" && file != "heap2.pb.gz" {
		t := create(textDir, strings.TrimSuffix(file, ".pb.gz")+".txt")
		must(pprof.Lookup(name).WriteTo(t, 1))
		must(t.Close())
	}
}

func writeProfile(dir, name string, p *profile.Profile) {
	must(p.CheckValid())
	f := create(dir, name)
	must(p.Write(f))
	must(f.Close())
}

func main() {
	dir := os.Args[1]
	if len(os.Args) > 2 {
		textDir = os.Args[2]
	}
	runtime.MemProfileRate = 1
	runtime.SetBlockProfileRate(1)
	runtime.SetMutexProfileFraction(1)

	cpu := create(dir, "cpu.pb.gz")
	must(pprof.StartCPUProfile(cpu))
	spin(300 * time.Millisecond)
	pprof.StopCPUProfile()
	must(cpu.Close())

	keep = make([][]byte, 0, 4096)
	leakSmall()
	leakLarge(4)
	churn()
	viaSmall()
	runtime.GC()
	runtime.GC()
	lookup(dir, "heap", "heap.pb.gz")
	lookup(dir, "allocs", "allocs.pb.gz")
	leakLarge(2)
	keep = keep[:len(keep)/2]
	leakSmall()
	runtime.GC()
	runtime.GC()
	lookup(dir, "heap", "heap2.pb.gz")

	for i := 0; i < 3; i++ {
		blockOnChannel()
	}
	contend()
	lookup(dir, "block", "block.pb.gz")
	lookup(dir, "mutex", "mutex.pb.gz")

	c := make(chan struct{})
	for i := 0; i < 5; i++ {
		go parked(c)
	}
	time.Sleep(time.Millisecond)
	lookup(dir, "goroutine", "goroutine.pb.gz")
	close(c)
	lookup(dir, "threadcreate", "threadcreate.pb.gz")
	openPool()
	openOne()
	lookup(dir, "example.com/conns", "custom.pb.gz")
	runtime.KeepAlive(keep)
	runtime.KeepAlive(open)

	writeProfile(dir, "units.pb.gz", units(1))
	writeProfile(dir, "units2.pb.gz", units(3))
	writeProfile(dir, "frames.pb.gz", frames())
	writeProfile(dir, "utf8.pb.gz", utf8())
}

// units: one sample type per unit spelling pprof's measurement package knows, plus
// units it does not know (printed with their suffix), an empty unit and an empty type
// name. Values span several magnitudes so the report picks a scaled unit.
func units(scale int64) *profile.Profile {
	types := [][2]string{
		{"cpu", "nanoseconds"}, {"wall", "microseconds"}, {"lat", "us"}, {"t_ms", "ms"},
		{"t_s", "seconds"}, {"t_sec", "sec"}, {"t_hr", "hours"},
		{"mem", "bytes"}, {"mem_kb", "kB"}, {"mem_KB", "KB"}, {"mem_kilo", "kilobytes"},
		{"mem_mb", "MB"}, {"mem_mega", "megabytes"}, {"mem_gb", "GB"}, {"mem_byte", "byte"},
		{"mem_mib", "MiB"}, {"things", "widgets"}, {"samples", "count"}, {"", "count"},
		{"plain", ""}, {"gcu", "milligcu"},
	}
	p := &profile.Profile{
		PeriodType:        &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            1,
		DefaultSampleType: "mem",
	}
	for _, t := range types {
		p.SampleType = append(p.SampleType, &profile.ValueType{Type: t[0], Unit: t[1]})
	}
	fns := []string{"main.work", "main.parse", "main.render", "runtime.main", "main.tiny"}
	var locs []*profile.Location
	for i, n := range fns {
		fn := &profile.Function{ID: uint64(i + 1), Name: n, SystemName: n, Filename: "main.go"}
		p.Function = append(p.Function, fn)
		loc := &profile.Location{ID: uint64(i + 1), Address: uint64(0x1000 + i*16),
			Line: []profile.Line{{Function: fn, Line: int64(10 + i)}}}
		p.Location = append(p.Location, loc)
		locs = append(locs, loc)
	}
	base := []int64{1234567890, 73400320, 5120, 300, 7}
	stacks := [][]int{{0, 3}, {1, 0, 3}, {2, 3}, {4, 2, 3}, {4, 3}}
	for s, st := range stacks {
		sm := &profile.Sample{}
		for _, l := range st {
			sm.Location = append(sm.Location, locs[l])
		}
		for t := range types {
			v := base[(s+t)%len(base)] * scale / int64(1+t%3)
			if s == 2 && scale > 1 {
				v = base[(s+t)%len(base)] / 2
			}
			sm.Value = append(sm.Value, v)
		}
		p.Sample = append(p.Sample, sm)
	}
	return p
}

// frames: drop_frames/keep_frames regexes (pprof prunes frames below a dropped one
// and keeps the ones keep_frames names), a function inlined into one caller and called
// from another (partial-inline), one only ever inlined (inline), comments.
func frames() *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "alloc_space", Unit: "bytes"}, {Type: "alloc_objects", Unit: "count"}},
		DropFrames: "malloc|operator new.*|runtime\\..*",
		KeepFrames: "runtime\\.keepme",
		Comments:   []string{"built by the parity corpus", "#hidden comment"},
	}
	names := []string{"main", "alloc_site", "helper", "leaf_inline", "malloc", "operator new(unsigned long)",
		"runtime.mallocgc", "runtime.keepme", "std::vector<int>::push_back(int const&)", "caller2"}
	fn := map[string]*profile.Function{}
	for i, n := range names {
		f := &profile.Function{ID: uint64(i + 1), Name: n, SystemName: n, Filename: "x.cc"}
		p.Function = append(p.Function, f)
		fn[n] = f
	}
	id := uint64(0)
	loc := func(lines ...string) *profile.Location {
		id++
		l := &profile.Location{ID: id, Address: 0x4000 + id*8}
		// Lines are leaf first: the first is inlined into the next.
		for _, n := range lines {
			l.Line = append(l.Line, profile.Line{Function: fn[n], Line: int64(id)})
		}
		p.Location = append(p.Location, l)
		return l
	}
	lMain := loc("main")
	lHelperInlined := loc("helper", "alloc_site") // helper inlined into alloc_site
	lHelper := loc("helper")                      // helper called from caller2
	lCaller2 := loc("caller2")
	lLeaf := loc("leaf_inline", "helper") // leaf_inline only ever inlined
	lMalloc := loc("malloc")
	lNew := loc("operator new(unsigned long)")
	lRuntime := loc("runtime.mallocgc")
	lKeep := loc("runtime.keepme")
	lVec := loc("std::vector<int>::push_back(int const&)")
	add := func(v int64, ls ...*profile.Location) {
		p.Sample = append(p.Sample, &profile.Sample{Location: ls, Value: []int64{v, v / 16}})
	}
	add(4096, lMalloc, lLeaf, lHelperInlined, lMain)
	add(2048, lMalloc, lNew, lVec, lHelper, lCaller2, lMain)
	add(1024, lRuntime, lKeep, lHelper, lCaller2, lMain)
	add(512, lRuntime, lHelperInlined, lMain)
	add(256000, lLeaf, lHelper, lCaller2, lMain)
	add(64, lMalloc, lMain)
	add(32, lMalloc)
	return p
}

// utf8: names and a sample type with bytes that are not UTF-8 (Go strings are bytes;
// pprof shows them as U+FFFD when printing).
func utf8() *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "bad\xffunit", Unit: "bytes"}, {Type: "objects", Unit: "count"}},
	}
	names := []string{"main.caf\xe9", "main.\xc3(", "main.ok", "main.trunc\xe2\x82"}
	var locs []*profile.Location
	for i, n := range names {
		f := &profile.Function{ID: uint64(i + 1), Name: n, SystemName: n, Filename: "u\xfe.go"}
		p.Function = append(p.Function, f)
		l := &profile.Location{ID: uint64(i + 1), Address: uint64(0x100 * (i + 1)), Line: []profile.Line{{Function: f, Line: 1}}}
		p.Location = append(p.Location, l)
		locs = append(locs, l)
	}
	for i, l := range locs {
		p.Sample = append(p.Sample, &profile.Sample{Location: []*profile.Location{l, locs[2]}, Value: []int64{int64(1000 * (i + 1)), int64(i + 1)}})
	}
	return p
}

// heapbench writes the heap profiles that `cargo xtask bench-viewer --peers` loads into
// heapsnap and its peers: Go's own runtime (runtime/pprof) profiling a small expression
// interpreter at MemProfileRate = 1, so every allocation is recorded with its stack.
// The interpreter builds random expression trees and evaluates them recursively, one
// function per node kind, each allocating through the standard library (strconv,
// strings, fmt, sort, maps, slices); the paths through the node kinds make many
// distinct stacks, and their number grows with the amount of work asked for.
//
// Usage: heapbench OUT.pb.gz TREES
//
// TREES expression trees are built and evaluated (deterministic: a fixed seed); one
// result in eight is kept, so the profile has memory in use as well as allocated.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
)

type kind int

const (
	kAdd kind = iota
	kMul
	kConcat
	kList
	kMap
	kSort
	kFormat
	kLeaf
	kinds
)

type node struct {
	kind kind
	num  int64
	kids []*node
}

var keep []interface{}

func build(r *rand.Rand, depth int) *node {
	if depth == 0 || r.Intn(8) == 0 {
		return &node{kind: kLeaf, num: r.Int63n(1000)}
	}
	n := &node{kind: kind(r.Intn(int(kinds) - 1))}
	k := 1 + r.Intn(3)
	for i := 0; i < k; i++ {
		n.kids = append(n.kids, build(r, depth-1))
	}
	return n
}

var evals int

// eval keeps one result in eight, so the profile has memory in use along many stacks.
//
//go:noinline
func eval(n *node) []byte {
	out := evalKind(n)
	evals++
	if evals%8 == 0 {
		keep = append(keep, out)
	}
	return out
}

//go:noinline
func evalKind(n *node) []byte {
	switch n.kind {
	case kAdd:
		return evalAdd(n)
	case kMul:
		return evalMul(n)
	case kConcat:
		return evalConcat(n)
	case kList:
		return evalList(n)
	case kMap:
		return evalMap(n)
	case kSort:
		return evalSort(n)
	case kFormat:
		return evalFormat(n)
	default:
		return evalLeaf(n)
	}
}

func num(b []byte) int64 {
	var s int64
	for _, c := range b {
		s = s*31 + int64(c)
	}
	return s
}

//go:noinline
func evalLeaf(n *node) []byte { return strconv.AppendInt(make([]byte, 0, 8), n.num, 10) }

//go:noinline
func evalAdd(n *node) []byte {
	var s int64
	for _, k := range n.kids {
		s += num(eval(k))
	}
	return []byte(strconv.FormatInt(s, 10))
}

//go:noinline
func evalMul(n *node) []byte {
	s := int64(1)
	for _, k := range n.kids {
		s *= num(eval(k)) | 1
	}
	out := make([]byte, 0, 24)
	return strconv.AppendInt(out, s, 16)
}

//go:noinline
func evalConcat(n *node) []byte {
	var b strings.Builder
	for _, k := range n.kids {
		b.Write(eval(k))
		b.WriteByte('+')
	}
	return []byte(b.String())
}

//go:noinline
func evalList(n *node) []byte {
	var parts [][]byte
	for _, k := range n.kids {
		parts = append(parts, eval(k))
	}
	out := make([]byte, 0, 16*len(parts))
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

//go:noinline
func evalMap(n *node) []byte {
	m := make(map[string][]byte, len(n.kids))
	for i, k := range n.kids {
		m[strconv.Itoa(i)] = eval(k)
	}
	return []byte(fmt.Sprint(len(m)))
}

//go:noinline
func evalSort(n *node) []byte {
	var ss []string
	for _, k := range n.kids {
		ss = append(ss, string(eval(k)))
	}
	sort.Strings(ss)
	return []byte(strings.Join(ss, ","))
}

//go:noinline
func evalFormat(n *node) []byte {
	var vs []interface{}
	for _, k := range n.kids {
		vs = append(vs, num(eval(k)))
	}
	return []byte(fmt.Sprintf("%v", vs))
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: heapbench OUT.pb.gz TREES")
		os.Exit(2)
	}
	trees, err := strconv.Atoi(os.Args[2])
	if err != nil || trees < 1 {
		fmt.Fprintln(os.Stderr, "TREES must be a positive integer, got", os.Args[2])
		os.Exit(2)
	}
	runtime.MemProfileRate = 1
	r := rand.New(rand.NewSource(1))
	for i := 0; i < trees; i++ {
		eval(build(r, 14))
	}
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
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	runtime.KeepAlive(keep)
}

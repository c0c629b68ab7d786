module heapsnap.test/profiles

go 1.19

require github.com/google/pprof v0.0.0

// The test copies pprof's own profile package (vendored in GOROOT) next to this
// module and points this replace at it (`go mod edit -replace`): see tests/src/lib.rs.
replace github.com/google/pprof => ../pprof

//! Go's `debug=1` heap profiles, what `/debug/pprof/heap?debug=1` serves and
//! `pprof.Lookup("heap").WriteTo(w, 1)` writes (the runtime's `writeHeapInternal`):
//!
//! ```text
//! heap profile: 1009: 3243808 [1021: 3288952] @ heap/1048576
//! 3: 3145728 [3: 3145728] @ 0x4b3d51 0x4b3e52 0x437452 0x461121
//! #   0x4b3d50    main.leakLarge+0x50 /tmp/gx/main.go:21
//! #   0x4b3e51    main.main+0x31      /tmp/gx/main.go:28
//! …
//!
//! # runtime.MemStats
//! # Alloc = 3294184
//! ```
//!
//! The gperftools text format (pprof's `parseHeap` reads both): the header's `heap/N`
//! is twice the runtime's `MemProfileRate`, each record is unsampled with Go's
//! `scaleHeapSample`, and the `#` lines (the frames symbolized, tab-separated in the
//! file, and the memory statistics) are skipped as pprof skips them. There is no maps
//! section: the addresses are the executable's own (Go links statically), symbolized
//! with `--elf` as a snapshot is.

use super::gperftools::{read_heap, trim_start};
use super::{Format, Input, InputError};
use crate::limits::Limits;

/// `heap profile: … @ heap/N` with Go's `#` comment lines or `# runtime.MemStats`.
pub const GO_HEAP: Format = Format {
    name: "Go heap profile (debug=1)",
    sniff,
    read,
};

/// A `heap profile:` header whose kind is `heap/N` (gperftools writes `heapprofile`),
/// followed by Go's `#\t0x` frame comments or its `# runtime.MemStats` section.
fn sniff(b: &[u8]) -> bool {
    let b = trim_start(b);
    if !b.starts_with(b"heap profile:") {
        return false;
    }
    let header = b.split(|&c| c == b'\n').next().unwrap_or_default();
    let is_go_kind = header
        .windows(7)
        .position(|w| w == b"@ heap/")
        .is_some_and(|i| {
            header[i + 7..]
                .iter()
                .all(|c| c.is_ascii_digit() || *c == b'\r')
        });
    let has = |needle: &[u8]| b.windows(needle.len()).any(|w| w == needle);
    is_go_kind && (has(b"\n#\t0x") || has(b"\n# runtime.MemStats"))
}

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    read_heap(GO_HEAP.name, bytes, limits, "Go, debug=1")
}

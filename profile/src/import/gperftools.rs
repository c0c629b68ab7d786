//! gperftools heap profiles, the text that tcmalloc's `HEAPPROFILE` dumps and
//! `MallocExtension::GetHeapSample` returns (pprof's `legacy_profile.go`, `parseHeap`):
//!
//! ```text
//! heap profile:    116:  4239162 [   126:  4279162] @ heapprofile
//!      4:  4194304 [     4:  4194304] @ 0x560d39d631d7 0x560d39d63280 …
//!
//! MAPPED_LIBRARIES:
//! 560d39d63000-560d39d64000 r-xp 00001000 00:00 10575894    /tmp/leaky
//! ```
//!
//! Each record is `inuse_objects: inuse_bytes [alloc_objects: alloc_bytes] @ stack`,
//! the stack as return addresses, innermost first. `@ heapprofile` records every
//! allocation; `@ heap_v2/N` (and `heapz_v2/N`) samples with mean interval N bytes and
//! `@ heap/N` with N/2, and those records are unsampled per record with the Poisson
//! formula pprof applies (`scaleHeapSample`). The `MAPPED_LIBRARIES:` (or
//! `--- Memory map: ---`) section, `/proc/self/maps` as the program saw it, gives the
//! executable mappings.
//!
//! The file is read into a [`Snapshot`] (buckets of a stack with their allocation and
//! free counts, the mappings), the model heapsnap already converts and symbolizes with
//! `--elf` and the mapped files: an addresses-only profile is a snapshot in all but its
//! bytes. The readers here and in `jemalloc.rs` share [`Records`].

use super::{Format, Input, InputError};
use crate::limits::{Budget, Limits};
use rustc_hash::FxHashMap as HashMap;
use sampler_core::decoded::{Bucket, Mapping, Snapshot, Stack};
use sampler_core::Cycle;

/// The snapshot format version of a snapshot read from a gperftools or jemalloc text
/// heap profile that keeps allocation totals (heapsnap's own format versions start at
/// 1), so reports say where it came from. The other legacy origins are in [`LEGACY`].
pub const LEGACY_VERSION: u16 = 0;

/// What a legacy profile measures, which decides its sample types, its period, the
/// frames pprof prunes (`addLegacyFrameInfo`) and what a bucket's counters hold.
/// `'a`: a count profile's type name, borrowed from the snapshot when the program
/// named it (see [`kind_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind<'a> {
    /// A heap profile: buckets hold sampled allocations and frees, unsampled at the
    /// snapshot's rate.
    Heap,
    /// A CPU profile (gperftools' `CPUPROFILE`): a bucket's `allocs` is the sample
    /// count, its `alloc_bytes` the CPU time in nanoseconds; the period is in
    /// nanoseconds.
    Cpu,
    /// A contention profile (Go's `block` and `mutex` at `debug=1`, `--- contentionz`):
    /// `allocs` is the contentions, `alloc_bytes` the delay in nanoseconds, both
    /// already unsampled by the reader as pprof's `parseContentionSample` does.
    Contention,
    /// A count profile of the named type (Go's `goroutine` and `threadcreate`, or a
    /// program's own `pprof.NewProfile` at `debug=1`): `allocs` is the count.
    Count(&'a str),
}

/// The [`Kind`] in [`LEGACY`] of a count profile whose type the program named (any
/// name pprof's `parseGoCount` reads): the snapshot's `count_type` carries the name,
/// which [`kind_of`] puts in its place.
pub const OWN_COUNT: Kind<'static> = Kind::Count("");

impl<'a> Kind<'a> {
    /// The profile's (type, unit) pairs when not a heap (see
    /// [`crate::import::SAMPLE_TYPES`] for a heap).
    pub fn sample_types(self) -> Vec<(&'a str, &'static str)> {
        match self {
            Kind::Heap => crate::import::SAMPLE_TYPES.to_vec(),
            Kind::Cpu => vec![("samples", "count"), ("cpu", "nanoseconds")],
            Kind::Contention => vec![("contentions", "count"), ("delay", "nanoseconds")],
            Kind::Count(name) => vec![(name, "count")],
        }
    }

    /// The period's (type, unit), as pprof's legacy parsers set it.
    pub fn period_type(self) -> (&'a str, &'static str) {
        match self {
            Kind::Heap => ("space", "bytes"),
            Kind::Cpu => ("cpu", "nanoseconds"),
            Kind::Contention => ("contentions", "count"),
            Kind::Count(name) => (name, "count"),
        }
    }

    /// What reports call a file of this kind.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Heap => "text heap",
            Kind::Cpu => "binary CPU",
            Kind::Contention => "text contention",
            Kind::Count("goroutine") => "text goroutine",
            Kind::Count(_) => "text count",
        }
    }
}

/// What snapshot `s` measures: a heap, unless it was read from a legacy profile of
/// another kind (CPU, contention, counts), with a count profile's own type name
/// (`count_type`) in place of [`OWN_COUNT`]'s.
pub fn kind_of(s: &Snapshot) -> Kind<'_> {
    match legacy(s.version).map(|l| l.kind) {
        None => Kind::Heap,
        Some(Kind::Count(name)) => Kind::Count(s.count_type.as_deref().unwrap_or(name)),
        Some(kind) => kind,
    }
}

/// Where a snapshot read from a legacy profile came from, carried in its `version`
/// (heapsnap's own versions start at 1; these are 0 and the top of the range): reports
/// name the program, and the conversion shows the sample types pprof shows for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Legacy {
    /// The snapshot version that stands for this origin.
    pub version: u16,
    /// The program that wrote the file, for reports.
    pub program: &'static str,
    /// What it measures.
    pub kind: Kind<'static>,
    /// A heap file keeps allocation totals apart from what is in use. Without them (the
    /// header's allocated figures are 0 or equal to those in use) pprof's `parseHeap`
    /// shows two sample types, `objects` and `space`, instead of four. Always true for
    /// the other kinds.
    pub allocations: bool,
}

const fn heap(version: u16, program: &'static str, allocations: bool) -> Legacy {
    Legacy {
        version,
        program,
        kind: Kind::Heap,
        allocations,
    }
}

const fn other(version: u16, program: &'static str, kind: Kind<'static>) -> Legacy {
    Legacy {
        version,
        program,
        kind,
        allocations: true,
    }
}

/// Every legacy origin (see [`Legacy`]).
pub const LEGACY: [Legacy; 9] = [
    heap(LEGACY_VERSION, "gperftools or jemalloc", true),
    heap(u16::MAX, "gperftools or jemalloc", false),
    heap(u16::MAX - 1, "Go, debug=1", true),
    heap(u16::MAX - 2, "Go, debug=1", false),
    other(u16::MAX - 3, "Go, debug=1", Kind::Count("goroutine")),
    other(u16::MAX - 4, "Go, debug=1", Kind::Count("threadcreate")),
    other(u16::MAX - 5, "Go debug=1 or contentionz", Kind::Contention),
    other(u16::MAX - 6, "gperftools CPU profiler", Kind::Cpu),
    other(u16::MAX - 7, "Go, debug=1", OWN_COUNT),
];

/// The origin of `kind` (not a heap) from [`LEGACY`].
pub(super) fn origin_of(kind: Kind<'_>) -> &'static Legacy {
    LEGACY.iter().find(|l| l.kind == kind).unwrap_or(&LEGACY[0])
}

/// The legacy origin a snapshot version stands for, if it is one.
pub fn legacy(version: u16) -> Option<&'static Legacy> {
    LEGACY.iter().find(|l| l.version == version)
}

/// `heap profile: …` at the start of the file.
pub const GPERFTOOLS_HEAP: Format = Format {
    name: "gperftools heap profile",
    sniff: |b| trim_start(b).starts_with(b"heap profile:"),
    read,
};

/// The bytes after leading blanks and line ends.
pub(super) fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

/// What a bad line is reported as.
pub(super) fn bad(format: &'static str, line: usize, what: impl Into<String>) -> InputError {
    InputError::Legacy {
        format,
        line,
        what: what.into(),
    }
}

/// The file as text, or an error at the line of the first byte that is not UTF-8.
pub(super) fn text<'a>(format: &'static str, bytes: &'a [u8]) -> Result<&'a str, InputError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&c| c == b'\n')
            .count()
            + 1;
        bad(format, line, "not UTF-8 text")
    })
}

/// Numbered lines (from 1) of a text file.
pub(super) type NumberedLines<'a> = std::iter::Map<
    std::iter::Enumerate<std::str::Lines<'a>>,
    fn((usize, &'a str)) -> (usize, &'a str),
>;

/// The file as numbered text lines, and its first non-blank line (the header), taken
/// from them.
pub(super) fn header<'a>(
    format: &'static str,
    bytes: &'a [u8],
) -> Result<((usize, &'a str), NumberedLines<'a>), InputError> {
    let number: fn((usize, &'a str)) -> (usize, &'a str) = |(n, l)| (n + 1, l);
    let mut lines = text(format, bytes)?.lines().enumerate().map(number);
    let first = lines
        .by_ref()
        .find(|(_, l)| !l.trim().is_empty())
        .ok_or_else(|| bad(format, 1, "empty"))?;
    Ok((first, lines))
}

/// A snapshot being built from a legacy text profile: stacks interned, one bucket per
/// record, mappings from the maps section, everything counted against a [`Budget`].
pub(super) struct Records {
    format: &'static str,
    snap: Snapshot,
    stacks: HashMap<Vec<u64>, u32>,
    budget: Budget,
    widest: u64,
}

/// One record's four numbers: in use and allocated, objects and bytes.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub inuse_objects: u64,
    pub inuse_bytes: u64,
    pub alloc_objects: u64,
    pub alloc_bytes: u64,
}

impl Records {
    pub(super) fn new(format: &'static str, limits: &Limits, input_len: usize, rate: u64) -> Self {
        Records {
            format,
            snap: Snapshot {
                version: LEGACY_VERSION,
                word_size: 8,
                sample_rate: rate,
                // One closed cycle: the counts are what the file says, published.
                cycle: 1,
                ..Default::default()
            },
            stacks: HashMap::default(),
            budget: Budget::new(limits, input_len as u64),
            widest: 0,
        }
    }

    /// A record at 1-based `line`: its counts and its stack (innermost first). The
    /// object size (the `bytes` label) is the average, as pprof's `blocksize`.
    pub(super) fn record(
        &mut self,
        line: usize,
        c: Counts,
        frames: Vec<u64>,
    ) -> Result<(), InputError> {
        let format = self.format;
        let at = || format!("line {line} of the {format}");
        self.charge_stack(&frames, &at)?;
        if c.inuse_objects == 0 && c.inuse_bytes != 0 {
            return Err(bad(
                format,
                line,
                format!("in-use count is 0 but in-use bytes is {}", c.inuse_bytes),
            ));
        }
        if c.alloc_objects == 0 && c.alloc_bytes != 0 {
            return Err(bad(
                format,
                line,
                format!(
                    "allocation count is 0 but allocated bytes is {}",
                    c.alloc_bytes
                ),
            ));
        }
        // Allocation totals not kept (jemalloc without `prof_accum`, a `heap` profile
        // whose header says so): what is in use was allocated at least.
        let allocs = c.alloc_objects.max(c.inuse_objects);
        let alloc_bytes = c.alloc_bytes.max(c.inuse_bytes);
        let size = match (c.inuse_objects, allocs) {
            (0, 0) => 0,
            (0, n) => alloc_bytes / n,
            (n, _) => c.inuse_bytes / n,
        };
        let stack_id = self.stack_id(frames, &at)?;
        self.snap.buckets.push(Bucket {
            stack_id,
            size,
            active: Cycle {
                allocs,
                frees: allocs - c.inuse_objects,
                alloc_bytes,
                free_bytes: alloc_bytes - c.inuse_bytes,
            },
        });
        Ok(())
    }

    /// The id of a stack, interned.
    fn stack_id(&mut self, frames: Vec<u64>, at: &dyn Fn() -> String) -> Result<u32, InputError> {
        self.widest = frames.iter().fold(self.widest, |w, &a| w.max(a));
        let next = self.stacks.len() as u32 + 1;
        Ok(match self.stacks.get(&frames) {
            Some(&id) => id,
            None => {
                self.budget
                    .cap("table-entries", u64::from(next), || "stacks".into(), at)?;
                self.snap.stacks.push(Stack {
                    id: next,
                    frames: frames.clone(),
                });
                self.stacks.insert(frames, next);
                next
            }
        })
    }

    /// Counts a record of `frames` against the entry budget and the stack-depth cap.
    fn charge_stack(&mut self, frames: &[u64], at: &dyn Fn() -> String) -> Result<(), InputError> {
        self.budget.charge(6 + frames.len() as u64, at)?;
        self.budget.cap(
            "stack-depth",
            frames.len() as u64,
            || "frames in one stack".into(),
            at,
        )?;
        Ok(())
    }

    /// A record of a profile that is not a heap's, at `at` (a line, a byte offset):
    /// its two values as [`Kind`] says where they go, and its stack (innermost first,
    /// as return addresses).
    pub(super) fn values(
        &mut self,
        at: &dyn Fn() -> String,
        values: [u64; 2],
        frames: Vec<u64>,
    ) -> Result<(), InputError> {
        self.charge_stack(&frames, at)?;
        let stack_id = self.stack_id(frames, at)?;
        self.snap.buckets.push(Bucket {
            stack_id,
            size: 0,
            active: Cycle {
                allocs: values[0],
                frees: 0,
                alloc_bytes: values[1],
                free_bytes: 0,
            },
        });
        Ok(())
    }

    /// The maps section (`/proc/self/maps` lines) from `lines`, numbered from `first`:
    /// the executable mappings (as pprof keeps them). Lines that are not a maps entry
    /// are skipped, as pprof's `ParseMemoryMap` does (the section may carry other
    /// text, e.g. `build=` lines).
    pub(super) fn maps<'a>(
        &mut self,
        first: usize,
        lines: impl Iterator<Item = &'a str>,
    ) -> Result<(), InputError> {
        let format = self.format;
        for (k, l) in lines.enumerate() {
            let Some(m) = maps_entry(l) else { continue };
            let at = || format!("line {} of the {format}", first + k);
            self.budget.charge(4, at)?;
            self.widest = self.widest.max(m.end);
            self.snap.mappings.push(m);
        }
        Ok(())
    }

    /// pprof's `parseAdditionalSections`: lines up to one holding a maps sentinel
    /// (`MAPPED_LIBRARIES:`, `--- Memory map: ---`) are ignored, the maps follow it.
    pub(super) fn additional_sections<'a>(
        &mut self,
        lines: &mut impl Iterator<Item = (usize, &'a str)>,
    ) -> Result<(), InputError> {
        let is_sentinel =
            |l: &str| l.contains("MAPPED_LIBRARIES:") || l.contains("--- Memory map: ---");
        if let Some((n, _)) = lines.by_ref().find(|(_, l)| is_sentinel(l)) {
            self.maps(n + 1, lines.map(|(_, l)| l))?;
        }
        Ok(())
    }

    /// Drops the frames at the innermost end of each stack that lie in a mapping whose
    /// file name `is_allocator` says is the allocator's (a stack of nothing else is
    /// kept whole).
    pub(super) fn trim_leading_frames(&mut self, is_allocator: impl Fn(&str) -> bool) {
        let maps = &self.snap.mappings;
        let inside = |a: u64| {
            maps.iter()
                .any(|m| a >= m.start && a < m.end && is_allocator(&m.name))
        };
        for s in &mut self.snap.stacks {
            let lead = s.frames.iter().take_while(|&&a| inside(a)).count();
            if lead < s.frames.len() {
                s.frames.drain(..lead);
            }
        }
    }

    /// The snapshot, its version saying its `origin`: 8-byte words unless every
    /// address fits in 32 bits (the text does not say; a 64-bit Linux process maps its
    /// libraries above 4 GiB).
    /// Names the type of a count profile the program named itself (see
    /// [`OWN_COUNT`]); `None` for every other file.
    pub(super) fn count_type(&mut self, name: Option<String>) {
        self.snap.count_type = name;
    }

    pub(super) fn finish(mut self, origin: &Legacy) -> Input {
        self.snap.version = origin.version;
        self.snap.word_size = if self.widest > u64::from(u32::MAX) {
            8
        } else {
            4
        };
        Input::Snapshot {
            snapshot: self.snap,
            bad_frames: 0,
            frames: 0,
        }
    }
}

/// A `/proc/<pid>/maps` line, `start-end perms offset dev inode [path]`, if it is one
/// and executable.
fn maps_entry(line: &str) -> Option<Mapping> {
    let mut f = line.split_ascii_whitespace();
    let (start, end) = f.next()?.split_once('-')?;
    let perms = f.next()?;
    let offset = f.next()?;
    let _dev = f.next()?;
    let _inode = f.next()?;
    let name = f.collect::<Vec<_>>().join(" ");
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    let (start, end, offset) = (hex(start)?, hex(end)?, hex(offset)?);
    if !perms.contains('x') || end <= start {
        return None;
    }
    Some(Mapping {
        start,
        end,
        offset,
        name,
        build_id: Vec::new(),
    })
}

/// `0x1a 0x2b …` → addresses (the `0x` optional, as pprof's `parseHexAddresses`).
pub(super) fn addresses(
    format: &'static str,
    line: usize,
    s: &str,
) -> Result<Vec<u64>, InputError> {
    s.split_ascii_whitespace()
        .map(|a| {
            let h = a.strip_prefix("0x").unwrap_or(a);
            u64::from_str_radix(h, 16)
                .map_err(|_| bad(format, line, format!("`{a}` is not a hexadecimal address")))
        })
        .collect()
}

/// `N: M` → (N, M), counts that are never negative.
pub(super) fn pair(format: &'static str, line: usize, s: &str) -> Result<(u64, u64), InputError> {
    let (a, b) = s.split_once(':').ok_or_else(|| {
        bad(
            format,
            line,
            format!("expected `objects: bytes`, found `{}`", s.trim()),
        )
    })?;
    let num = |t: &str| {
        let t = t.trim();
        t.parse::<u64>().map_err(|_| {
            bad(
                format,
                line,
                format!("`{t}` is not a count (a non-negative integer)"),
            )
        })
    };
    Ok((num(a)?, num(b)?))
}

/// `inuse: bytes [alloc: bytes]` → its counts.
pub(super) fn counts(format: &'static str, line: usize, s: &str) -> Result<Counts, InputError> {
    let (inuse, rest) = s.split_once('[').ok_or_else(|| {
        bad(
            format,
            line,
            "expected `objects: bytes [objects: bytes]` (in use, then allocated in brackets)",
        )
    })?;
    let alloc = rest
        .trim_end()
        .strip_suffix(']')
        .ok_or_else(|| bad(format, line, "expected `]` after the allocated counts"))?;
    let (inuse_objects, inuse_bytes) = pair(format, line, inuse)?;
    let (alloc_objects, alloc_bytes) = pair(format, line, alloc)?;
    Ok(Counts {
        inuse_objects,
        inuse_bytes,
        alloc_objects,
        alloc_bytes,
    })
}

/// The sampling rate of a header's `@ kind[/N]`: 1 = every allocation recorded.
fn header_rate(format: &'static str, line: usize, kind: &str) -> Result<u64, InputError> {
    let (name, n) = kind.split_once('/').unwrap_or((kind, ""));
    let n = || {
        n.parse::<u64>().map_err(|_| {
            bad(
                format,
                line,
                format!("`{kind}`: expected a sampling rate in bytes after `/`"),
            )
        })
    };
    match name {
        "heapprofile" => Ok(1),
        "heap_v2" | "heapz_v2" => n(),
        // pprof: the old `heap` kind states twice the mean interval.
        "heap" => Ok(n()? / 2),
        _ => Err(bad(
            format,
            line,
            format!("unknown heap profile kind `{kind}` (expected heapprofile, heap_v2/N, heapz_v2/N or heap/N)"),
        )),
    }
}

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    read_heap(
        GPERFTOOLS_HEAP.name,
        bytes,
        limits,
        "gperftools or jemalloc",
    )
}

/// A `heap profile:` file, as pprof's `parseHeap` reads it (gperftools and Go's
/// `debug=1` heap profiles are one format): the header, records, `#` comment lines
/// skipped (Go's symbolized frames and `runtime.MemStats`), and the maps section.
/// `program` names the writer in reports (see [`LEGACY`]).
pub(super) fn read_heap(
    format: &'static str,
    bytes: &[u8],
    limits: &Limits,
    program: &str,
) -> Result<Input, InputError> {
    let ((n, header), mut lines) = header(format, bytes)?;
    let (totals, kind) = header
        .trim()
        .strip_prefix("heap profile:")
        .and_then(|h| h.split_once('@'))
        .ok_or_else(|| {
            bad(
                format,
                n,
                "expected `heap profile: N: N [N: N] @ heapprofile` (or `@ heap_v2/RATE`, `@ heap/2×RATE`)",
            )
        })?;
    let totals = counts(format, n, totals)?;
    // pprof's `parseHeapHeader`: allocation totals are kept when the header's differ
    // from those in use and are not 0.
    let allocations = (totals.alloc_objects != totals.inuse_objects && totals.alloc_objects != 0)
        || (totals.alloc_bytes != totals.inuse_bytes && totals.alloc_bytes != 0);
    let rate = header_rate(format, n, kind.trim())?;
    let mut r = Records::new(format, limits, bytes.len(), rate);
    while let Some((n, l)) = lines.next() {
        let t = l.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if t == "MAPPED_LIBRARIES:" || t == "--- Memory map: ---" {
            r.maps(n + 1, lines.map(|(_, l)| l))?;
            break;
        }
        let (c, stack) = t.split_once('@').ok_or_else(|| {
            bad(
                format,
                n,
                "expected `N: N [N: N] @ 0xADDR …` or `MAPPED_LIBRARIES:`",
            )
        })?;
        let c = counts(format, n, c)?;
        r.record(n, c, addresses(format, n, stack)?)?;
    }
    let origin = LEGACY
        .iter()
        .find(|l| l.program == program && l.allocations == allocations)
        .unwrap_or(&LEGACY[0]);
    Ok(r.finish(origin))
}

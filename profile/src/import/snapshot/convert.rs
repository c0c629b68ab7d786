//! Snapshot → profile: unsampling (Go's `scaleHeapSample`), the allocation site (see
//! [`super::site`]), and symbolization through the [`Symbols`] a caller passes in.

use super::{inspect, site};
use crate::import::{kind_of as kind, Kind};
use crate::limits::{Budget, LimitError, Limits};
use crate::profile::{Builder, Line, Mapping, MappingFlags, Profile};
use rustc_hash::FxHashMap as HashMap;
use sampler_core::decoded::Snapshot;

/// The four sample types of a heap profile, in Go's order (pprof's default, the last,
/// is `inuse_space`).
pub const SAMPLE_TYPES: [(&str, &str); 4] = [
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];

/// The two sample types pprof shows for a legacy text heap profile without allocation
/// totals (see [`crate::import::Legacy`]): what is in use.
const INUSE_ONLY_TYPES: [(&str, &str); 2] = [("objects", "count"), ("space", "bytes")];

/// The snapshot keeps no allocation totals apart from what is in use (a legacy text
/// profile whose header says so): its profile has [`INUSE_ONLY_TYPES`].
fn inuse_only(snap: &Snapshot) -> bool {
    crate::import::legacy(snap.version).is_some_and(|l| !l.allocations)
}

/// pprof's `allocRxStr` and `allocSkipRxStr` (`legacy_profile.go`), the `drop_frames`
/// and `keep_frames` its `addLegacyFrameInfo` gives every legacy heap profile: the
/// allocators' own frames (and the Go runtime's, but for panics and reflective calls)
/// are pruned below the program's, as `go tool pprof` shows such a file.
const LEGACY_DROP_FRAMES: &str = concat!(
    "calloc|cfree|malloc|free|memalign|do_memalign|(__)?posix_memalign|pvalloc|valloc|realloc|",
    "tcmalloc::.*|tc_calloc|tc_cfree|tc_malloc|tc_free|tc_memalign|tc_posix_memalign|",
    "tc_pvalloc|tc_valloc|tc_realloc|tc_new|tc_delete|tc_newarray|tc_deletearray|",
    "tc_new_nothrow|tc_newarray_nothrow|",
    "malloc_zone_malloc|malloc_zone_calloc|malloc_zone_valloc|malloc_zone_realloc|",
    "malloc_zone_memalign|malloc_zone_free|",
    "runtime\\..*|",
    "BaseArena::.*|(::)?do_malloc_no_errno|(::)?do_malloc_pages|(::)?do_malloc|",
    "DoSampledAllocation|MallocedMemBlock::MallocedMemBlock|_M_allocate|",
    "__builtin_(vec_)?delete|__builtin_(vec_)?new|__gnu_cxx::new_allocator::allocate|",
    "__libc_malloc|__malloc_alloc_template::allocate|allocate|cpp_alloc|",
    "operator new(\\[\\])?|simple_alloc::allocate",
);
/// See [`LEGACY_DROP_FRAMES`].
const LEGACY_KEEP_FRAMES: &str = "runtime\\.panic|runtime\\.reflectcall|runtime\\.call[0-9]*";

/// pprof's `addLegacyFrameInfo`: the (`drop_frames`, `keep_frames`) it gives a legacy
/// profile of `kind`, so the allocator's, the lock's or the profiler's own frames are
/// pruned as `go tool pprof` prunes them.
pub(crate) fn legacy_frames(kind: Kind<'_>) -> (&'static str, &'static str) {
    match kind {
        Kind::Heap => (LEGACY_DROP_FRAMES, LEGACY_KEEP_FRAMES),
        Kind::Contention => (LOCK_DROP_FRAMES, ""),
        Kind::Cpu | Kind::Count(_) => (CPU_DROP_FRAMES, ""),
    }
}

/// pprof's `lockRxStr`: the `drop_frames` of a legacy contention profile.
const LOCK_DROP_FRAMES: &str = concat!(
    "RecordLockProfileData|(base::)?RecordLockProfileData.*|",
    "(base::)?SubmitMutexProfileData.*|(base::)?SubmitSpinLockProfileData.*|",
    "(base::Mutex::)?AwaitCommon.*|(base::Mutex::)?Unlock.*|(base::Mutex::)?UnlockSlow.*|",
    "(base::Mutex::)?ReaderUnlock.*|(base::MutexLock::)?~MutexLock.*|",
    "(Mutex::)?AwaitCommon.*|(Mutex::)?Unlock.*|(Mutex::)?UnlockSlow.*|",
    "(Mutex::)?ReaderUnlock.*|(MutexLock::)?~MutexLock.*|",
    "(SpinLock::)?Unlock.*|(SpinLock::)?SlowUnlock.*|(SpinLockHolder::)?~SpinLockHolder.*",
);

/// pprof's `cpuProfilerRxStr`: the `drop_frames` of every other legacy profile (CPU,
/// goroutine, threadcreate).
const CPU_DROP_FRAMES: &str = concat!(
    "ProfileData::Add|ProfileData::prof_handler|CpuProfiler::prof_handler|",
    "__pthread_sighandler|__restore",
);

/// One (possibly inlined) frame at an address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SymFrame {
    /// Demangled function name without the hash (`crate::module::function`).
    pub function: String,
    /// The name as stored (mangled), for pprof's `system_name`.
    pub system_name: String,
    /// Source file path, "" if unknown.
    pub file: String,
    /// Line number, 0 if unknown.
    pub line: u32,
    /// Column, 0 if unknown.
    pub column: u32,
}

/// Symbolized frames of one address: what [`to_profile`] needs from a symbolizer.
#[derive(Clone, Debug, Default)]
pub struct Resolved {
    /// Index into [`Symbols::mappings`] of the mapping the address is in.
    pub mapping: Option<usize>,
    /// Frames, innermost (inlined) first; empty = unsymbolized.
    pub frames: Vec<SymFrame>,
    /// Frames came from DWARF (files, lines, inline info) rather than a symbol table.
    pub dwarf: bool,
}

/// What conversion asks of symbolization: the pprof mappings and the frames of each
/// return address. The `heapsnap-symbolize` crate implements it from ELF files;
/// [`NoSymbols`] keeps addresses.
pub trait Symbols {
    /// The mappings locations point into (pprof `Mapping`s without ids; filename and
    /// build id as strings).
    fn mappings(&self) -> Vec<(Mapping, String, String)>;
    /// The frames at a captured return address.
    fn resolve(&mut self, return_address: u64) -> Resolved;
    /// What the reader should know about the symbolization (no ELF, a wrong-looking
    /// one, files that could not be read): carried as `warning:` comments.
    fn warnings(&self) -> Vec<String> {
        Vec::new()
    }
}

/// No symbolization: addresses with their snapshot mappings.
pub struct NoSymbols<'a>(pub &'a Snapshot);

impl Symbols for NoSymbols<'_> {
    fn mappings(&self) -> Vec<(Mapping, String, String)> {
        snapshot_mappings(self.0)
    }
    fn resolve(&mut self, a: u64) -> Resolved {
        Resolved {
            mapping: mapping_index(self.0, a),
            ..Default::default()
        }
    }
}

/// The snapshot's mappings as pprof mappings.
pub fn snapshot_mappings(s: &Snapshot) -> Vec<(Mapping, String, String)> {
    s.mappings
        .iter()
        .map(|m| {
            (
                Mapping {
                    memory_start: m.start,
                    memory_limit: m.end,
                    file_offset: m.offset,
                    ..Default::default()
                },
                m.name.clone(),
                hex(&m.build_id),
            )
        })
        .collect()
}

/// Index of the snapshot mapping containing `addr`.
pub fn mapping_index(s: &Snapshot, addr: u64) -> Option<usize> {
    s.mappings
        .iter()
        .position(|m| addr >= m.start && addr < m.end)
}

/// Lower-case hex (build ids).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Go's `scaleHeapSample`: the expected number and size of all allocations that a
/// sample of `count` objects / `size` bytes at mean interval `rate` stands for
/// (`scale = 1 / (1 - exp(-avg/rate))`). Rate ≤ 1 = every allocation was recorded.
pub fn scale_heap_sample(count: i64, size: i64, rate: i64) -> (i64, i64) {
    if count == 0 || size == 0 {
        return (0, 0);
    }
    if rate <= 1 {
        return (count, size);
    }
    let avg = size as f64 / count as f64;
    let scale = 1.0 / (1.0 - (-avg / rate as f64).exp());
    ((count as f64 * scale) as i64, (size as f64 * scale) as i64)
}

/// The four unsampled values of a bucket, in [`SAMPLE_TYPES`] order.
pub fn bucket_values(b: &sampler_core::decoded::Bucket, rate: u64) -> [i64; 4] {
    let rate = i64::try_from(rate).unwrap_or(i64::MAX);
    let c = &b.active;
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let (ao, ab) = scale_heap_sample(i(c.allocs), i(c.alloc_bytes), rate);
    let (io, ib) = scale_heap_sample(
        i(c.allocs.saturating_sub(c.frees)),
        i(c.alloc_bytes.saturating_sub(c.free_bytes)),
        rate,
    );
    [ao, ab, io, ib]
}

/// Converts a snapshot into a heap profile: one sample per bucket with a non-zero
/// value, values unsampled, a `bytes` label with the object size, the counters and
/// warnings as comments. Deterministic: the same snapshot and ELFs give the same
/// profile. `progress(done, total)` is called now and then with bucket counts.
pub fn to_profile(
    snap: &Snapshot,
    symbols: &mut dyn Symbols,
    progress: &mut dyn FnMut(u64, u64),
) -> Profile {
    // Cannot fail: nothing is limited.
    let mut budget = Budget::new(&Limits::unlimited(), 0);
    to_profile_limited(snap, symbols, progress, &mut budget).unwrap_or_default()
}

/// [`to_profile`] counting what it builds in `budget` (made for the input file's size
/// and limits, see [`crate::limits`]): each sample, value, label and location id of a
/// sample, and each location with its lines, functions and strings. Stacks deeper
/// than `stack-depth` are refused. A small snapshot can describe a large profile (one
/// deep stack shared by many buckets is one location id per frame per bucket), so the
/// conversion, not only the decoder, must count.
pub fn to_profile_limited(
    snap: &Snapshot,
    symbols: &mut dyn Symbols,
    progress: &mut dyn FnMut(u64, u64),
    budget: &mut Budget,
) -> Result<Profile, LimitError> {
    let inuse_only = inuse_only(snap);
    let kind = kind(snap);
    let types = if inuse_only {
        INUSE_ONLY_TYPES.to_vec()
    } else {
        kind.sample_types()
    };
    let mut c = Converter::new(snap, symbols, &types, true);
    // At most one sample per bucket (the decoder bounded their number by the input's
    // size): exactly that room, not up to twice it from doubling.
    c.b.reserve_samples(snap.buckets.len());
    let total = snap.buckets.len() as u64;
    let mut samples = 0u64;
    for (n, bucket) in snap.buckets.iter().enumerate() {
        if n % 4096 == 0 {
            progress(n as u64, total);
        }
        let values = match kind {
            Kind::Heap => bucket_values(bucket, snap.sample_rate),
            // Already unsampled by the reader (see `Kind`).
            _ => {
                let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
                [i(bucket.active.allocs), i(bucket.active.alloc_bytes), 0, 0]
            }
        };
        let values = if inuse_only {
            &values[2..]
        } else {
            &values[..types.len()]
        };
        if values.iter().all(|&v| v == 0) {
            continue;
        }
        let size = i64::try_from(bucket.size).unwrap_or(i64::MAX);
        let label = if size != 0 {
            vec![c.b.num_label("bytes", size, "")]
        } else {
            vec![]
        };
        let at = || format!("bucket {n} (stack id {})", bucket.stack_id);
        let locs = c.stack_locations(bucket.stack_id, budget, &at)?;
        budget.charge(6 + locs.len() as u64, at)?;
        samples += 1;
        budget.cap("table-entries", samples, || "samples".into(), at)?;
        c.b.sample(locs, crate::profile::values(values), label);
    }
    progress(total, total);
    Ok(c.finish())
}

/// A return address, symbolized once.
struct Address {
    resolved: Resolved,
    /// `site::library_lead` of its frames: (frames, leading allocator-plumbing frames).
    lead: (usize, usize),
}

/// The state of one [`to_profile`] run: the builder, and what was already resolved or
/// built, so each address is symbolized once and each stack's locations built once.
struct Converter<'a> {
    b: Builder,
    symbols: &'a mut dyn Symbols,
    /// pprof mapping id of each of `symbols.mappings()`, by index.
    mapping_ids: Vec<u64>,
    /// Per pprof mapping id: what symbolization provided for it.
    flags: HashMap<u64, MappingFlags>,
    /// Every address seen, symbolized.
    addresses: HashMap<u64, Address>,
    /// Location id by (address, innermost frames trimmed at an allocation site).
    locations: HashMap<(u64, usize), u64>,
    /// The snapshot's stacks by id, and the location ids built for each (buckets of
    /// several sizes share a stack).
    frames: HashMap<u32, &'a [u64]>,
    stacks: HashMap<u32, Vec<u64>>,
    /// Per stack: (first frame kept, innermost lines of it skipped), the allocation
    /// site's trim.
    trims: HashMap<u32, (usize, usize)>,
    /// The snapshot is a heap's (its stacks are trimmed at the allocation site).
    heap: bool,
}

impl<'a> Converter<'a> {
    fn new(
        snap: &'a Snapshot,
        symbols: &'a mut dyn Symbols,
        types: &[(&str, &str)],
        period: bool,
    ) -> Self {
        let mut b = Builder::new();
        for (t, u) in types {
            b.sample_type(t, u);
        }
        let kind = kind(snap);
        if period {
            let (t, u) = kind.period_type();
            b.period(t, u, i64::try_from(snap.sample_rate).unwrap_or(i64::MAX));
        }
        for c in inspect::comments(snap) {
            b.comment(&c);
        }
        if crate::import::legacy(snap.version).is_some() {
            // pprof's addLegacyFrameInfo.
            let (drop, keep) = legacy_frames(kind);
            let (drop, keep) = (b.string(drop), b.string(keep));
            let h = b.header_mut();
            h.drop_frames = drop;
            h.keep_frames = keep;
        }
        for w in symbols.warnings() {
            b.comment(&format!("warning: {w}"));
        }
        let mapping_ids = symbols
            .mappings()
            .iter()
            .map(|(m, file, id)| b.mapping(m, file, id).0)
            .collect();
        Converter {
            b,
            symbols,
            mapping_ids,
            flags: HashMap::default(),
            addresses: HashMap::default(),
            locations: HashMap::default(),
            frames: snap
                .stacks
                .iter()
                .map(|s| (s.id, s.frames.as_slice()))
                .collect(),
            stacks: HashMap::default(),
            trims: HashMap::default(),
            heap: kind == Kind::Heap,
        }
    }

    /// The location ids of a stack, leaf first, from its allocation site on: leaf
    /// frames of the allocator's plumbing are trimmed (see `site`), so every reader
    /// shows the allocating function as the leaf.
    fn stack_locations(
        &mut self,
        stack_id: u32,
        budget: &mut Budget,
        at: &dyn Fn() -> String,
    ) -> Result<Vec<u64>, LimitError> {
        if let Some(locs) = self.stacks.get(&stack_id) {
            return Ok(locs.clone());
        }
        let frames = self.frames.get(&stack_id).copied().unwrap_or(&[]);
        budget.cap(
            "stack-depth",
            frames.len() as u64,
            || "frames in one stack".into(),
            at,
        )?;
        for &addr in frames {
            if !self.addresses.contains_key(&addr) {
                budget.cap(
                    "table-entries",
                    self.addresses.len() as u64 + 1,
                    || "locations (distinct return addresses)".into(),
                    at,
                )?;
                let resolved = self.symbols.resolve(addr);
                // Eight for the address (its symbolization, its location and the
                // maps that intern both: about 350 bytes, measured), and a line, a
                // function and strings per frame (an upper bound: they are shared).
                budget.charge(8 + 3 * resolved.frames.len() as u64, at)?;
                let lead = site::library_lead(
                    resolved
                        .frames
                        .iter()
                        .map(|f| (f.function.as_str(), f.file.as_str())),
                );
                self.addresses.insert(addr, Address { resolved, lead });
            }
        }
        // Only a heap profile's stacks start in the allocator.
        let (first, skip) = if self.heap {
            site::allocation_site_of_leads(
                frames
                    .iter()
                    .map(|a| self.addresses.get(a).map_or((0, 0), |r| r.lead)),
            )
        } else {
            (0, 0)
        };
        self.trims.insert(stack_id, (first, skip));
        let frames = frames.get(first..).unwrap_or(&[]);
        let locs: Vec<u64> = frames
            .iter()
            .enumerate()
            .filter_map(|(k, &addr)| self.location(addr, if k == 0 { skip } else { 0 }))
            .collect();
        self.stacks.insert(stack_id, locs.clone());
        Ok(locs)
    }

    /// The location of a (resolved) address with its `skip` innermost frames dropped.
    fn location(&mut self, addr: u64, skip: usize) -> Option<u64> {
        if let Some(&id) = self.locations.get(&(addr, skip)) {
            return Some(id);
        }
        let r = &self.addresses.get(&addr)?.resolved;
        let mapping_id = r
            .mapping
            .and_then(|i| self.mapping_ids.get(i))
            .copied()
            .unwrap_or(0);
        let mut lines = Vec::with_capacity(r.frames.len());
        for f in r.frames.iter().skip(skip) {
            let fid = self.b.function(&f.function, &f.system_name, &f.file, 0);
            lines.push(Line {
                function_id: fid,
                line: i64::from(f.line),
                column: 0,
            });
        }
        if mapping_id != 0 && !r.frames.is_empty() {
            let f = self.flags.entry(mapping_id).or_default();
            f.functions |= r.frames.iter().any(|f| !f.function.is_empty());
            f.filenames |= r.frames.iter().any(|f| !f.file.is_empty());
            f.line_numbers |= r.frames.iter().any(|f| f.line != 0);
            f.inline_frames |= r.dwarf;
        }
        let id = self.b.location(mapping_id, addr, lines, false);
        self.locations.insert((addr, skip), id);
        Some(id)
    }

    /// The symbolized frames of a stack from its allocation site on, innermost first
    /// (after [`Converter::stack_locations`] of it); an unsymbolized address is one
    /// frame named by its hex address.
    fn site_frames(&self, stack_id: u32) -> Vec<SymFrame> {
        let frames = self.frames.get(&stack_id).copied().unwrap_or(&[]);
        let (first, skip) = self.trims.get(&stack_id).copied().unwrap_or((0, 0));
        let mut out = Vec::new();
        for (k, addr) in frames.iter().enumerate().skip(first) {
            let skip = if k == first { skip } else { 0 };
            match self.addresses.get(addr) {
                Some(a) if !a.resolved.frames.is_empty() => {
                    out.extend(a.resolved.frames.iter().skip(skip).cloned())
                }
                _ => out.push(SymFrame {
                    function: format!("{addr:#x}"),
                    ..SymFrame::default()
                }),
            }
        }
        out
    }

    fn finish(mut self) -> Profile {
        for (id, f) in self.flags {
            self.b.mapping_flags(id, f);
        }
        self.b.finish()
    }
}

/// The snapshot's stacks as symbolized pprof locations, trimmed at the allocation site
/// exactly as [`to_profile`] does, for a caller that builds its own samples on them
/// (the retention profile of `heapsnap retain`, the sites of `heapsnap leaks`): one
/// symbolization, one notion of "allocation site".
pub struct SiteStacks<'a> {
    c: Converter<'a>,
}

impl<'a> SiteStacks<'a> {
    /// A profile with these sample types (no period), the snapshot's comments and the
    /// symbolizer's warnings.
    pub fn new(snap: &'a Snapshot, symbols: &'a mut dyn Symbols, types: &[(&str, &str)]) -> Self {
        SiteStacks {
            c: Converter::new(snap, symbols, types, false),
        }
    }

    /// Location ids of a stack, leaf (the allocation site) first.
    pub fn locations(&mut self, stack_id: u32) -> Vec<u64> {
        let mut budget = Budget::new(&Limits::unlimited(), 0);
        self.c
            .stack_locations(stack_id, &mut budget, &|| String::new())
            .unwrap_or_default()
    }

    /// Frames of a stack from its allocation site on, innermost first.
    pub fn frames(&mut self, stack_id: u32) -> Vec<SymFrame> {
        self.locations(stack_id);
        self.c.site_frames(stack_id)
    }

    /// The builder, for the caller's own locations and samples.
    pub fn builder(&mut self) -> &mut Builder {
        &mut self.c.b
    }

    /// The finished profile.
    pub fn finish(self) -> Profile {
        self.c.finish()
    }
}

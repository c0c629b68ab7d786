//! heapsnap's host profiler against jemalloc's, on the same workloads (issue 19):
//! `cargo xtask bench --peers` builds this in release and runs it.
//!
//! One binary, six allocator configurations, each in a process of its own: the parent
//! re-executes itself as `bench-peers --child CONFIG --out DIR` with `BENCH_PEERS_ALLOC`
//! naming the allocator (read by the global allocator on its first call, before `main`
//! allocates anything) and, for jemalloc, `_RJEM_MALLOC_CONF` setting its profiler
//! (tikv-jemalloc-sys builds jemalloc with the `_rjem_` prefix, so that is the name of
//! jemalloc's `MALLOC_CONF` here).
//!
//! Every run proves its profiler sampled: the child keeps a large map alive and writes a
//! jemalloc `prof.dump` or a heapsnap snapshot; the parent checks it holds samples (a
//! `heap_v2/` header at the configured interval with non-zero counts; heapsnap's sample
//! counter) and, once per configuration, that `heapsnap top` on it names the workload's
//! function. A run that did not sample fails the benchmark instead of giving a figure.
//!
//! ```sh
//! bench-peers [--short] [--runs N] [--out DIR] [--heapsnap PATH] [--guard]
//! ```
//!
//! Built with `--features lock-stats` it also prints, per workload, how long heapsnap's
//! sampled allocations and sampled frees waited for the profiler's lock and held it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use sampler_core::{lock_stats, mappings, HostStack, ProfiledAlloc, Profiler};
use tikv_jemallocator::Jemalloc;

/// heapsnap's profiler at the default mean interval with the table sizes its docs give
/// a host program (`ProfiledAlloc`'s example): live map and free filter for 4096
/// sampled objects.
static HEAPSNAP_512K: ProfiledAlloc<System, HostStack, 1024, 16384, 2048, 4096> =
    ProfiledAlloc::new(System, HostStack, 512 * 1024, 1);
/// At 4 KiB, 128 times the samples: the host example's larger tables (64 Ki live
/// sampled objects; the free filter is then 256 KiB).
static HEAPSNAP_4K: ProfiledAlloc<System, HostStack, 4096, { 1 << 16 }, 8192, { 1 << 16 }> =
    ProfiledAlloc::new(System, HostStack, 4096, 1);

/// The allocator configurations, in table order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Config {
    System = 1,
    Heapsnap512K,
    Heapsnap4K,
    Jemalloc,
    JemallocProf512K,
    JemallocProf4K,
}

/// The least margin (percentage points of overhead) the guard allows heapsnap over
/// jemalloc, whatever the measured noise (see the guard in `report`).
const GUARD_FLOOR: f64 = 3.0;

const CONFIGS: [Config; 6] = [
    Config::System,
    Config::Heapsnap512K,
    Config::Heapsnap4K,
    Config::Jemalloc,
    Config::JemallocProf512K,
    Config::JemallocProf4K,
];

impl Config {
    fn name(self) -> &'static str {
        match self {
            Config::System => "system",
            Config::Heapsnap512K => "heapsnap-512k",
            Config::Heapsnap4K => "heapsnap-4k",
            Config::Jemalloc => "jemalloc",
            Config::JemallocProf512K => "jemalloc-prof-512k",
            Config::JemallocProf4K => "jemalloc-prof-4k",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Config::System => "System",
            Config::Heapsnap512K => "ProfiledAlloc<System> @512 KiB",
            Config::Heapsnap4K => "ProfiledAlloc<System> @4 KiB",
            Config::Jemalloc => "jemalloc, prof:false",
            Config::JemallocProf512K => "jemalloc, prof:true lg_prof_sample:19",
            Config::JemallocProf4K => "jemalloc, prof:true lg_prof_sample:12",
        }
    }

    fn parse(s: &[u8]) -> Option<Config> {
        CONFIGS.into_iter().find(|c| c.name().as_bytes() == s)
    }

    /// The unprofiled allocator this one is compared with.
    fn base(self) -> Config {
        match self {
            Config::System | Config::Heapsnap512K | Config::Heapsnap4K => Config::System,
            _ => Config::Jemalloc,
        }
    }

    /// jemalloc's options for the child (`None`: not jemalloc).
    fn malloc_conf(self) -> Option<&'static str> {
        match self {
            // Built with --enable-prof like the others, profiler off: the same
            // jemalloc, so the ratio is what turning the profiler on costs.
            Config::Jemalloc => Some("prof:false"),
            Config::JemallocProf512K => Some("prof:true,prof_active:true,lg_prof_sample:19"),
            Config::JemallocProf4K => Some("prof:true,prof_active:true,lg_prof_sample:12"),
            _ => None,
        }
    }

    /// Mean sample interval in bytes, for the profiled configurations.
    fn interval(self) -> Option<usize> {
        match self {
            Config::Heapsnap512K | Config::JemallocProf512K => Some(512 * 1024),
            Config::Heapsnap4K | Config::JemallocProf4K => Some(4096),
            _ => None,
        }
    }
}

/// The environment variable naming the child's allocator.
const ALLOC_ENV: &str = "BENCH_PEERS_ALLOC";
const ALLOC_ENV_C: &[u8] = b"BENCH_PEERS_ALLOC\0";

/// 0: not decided yet; else a `Config` discriminant.
static CHOSEN: AtomicU8 = AtomicU8::new(0);

/// The global allocator: the configuration named by `BENCH_PEERS_ALLOC` (System when
/// unset, as in the parent), fixed for the whole process on the first call. The
/// dispatch (one relaxed load and a predictable branch) is paid by every
/// configuration alike.
struct Dispatch;

#[global_allocator]
static GLOBAL: Dispatch = Dispatch;

#[inline(always)]
fn chosen() -> u8 {
    match CHOSEN.load(Ordering::Relaxed) {
        0 => choose(),
        c => c,
    }
}

#[cold]
#[inline(never)]
fn choose() -> u8 {
    // SAFETY: getenv does not allocate; the name is NUL-terminated. Racing threads
    // read the same environment and store the same value.
    let v = unsafe { libc::getenv(ALLOC_ENV_C.as_ptr().cast()) };
    let c = if v.is_null() {
        Config::System
    } else {
        // SAFETY: getenv returns a NUL-terminated string.
        let s = unsafe { std::ffi::CStr::from_ptr(v) };
        match Config::parse(s.to_bytes()) {
            Some(c) => c,
            None => {
                let msg = b"bench-peers: BENCH_PEERS_ALLOC names no configuration\n";
                // SAFETY: write(2) of a static buffer; abort without allocating.
                unsafe {
                    libc::write(2, msg.as_ptr().cast(), msg.len());
                    libc::abort()
                }
            }
        }
    } as u8;
    CHOSEN.store(c, Ordering::Relaxed);
    c
}

macro_rules! dispatch {
    ($c:expr, $a:ident => $e:expr) => {
        match $c {
            2 => {
                let $a = &HEAPSNAP_512K;
                $e
            }
            3 => {
                let $a = &HEAPSNAP_4K;
                $e
            }
            4..=6 => {
                let $a = &Jemalloc;
                $e
            }
            _ => {
                let $a = &System;
                $e
            }
        }
    };
}

// SAFETY: every call goes to the one allocator chosen for the process, so a block is
// always freed by the allocator that made it.
unsafe impl GlobalAlloc for Dispatch {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        dispatch!(chosen(), a => a.alloc(l))
    }
    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        dispatch!(chosen(), a => a.dealloc(p, l))
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        dispatch!(chosen(), a => a.alloc_zeroed(l))
    }
    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        dispatch!(chosen(), a => a.realloc(p, l, n))
    }
}

// ---------------------------------------------------------------- the workloads

/// The workloads, in table order.
/// `pipe-1-thread` is the pipe's allocations and frees without its threads: the same
/// sizes through one thread and a bounded queue. On two cores the 4-thread pipe's CPU
/// time is the scheduler's (under `System` it varies 2–3× run to run with the
/// profiler off), so the allocations' own cost is guarded on the 1-thread form.
const WORKLOADS: [&str; 4] = ["btreemap-churn", "json", "pipe-4-threads", "pipe-1-thread"];

/// One op of the churn: a map of `n` small entries, built then dropped by the caller.
#[inline(never)]
fn build_map(n: usize, salt: usize) -> BTreeMap<String, Vec<u8>> {
    let mut m = BTreeMap::new();
    for i in 0..n {
        let k = (i.wrapping_mul(2_654_435_761) ^ salt) % 1_000_003;
        m.insert(format!("key-{k:07}"), vec![i as u8; 8 + (i * 37) % 200]);
    }
    m
}

/// The JSON document the json workload parses and writes back: 300 records.
fn json_doc() -> String {
    let records: Vec<serde_json::Value> = (0..300)
        .map(|i| {
            serde_json::json!({
                "id": i,
                "name": format!("device-{i:04}"),
                "tags": ["heap", "alloc", format!("t{}", i % 17)],
                "load": (i as f64) * 0.37,
                "owner": { "team": format!("team-{}", i % 9), "active": i % 3 == 0 },
                "samples": (0..8).map(|j| i * 8 + j).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::to_string(&records).unwrap_or_default()
}

/// One op of the json workload: parse into a `Value`, serialize back.
#[inline(never)]
fn json_round_trip(doc: &str) -> usize {
    match serde_json::from_str::<serde_json::Value>(doc) {
        Ok(v) => serde_json::to_string(&v).map(|s| s.len()).unwrap_or(0),
        Err(_) => 0,
    }
}

/// `msgs` messages from 2 producers to 2 consumers (4 threads, two bounded channels).
#[inline(never)]
fn pipe(msgs: usize) -> usize {
    std::thread::scope(|s| {
        let mut consumers = Vec::new();
        for p in 0..2 {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(64);
            s.spawn(move || {
                for i in 0..msgs / 2 {
                    let len = 32 + (i * 131 + p * 17) % 2048;
                    if tx.send(vec![i as u8; len]).is_err() {
                        break;
                    }
                }
            });
            consumers.push(s.spawn(move || rx.iter().map(|m| m.len() + m[0] as usize).sum()));
        }
        consumers.into_iter().map(|c| c.join().unwrap_or(0)).sum()
    })
}

/// The pipe's messages through one thread (a bounded queue, the same sizes): the same
/// allocations and frees without the threads, for `--only pipe-1-thread`, which tells
/// a multithreaded cost from the allocations' own.
#[inline(never)]
fn pipe_one_thread(msgs: usize) -> usize {
    let mut q = std::collections::VecDeque::with_capacity(64);
    let mut sum = 0;
    for i in 0..msgs {
        let (k, p) = (i / 2, i % 2);
        let len = 32 + (k * 131 + p * 17) % 2048;
        if q.len() == 64 {
            if let Some(m) = q.pop_front() {
                let m: Vec<u8> = m;
                sum += m.len() + m[0] as usize;
            }
        }
        q.push_back(vec![k as u8; len]);
    }
    sum + q.into_iter().map(|m| m.len()).sum::<usize>()
}

/// Ops per run of each workload, about 1 s each under System on the 2-core machine
/// (`--short` runs a fifth).
const CHURN_OPS: usize = 2500;
const CHURN_ENTRIES: usize = 1000;
const JSON_OPS: usize = 1000;
const PIPE_MSGS: usize = 3_000_000;

/// Thread or process CPU time.
fn cpu(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: plain syscall wrapper writing into `ts`.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// The process's context switches so far, voluntary (a thread blocked: on the 4-thread
/// pipe, a full or empty channel) and involuntary (preempted), every thread's.
fn context_switches() -> (u64, u64) {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF sums every thread of the process.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    (ru.ru_nvcsw as u64, ru.ru_nivcsw as u64)
}

/// Runs `ops` ops of a workload; prints `result NAME OPS WALL_S CPU_S`,
/// `switches NAME VOLUNTARY INVOLUNTARY` (the workload's context switches), and with the
/// feature `lock-stats` the workload's heapsnap critical sections:
/// `locks NAME` then, for sampled allocations and for slow-path frees,
/// `ENTRIES WAIT_NS MAX_WAIT_NS HOLD_NS MAX_HOLD_NS`.
fn measure(name: &str, ops: usize, f: impl FnOnce()) {
    let locks = lock_stats::stats();
    let switches = context_switches();
    let (w, c) = (Instant::now(), cpu(libc::CLOCK_PROCESS_CPUTIME_ID));
    f();
    let cpu_s = (cpu(libc::CLOCK_PROCESS_CPUTIME_ID) - c).as_secs_f64();
    let (vol, invol) = context_switches();
    println!(
        "result {name} {ops} {:.6} {cpu_s:.6}",
        w.elapsed().as_secs_f64()
    );
    println!(
        "switches {name} {} {}",
        vol - switches.0,
        invol - switches.1
    );
    if cfg!(feature = "lock-stats") {
        let now = lock_stats::stats();
        let mut line = format!("locks {name}");
        for (a, b) in locks.iter().zip(&now) {
            line += &format!(
                " {} {} {} {} {}",
                b.entries - a.entries,
                b.wait_ns - a.wait_ns,
                b.max_wait_ns,
                b.hold_ns - a.hold_ns,
                b.max_hold_ns
            );
        }
        println!("{line}");
    }
}

/// Frames of recursion above `main`'s own (about 8 with the runtime's and libc's) in
/// the sampled-allocation cost: 32 frames in all.
const COST_DEPTH: usize = 24;
/// Timed allocations in the sampled-allocation cost.
const COST_ALLOCS: usize = 20_000;

/// `COST_ALLOCS` 64-byte alloc+free pairs `depth` frames down, each timed.
#[inline(never)]
fn deep_allocs(depth: usize, out: &mut Vec<u64>) {
    if depth == 0 {
        for _ in 0..COST_ALLOCS {
            let t = Instant::now();
            black_box(Box::new([7u8; 64]));
            out.push(t.elapsed().as_nanos() as u64);
        }
    } else {
        deep_allocs(depth - 1, out);
        black_box(depth);
    }
}

/// The cost of one sampled allocation: every allocation sampled (heapsnap at rate 1,
/// jemalloc `prof.reset` to lg_prof_sample 0), p50 and p99 of an alloc+free pair.
fn sample_cost(config: Config) -> Result<(), String> {
    match config {
        Config::Heapsnap512K => {
            HEAPSNAP_512K.profiler().set_rate(1);
        }
        Config::JemallocProf512K => {
            // SAFETY: prof.reset takes a size_t, the new lg_prof_sample.
            unsafe { tikv_jemalloc_ctl::raw::write(b"prof.reset\0", 0usize) }
                .map_err(|e| format!("mallctl prof.reset: {e}"))?;
            // The thread's next sampling point was drawn at the old mean interval (an
            // exponential: unbounded): one allocation larger than it can be, in
            // practice, so that every one after it is sampled.
            black_box(vec![1u8; 256 << 20]);
        }
        _ => return Err(format!("no sampled-allocation cost for {}", config.name())),
    }
    let mut times = Vec::with_capacity(COST_ALLOCS);
    deep_allocs(COST_DEPTH, &mut times); // warm-up: stacks interned, caches filled
    times.clear();
    deep_allocs(COST_DEPTH, &mut times);
    times.sort_unstable();
    let pct = |p: usize| times.get(times.len() * p / 100).copied().unwrap_or(0);
    // Proof that every one was sampled: heapsnap's counter, jemalloc's live rate.
    match config {
        Config::Heapsnap512K => {
            let n = HEAPSNAP_512K.profiler().counters().samples;
            if n < 2 * COST_ALLOCS as u64 {
                return Err(format!(
                    "heapsnap sampled {n} of {} allocations",
                    2 * COST_ALLOCS
                ));
            }
        }
        _ => {
            // SAFETY: mallctl read of a size_t.
            let lg = unsafe { tikv_jemalloc_ctl::raw::read::<usize>(b"prof.lg_sample\0") }
                .map_err(|e| format!("mallctl prof.lg_sample: {e}"))?;
            if lg != 0 {
                return Err(format!("jemalloc samples at lg_sample {lg}, not 0"));
            }
            jemalloc_samples_every_allocation()?;
        }
    }
    println!("cost {} {}", pct(50), pct(99));
    Ok(())
}

/// Proof that jemalloc samples every allocation of this thread now (after the timed
/// ones): `KEPT` 64-byte blocks kept alive are all in a `prof.dump` (interval 1), not
/// just the setting read back.
fn jemalloc_samples_every_allocation() -> Result<(), String> {
    const KEPT: u64 = 1000;
    let kept: Vec<Box<[u8; 64]>> = (0..KEPT).map(|_| Box::new([3u8; 64])).collect();
    let path = std::env::temp_dir().join(format!("bench-peers-cost-{}.heap", std::process::id()));
    jemalloc_dump(&path)?;
    black_box(&kept);
    let objects = check_jemalloc_dump(&path, 1);
    let _ = std::fs::remove_file(&path);
    match objects? {
        n if n >= KEPT => Ok(()),
        n => Err(format!(
            "jemalloc's dump holds {n} live objects, fewer than the {KEPT} blocks kept: it does not sample every allocation"
        )),
    }
}

/// jemalloc's heap profile of this process now, written to `path` (`prof.dump`).
fn jemalloc_dump(path: &Path) -> Result<(), String> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("{}: a NUL in the path", path.display()))?;
    // SAFETY: prof.dump takes a `const char *` file name, which `c` outlives.
    unsafe { tikv_jemalloc_ctl::raw::write(b"prof.dump\0", c.as_ptr()) }
        .map_err(|e| format!("mallctl prof.dump to {}: {e}", path.display()))
}

fn child(config: Config, out: &Path, short: bool, only: Option<&str>) -> Result<(), String> {
    let got = chosen();
    if got != config as u8 {
        return Err(format!(
            "the allocator is configuration {got}, the argument names {config:?}: \
             set {ALLOC_ENV}={}",
            config.name()
        ));
    }
    if let Some(conf) = config.malloc_conf() {
        // The options jemalloc really runs with, not the ones asked for.
        // SAFETY: mallctl reads of a bool and a size_t option.
        let (prof, lg) = unsafe {
            (
                tikv_jemalloc_ctl::raw::read::<bool>(b"opt.prof\0")
                    .map_err(|e| format!("mallctl opt.prof: {e}"))?,
                tikv_jemalloc_ctl::raw::read::<usize>(b"opt.lg_prof_sample\0")
                    .map_err(|e| format!("mallctl opt.lg_prof_sample: {e}"))?,
            )
        };
        let want_prof = config.interval().is_some();
        let want_lg = config.interval().map(|i| i.trailing_zeros() as usize);
        if prof != want_prof || (want_prof && Some(lg) != want_lg) {
            return Err(format!(
                "jemalloc runs with opt.prof={prof} lg_prof_sample={lg}, not `{conf}` \
                 (is _RJEM_MALLOC_CONF the variable this jemalloc reads?)"
            ));
        }
    }
    let div = if short { 5 } else { 1 };
    let doc = json_doc();
    // Warm-up: the allocator's caches and the code, not measured.
    black_box(build_map(CHURN_ENTRIES, 0));
    black_box(json_round_trip(&doc));
    black_box(pipe(1000));
    black_box(pipe_one_thread(1000));
    // One workload alone, no profile written: for `perf` and paired comparisons.
    // `BENCH_PEERS_RATE` (heapsnap only) changes the mean interval first: 0 for the
    // not-sampled path alone, or heapsnap-4k's larger tables at 512 KiB.
    let rate = std::env::var("BENCH_PEERS_RATE")
        .ok()
        .and_then(|r| r.parse().ok());
    if let (Some(_), Some(r)) = (only, rate) {
        match config {
            Config::Heapsnap512K => HEAPSNAP_512K.profiler().set_rate(r),
            Config::Heapsnap4K => HEAPSNAP_4K.profiler().set_rate(r),
            _ => true,
        };
    }
    match only {
        None => {}
        Some("pipe-1-thread") => {
            measure(WORKLOADS[3], PIPE_MSGS / div, || {
                black_box(pipe_one_thread(PIPE_MSGS / div));
            });
            return Ok(());
        }
        Some("pipe-4-threads") => {
            measure(WORKLOADS[2], PIPE_MSGS / div, || {
                black_box(pipe(PIPE_MSGS / div));
            });
            return Ok(());
        }
        Some(w) => {
            return Err(format!(
                "--only: `{w}` is not pipe-4-threads or pipe-1-thread"
            ))
        }
    }
    measure(WORKLOADS[0], CHURN_OPS / div, || {
        for i in 0..CHURN_OPS / div {
            black_box(build_map(CHURN_ENTRIES, i));
        }
    });
    measure(WORKLOADS[1], JSON_OPS / div, || {
        for _ in 0..JSON_OPS / div {
            black_box(json_round_trip(&doc));
        }
    });
    measure(WORKLOADS[2], PIPE_MSGS / div, || {
        black_box(pipe(PIPE_MSGS / div));
    });
    measure(WORKLOADS[3], PIPE_MSGS / div, || {
        black_box(pipe_one_thread(PIPE_MSGS / div));
    });
    // The proof of sampling: a map large enough to be sampled at 512 KiB (~20 MB)
    // held while the profile is written, so its allocation site is in it.
    let kept = build_map(150_000, 7);
    let res = match config {
        Config::Heapsnap512K | Config::Heapsnap4K => {
            let path = out.join(format!("{}.snap", config.name()));
            if config == Config::Heapsnap512K {
                write_snapshot(HEAPSNAP_512K.profiler(), &path)?;
            } else {
                write_snapshot(HEAPSNAP_4K.profiler(), &path)?;
            }
            println!("profile {}", path.display());
            Ok(())
        }
        Config::JemallocProf512K | Config::JemallocProf4K => {
            let path = out.join(format!("{}.heap", config.name()));
            jemalloc_dump(&path)?;
            println!("profile {}", path.display());
            Ok(())
        }
        _ => Ok(()),
    };
    black_box(kept);
    res
}

/// Prints heapsnap's sample count and lost samples, writes a snapshot to `path`.
fn write_snapshot<
    const S: usize,
    const F: usize,
    const B: usize,
    const L: usize,
    const D: usize,
    const T: bool,
>(
    p: &Profiler<S, F, B, L, D, T>,
    path: &Path,
) -> Result<(), String> {
    // Publish the samples: a snapshot shows closed record cycles only.
    p.advance_cycle();
    let c = p.counters();
    println!("samples {}", c.samples);
    println!(
        "table-full {}",
        c.stack_table_full + c.bucket_table_full + c.live_map_full
    );
    let maps = mappings::current().map_err(|e| format!("/proc/self/maps: {e}"))?;
    let bytes = p
        .snapshot_vec(&mappings::as_refs(&maps), false)
        .map_err(|e| format!("heapsnap snapshot: {e}"))?;
    std::fs::write(path, bytes).map_err(|e| format!("{}: {e}", path.display()))
}

// ---------------------------------------------------------------- the parent

/// One child run's figures: ops per CPU-second and per wall second, per workload.
struct Run {
    cpu: [f64; 4],
    wall: [f64; 4],
    /// With `lock-stats`: per workload, the child's `locks` figures (sampled, then free:
    /// entries, wait ns, max wait ns, hold ns, max hold ns).
    locks: [Option<[u64; 10]>; 4],
    /// Per workload, the child's context switches (voluntary, involuntary).
    switches: [(u64, u64); 4],
}

struct Opts {
    short: bool,
    runs: usize,
    out: PathBuf,
    heapsnap: Option<PathBuf>,
    guard: bool,
    /// Child: time sampled allocations instead of the workloads.
    sample_cost: bool,
    /// Child: run this one workload only (`pipe-4-threads`, `pipe-1-thread`).
    only: Option<String>,
}

/// Runs this binary as the child for `config` (`--child NAME` and `args`), its
/// allocator and jemalloc's options set in its environment (and only there).
fn child_output(
    exe: &Path,
    config: Config,
    args: &[&std::ffi::OsStr],
) -> Result<std::process::Output, String> {
    let mut c = Command::new(exe);
    c.args(["--child", config.name()])
        .args(args)
        .env(ALLOC_ENV, config.name())
        .env_remove("_RJEM_MALLOC_CONF");
    if let Some(conf) = config.malloc_conf() {
        c.env("_RJEM_MALLOC_CONF", conf);
    }
    c.output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))
}

fn run_child(exe: &Path, o: &Opts, config: Config, check_symbols: bool) -> Result<Run, String> {
    let mut args = vec![std::ffi::OsStr::new("--out"), o.out.as_os_str()];
    if o.short {
        args.push("--short".as_ref());
    }
    let out = child_output(exe, config, &args)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "{}: the child {} ({})\n{}{stdout}",
            config.name(),
            out.status,
            config.label(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut run = Run {
        cpu: [0.0; 4],
        wall: [0.0; 4],
        locks: [None; 4],
        switches: [(0, 0); 4],
    };
    let (mut samples, mut full, mut profile) = (None, 0u64, None);
    for l in stdout.lines() {
        let f: Vec<&str> = l.split(' ').collect();
        match f.as_slice() {
            ["result", name, ops, wall, cpu] => {
                let i = WORKLOADS
                    .iter()
                    .position(|w| w == name)
                    .ok_or(format!("child printed an unknown workload: {l}"))?;
                let num = |s: &str| {
                    s.parse::<f64>()
                        .map_err(|_| format!("child printed a bad number: {l}"))
                };
                run.cpu[i] = num(ops)? / num(cpu)?;
                run.wall[i] = num(ops)? / num(wall)?;
            }
            ["locks", name, v @ ..] => {
                let i = WORKLOADS.iter().position(|w| w == name);
                let v: Vec<u64> = v.iter().filter_map(|x| x.parse().ok()).collect();
                if let (Some(i), Ok(v)) = (i, <[u64; 10]>::try_from(v)) {
                    run.locks[i] = Some(v);
                }
            }
            ["switches", name, v, i] => {
                if let Some(w) = WORKLOADS.iter().position(|w| w == name) {
                    run.switches[w] = (v.parse().unwrap_or(0), i.parse().unwrap_or(0));
                }
            }
            ["samples", n] => samples = n.parse::<u64>().ok(),
            ["table-full", n] => full = n.parse().unwrap_or(0),
            ["profile", p] => profile = Some(PathBuf::from(p)),
            _ => {}
        }
    }
    if run.cpu.iter().any(|&v| !(v.is_finite() && v > 0.0)) {
        return Err(format!(
            "{}: the child did not report every workload\n{stdout}",
            config.name()
        ));
    }
    let Some(interval) = config.interval() else {
        return Ok(run);
    };
    let profile = profile.ok_or(format!("{}: no profile written", config.name()))?;
    match config {
        Config::Heapsnap512K | Config::Heapsnap4K => {
            let n = samples.unwrap_or(0);
            if n == 0 {
                return Err(format!(
                    "{}: heapsnap's profiler recorded no samples",
                    config.name()
                ));
            }
            if full > 0 {
                eprintln!(
                    "    warning: {}: {full} samples lost to full tables",
                    config.name()
                );
            }
        }
        _ => {
            check_jemalloc_dump(&profile, interval)?;
        }
    }
    if check_symbols {
        if let Some(hs) = &o.heapsnap {
            check_names_workload(hs, &profile, exe)?;
        }
    }
    Ok(run)
}

/// The sampled-allocation cost in a child of its own: (p50, p99) in ns.
fn run_cost(exe: &Path, config: Config) -> Result<(u64, u64), String> {
    let out = child_output(exe, config, &["--sample-cost".as_ref()])?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let cost = stdout.lines().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        match f.as_slice() {
            ["cost", a, b] => Some((a.parse().ok()?, b.parse().ok()?)),
            _ => None,
        }
    });
    match cost {
        Some(c) if out.status.success() => Ok(c),
        _ => Err(format!(
            "{} (sampled-allocation cost): {}\n{}{stdout}",
            config.name(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// A jemalloc dump at `interval` with samples: `heap_v2/INTERVAL` then
/// `  t*: OBJECTS: BYTES [..]` with both non-zero. Returns OBJECTS.
fn check_jemalloc_dump(path: &Path, interval: usize) -> Result<u64, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("jemalloc wrote no readable dump at {}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header = lines.next().unwrap_or("");
    if header != format!("heap_v2/{interval}") {
        return Err(format!(
            "{}: header `{header}`, expected `heap_v2/{interval}`",
            path.display()
        ));
    }
    let totals = lines.next().unwrap_or("");
    let counts: Vec<u64> = totals
        .trim()
        .strip_prefix("t*:")
        .and_then(|r| r.split('[').next())
        .map(|r| r.split(':').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_default();
    if counts.len() != 2 || counts.contains(&0) {
        return Err(format!(
            "{}: no samples in jemalloc's dump (totals line `{totals}`)",
            path.display()
        ));
    }
    Ok(counts[0])
}

/// `heapsnap top PROFILE --elf EXE` names the map the child kept alive.
fn check_names_workload(heapsnap: &Path, profile: &Path, exe: &Path) -> Result<(), String> {
    let out = Command::new(heapsnap)
        .arg("top")
        .arg(profile)
        .arg("--elf")
        .arg(exe)
        .output()
        .map_err(|e| format!("cannot start {}: {e}", heapsnap.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !text.contains("build_map") {
        return Err(format!(
            "`heapsnap top {} --elf {}` does not name the workload's build_map ({})\n{text}{}",
            profile.display(),
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// (max − min) / median: the run-to-run spread.
fn spread(v: &[f64]) -> f64 {
    let max = v.iter().copied().fold(f64::MIN, f64::max);
    let min = v.iter().copied().fold(f64::MAX, f64::min);
    (max - min) / median(v)
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split(':').nth(1))
        .unwrap_or("unknown CPU")
        .trim()
        .to_string();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split(' ').take(3).collect();
    format!("{model}, {cpus} CPUs, load average {}", load.join(" "))
}

fn date() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn parent(o: &Opts) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    std::fs::create_dir_all(&o.out).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let started = Instant::now();
    let load_before = machine();
    // The short run (the test command's guard) skips the 4 KiB configurations.
    let configs: Vec<Config> = CONFIGS
        .into_iter()
        .filter(|c| !(o.short && c.interval() == Some(4096)))
        .collect();
    let at = |c: Config| configs.iter().position(|&x| x == c).unwrap_or(0);
    let mut runs: Vec<Vec<Run>> = configs.iter().map(|_| Vec::new()).collect();
    // Rounds of every configuration, the order rotated each round: a noisy neighbour
    // or a frequency change hits every configuration alike.
    for r in 0..o.runs {
        for k in 0..configs.len() {
            let i = (k + r) % configs.len();
            let run = run_child(&exe, o, configs[i], r == 0)?;
            runs[i].push(run);
        }
        eprintln!(
            "    round {}/{} done ({:.0} s)",
            r + 1,
            o.runs,
            started.elapsed().as_secs_f64()
        );
    }
    // Overhead of each profiled configuration over its allocator, per round (paired:
    // both ran within the same round), then the median and range over the rounds.
    let overheads = |c: usize, w: usize| -> Vec<f64> {
        let b = at(configs[c].base());
        (0..o.runs)
            .map(|r| (runs[b][r].cpu[w] / runs[c][r].cpu[w] - 1.0) * 100.0)
            .collect()
    };
    println!(
        "\nheapsnap's sampler against jemalloc's profiler (`cargo xtask bench --peers{}`)",
        if o.short { " --short" } else { "" }
    );
    println!("date: {}", date());
    println!("machine: {load_before}");
    println!(
        "{} runs per configuration, each a process of its own, rounds interleaved; ops per CPU-second \
         of the process (median, spread = (max-min)/median); overhead = extra CPU time per op over the \
         unprofiled allocator (median of the per-round paired ratios [min, max])",
        o.runs
    );
    let mut head = format!("\n| {:<38} |", "allocator");
    for w in WORKLOADS {
        head += &format!(" {:<30} |", format!("{w}: ops/s (spread), overhead"));
    }
    println!("{head}");
    println!(
        "|{}|{}",
        "-".repeat(40),
        format!("{}|", "-".repeat(32)).repeat(WORKLOADS.len())
    );
    let mut rows = Vec::new();
    for (c, config) in configs.iter().enumerate() {
        let mut row = format!("| {:<38} |", config.label());
        for w in 0..WORKLOADS.len() {
            let v: Vec<f64> = runs[c].iter().map(|r| r.cpu[w]).collect();
            let mut cell = format!("{:.0} ({:.1}%)", median(&v), spread(&v) * 100.0);
            if config.base() != *config {
                let ov = overheads(c, w);
                let (lo, hi) = (
                    ov.iter().copied().fold(f64::MAX, f64::min),
                    ov.iter().copied().fold(f64::MIN, f64::max),
                );
                cell += &format!(", {:+.1}% [{lo:+.1}, {hi:+.1}]", median(&ov));
            }
            row += &format!(" {cell:<30} |");
        }
        rows.push(row);
    }
    for r in &rows {
        println!("{r}");
    }
    println!(
        "\nwall-clock ops/s (median): {}",
        configs
            .iter()
            .enumerate()
            .map(|(c, config)| {
                let m: Vec<String> = (0..WORKLOADS.len())
                    .map(|w| {
                        let v: Vec<f64> = runs[c].iter().map(|r| r.wall[w]).collect();
                        format!("{:.0}", median(&v))
                    })
                    .collect();
                format!("{} {}", config.name(), m.join("/"))
            })
            .collect::<Vec<_>>()
            .join("; ")
    );
    // The 4-thread pipe's CPU time per message follows how often its threads block
    // (a full or empty channel: a futex wait, a wake-up, a context switch), which
    // the scheduler decides; each run's ops/s beside its switches shows it.
    let pipe = 2;
    let ops = (PIPE_MSGS / if o.short { 5 } else { 1 }) as f64;
    println!(
        "\npipe-4-threads, per run (rounds in order): CPU ops/s and context switches per 1000 \
         messages (voluntary/involuntary)"
    );
    for (c, config) in configs.iter().enumerate() {
        let cells: Vec<String> = runs[c]
            .iter()
            .map(|r| {
                let (v, i) = r.switches[pipe];
                format!(
                    "{:.0} {:.1}/{:.1}",
                    r.cpu[pipe],
                    v as f64 * 1000.0 / ops,
                    i as f64 * 1000.0 / ops
                )
            })
            .collect();
        println!("  {:<20} {}", config.name(), cells.join("; "));
    }
    // With `lock-stats`: heapsnap's slow-path critical sections, medians over the runs
    // (a run's longest wait or hold: the longest of all runs).
    for (c, config) in configs.iter().enumerate() {
        for (w, name) in WORKLOADS.iter().enumerate() {
            let v: Vec<[u64; 10]> = runs[c].iter().filter_map(|r| r.locks[w]).collect();
            if v.is_empty() || v.iter().all(|l| l[0] + l[5] == 0) {
                continue;
            }
            let m = |k: usize| median(&v.iter().map(|l| l[k] as f64).collect::<Vec<_>>());
            let per = |sum: usize, n: usize| m(sum) / m(n).max(1.0) / 1000.0;
            // Longest single wait or hold: the most over the runs.
            let most = |k: usize| v.iter().map(|l| l[k]).max().unwrap_or(0) as f64;
            // The worst run's total wait, both paths: what a stalled run would show.
            let worst = v.iter().map(|l| l[1] + l[6]).max().unwrap_or(0) as f64 / 1e6;
            println!(
                "lock {} {name}: sampled {:.0} sections, wait {:.2} ms ({:.1} us each, max {:.0} us), \
                 hold {:.2} ms ({:.1} us each, max {:.0} us); free {:.0} sections, wait {:.2} ms \
                 ({:.1} us each, max {:.0} us), hold {:.2} ms (max {:.0} us); the worst run \
                 waited {worst:.2} ms in all",
                config.name(),
                m(0),
                m(1) / 1e6,
                per(1, 0),
                most(2) / 1e3,
                m(3) / 1e6,
                per(3, 0),
                most(4) / 1e3,
                m(5),
                m(6) / 1e6,
                per(6, 5),
                most(7) / 1e3,
                m(8) / 1e6,
                most(9) / 1e3,
            );
        }
    }
    if !o.short {
        // Three processes each, the median of their p50s and of their p99s.
        let mut line = String::new();
        for config in [Config::Heapsnap512K, Config::JemallocProf512K] {
            let mut p50 = Vec::new();
            let mut p99 = Vec::new();
            for _ in 0..3 {
                let (a, b) = run_cost(&exe, config)?;
                p50.push(a as f64);
                p99.push(b as f64);
            }
            line += &format!(
                "\n  {:<44} p50 {:>6.0} ns, p99 {:>6.0} ns",
                match config {
                    Config::Heapsnap512K => "heapsnap (rate 1, host unwinder HostStack):",
                    _ => "jemalloc (lg_prof_sample 0, its libgcc unwinder):",
                },
                median(&p50),
                median(&p99)
            );
        }
        println!(
            "\none sampled 64-byte alloc+free, 32 frames deep ({COST_ALLOCS} timed pairs, \
             Instant::now() around each, median of 3 processes):{line}"
        );
    }
    println!("machine after: {}", machine());
    // The goals, and the guard.
    let mut failures = Vec::new();
    println!("\ngoals (issue 19):");
    for (w, name) in WORKLOADS.iter().enumerate() {
        let hs = median(&overheads(at(Config::Heapsnap512K), w));
        let je = median(&overheads(at(Config::JemallocProf512K), w));
        // The noise: the run-to-run spread of the two unprofiled allocators.
        let noise = [at(Config::System), at(Config::Jemalloc)]
            .iter()
            .map(|&c| spread(&runs[c].iter().map(|r| r.cpu[w]).collect::<Vec<_>>()) * 100.0)
            .fold(0.0, f64::max);
        let ok_budget = hs <= 0.5;
        let ok_peer = hs <= je;
        println!(
            "  {name}: heapsnap @512 KiB {hs:+.1}% (goal <= 0.5%: {}), jemalloc @512 KiB {je:+.1}% \
             (goal heapsnap below: {}); noise {noise:.1}%",
            if ok_budget { "met" } else { "MISSED" },
            if ok_peer { "met" } else { "MISSED" },
        );
        // At least GUARD_FLOOR points: on a quiet machine the spread of the
        // unprofiled runs can be smaller than the round-to-round wobble of a paired
        // ratio, and the guard must catch a regression, not a noisy round.
        // Not the 4-thread pipe: on two cores its figures are the scheduler's (a third of
        // its CPU time is the kernel switching threads; with heapsnap's sampling off,
        // rate 0, nine paired runs gave ratios from 0.80 to 1.26), so a guard on it
        // would fail or pass by chance; it is reported, and its allocations' own cost is
        // guarded on `pipe-1-thread`.
        if o.guard && *name != "pipe-4-threads" && hs > je + noise.max(GUARD_FLOOR) {
            failures.push(format!(
                "{name}: heapsnap's overhead at 512 KiB ({hs:+.1}%) exceeds jemalloc's ({je:+.1}%) \
                 by more than the run's noise ({:.1}%)",
                noise.max(GUARD_FLOOR)
            ));
        }
    }
    println!(
        "profiles checked: every profiled run wrote samples (jemalloc prof.dump heap_v2 with \
         non-zero totals; heapsnap sample counter){}; files in {}",
        if o.heapsnap.is_some() {
            ", and `heapsnap top` names build_map in each configuration's first"
        } else {
            ""
        },
        o.out.display()
    );
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn parse_args() -> Result<(Option<Config>, Opts), String> {
    let mut it = std::env::args().skip(1);
    let mut child = None;
    let mut o = Opts {
        short: false,
        runs: 0,
        out: std::env::temp_dir().join("bench-peers"),
        heapsnap: None,
        guard: false,
        sample_cost: false,
        only: None,
    };
    while let Some(a) = it.next() {
        let mut val = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match a.as_str() {
            "--child" => {
                let v = val("--child")?;
                child = Some(
                    Config::parse(v.as_bytes())
                        .ok_or(format!("--child: `{v}` is no configuration"))?,
                );
            }
            "--short" => o.short = true,
            "--sample-cost" => o.sample_cost = true,
            "--guard" => o.guard = true,
            "--only" => o.only = Some(val("--only")?),
            "--runs" => {
                let v = val("--runs")?;
                o.runs = v
                    .parse()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("--runs: `{v}` is not a positive number"))?;
            }
            "--out" => o.out = PathBuf::from(val("--out")?),
            "--heapsnap" => o.heapsnap = Some(PathBuf::from(val("--heapsnap")?)),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if o.runs == 0 {
        o.runs = if o.short { 5 } else { 7 };
    }
    Ok((child, o))
}

fn main() -> ExitCode {
    let r = parse_args().and_then(|(child_config, o)| match child_config {
        Some(c) if o.sample_cost => sample_cost(c),
        Some(c) => child(c, &o.out, o.short, o.only.as_deref()),
        None => parent(&o),
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench-peers: {e}");
            ExitCode::FAILURE
        }
    }
}

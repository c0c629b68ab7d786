//! host-cli against the reference reader: the `host_workload` example (a real program
//! under `ProfiledAlloc`) → snapshot → `heapsnap convert` (symbolized from the
//! example's own binary) → `go tool pprof`; `heapsnap top` against `go tool pprof -top`
//! on the same files, including a heap profile written by Go's own runtime; `diff`
//! against pprof's `-diff_base`; the legacy text format read back by pprof.

use e2e::{
    go_heap_profile, heapsnap, host_workload_exe, host_workload_snapshot, pprof, run, top_body,
};
use sampler_core::decoded::Snapshot;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const INDICES: [&str; 4] = [
    "alloc_objects",
    "alloc_space",
    "inuse_objects",
    "inuse_space",
];

fn tmp() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("host_pprof");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// One workload run (40 rounds) and one short run (10 rounds) as the diff base,
/// converted once for all tests.
struct Fixture {
    snap: PathBuf,
    pb: PathBuf,
    base_snap: PathBuf,
    base_pb: PathBuf,
    go_pb: PathBuf,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let d = tmp();
        let snap = host_workload_snapshot(&d.join("workload.snap"), &[]);
        let base_snap = host_workload_snapshot(&d.join("workload-base.snap"), &["--rounds", "10"]);
        let pb = d.join("workload.pb.gz");
        // No --elf: the snapshot's mappings name the example binary, found on disk.
        run(Command::new(heapsnap())
            .arg("convert")
            .arg(&snap)
            .arg("-o")
            .arg(&pb));
        let base_pb = d.join("workload-base.pb.gz");
        run(Command::new(heapsnap())
            .arg("convert")
            .arg(&base_snap)
            .arg("--elf")
            .arg(host_workload_exe())
            .arg("-o")
            .arg(&base_pb));
        let go_pb = go_heap_profile(&d.join("go"));
        Fixture {
            snap,
            pb,
            base_snap,
            base_pb,
            go_pb,
        }
    })
}

fn snapshot(p: &Path) -> Snapshot {
    sampler_core::snapshot::decode(&std::fs::read(p).unwrap()).unwrap()
}

/// Go's scaleHeapSample, written out again here so the expected values do not come
/// from the code under test.
fn unsample(count: u64, bytes: u64, rate: u64) -> (i64, i64) {
    if count == 0 || bytes == 0 {
        return (0, 0);
    }
    if rate <= 1 {
        return (count as i64, bytes as i64);
    }
    let s = 1.0 / (1.0 - (-(bytes as f64 / count as f64) / rate as f64).exp());
    ((count as f64 * s) as i64, (bytes as f64 * s) as i64)
}

/// Per sample index, the unsampled total of every bucket of the snapshot.
fn snapshot_totals(s: &Snapshot) -> [i64; 4] {
    let mut t = [0i64; 4];
    for b in &s.buckets {
        let c = &b.active;
        let (ao, ab) = unsample(c.allocs, c.alloc_bytes, s.sample_rate);
        let (io, ib) = unsample(
            c.allocs - c.frees,
            c.alloc_bytes - c.free_bytes,
            s.sample_rate,
        );
        for (x, v) in t.iter_mut().zip([ao, ab, io, ib]) {
            *x += v;
        }
    }
    t
}

/// `go tool pprof -top` in exact units (bytes as `123B`, counts plain): name → (flat, cum),
/// and the total.
fn pprof_top_exact(file: &Path, index: &str) -> (HashMap<String, (i64, i64)>, i64) {
    let unit = if index.ends_with("space") {
        "-unit=B"
    } else {
        "-unit=minimum"
    };
    let text = pprof(
        &[
            "-top",
            "-nodefraction=0",
            "-symbolize=none",
            &format!("-sample_index={index}"),
            unit,
        ],
        file,
    );
    let num = |s: &str| -> i64 {
        s.trim_end_matches('B')
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {s} in\n{text}"))
    };
    let mut rows = HashMap::new();
    let body = top_body(&text);
    let total_line = &body[0]; // Showing nodes accounting for X, P% of T total
    let total = num(total_line
        .split(" of ")
        .nth(1)
        .unwrap()
        .trim_end_matches(" total"));
    for l in &body[2..] {
        let f: Vec<&str> = l.split_whitespace().collect();
        let name = f[5..].join(" ");
        let name = name
            .trim_end_matches(" (inline)")
            .trim_end_matches(" (partial-inline)")
            .to_owned();
        rows.insert(name, (num(f[0]), num(f[3])));
    }
    (rows, total)
}

#[test]
fn raw_shows_four_sample_types_and_the_period() {
    let f = fixture();
    let raw = pprof(&["-raw", "-symbolize=none"], &f.pb);
    assert!(
        raw.contains("alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes"),
        "sample types missing from -raw:\n{raw}"
    );
    assert!(raw.contains("PeriodType: space bytes"), "{raw}");
    let rate = snapshot(&f.snap).sample_rate;
    assert!(raw.contains(&format!("Period: {rate}")), "{raw}");
    assert!(
        raw.contains("bytes:[2048]"),
        "the object-size label is missing:\n{raw}"
    );
    assert!(
        raw.contains("counters: samples="),
        "counters are not in the comments:\n{raw}"
    );
}

#[test]
fn top_lists_the_workload_functions_with_the_snapshot_values() {
    let f = fixture();
    let snap = snapshot(&f.snap);
    let totals = snapshot_totals(&snap);
    let mut tops = HashMap::new();
    for (i, index) in INDICES.iter().enumerate() {
        let (rows, total) = pprof_top_exact(&f.pb, index);
        assert_eq!(
            total, totals[i],
            "{index}: pprof's total differs from the snapshot's unsampled total"
        );
        for func in [
            "host_workload::workload_main_loop",
            "host_workload::serve_round",
            "host_workload::leaky_cache_insert",
        ] {
            assert!(
                rows.contains_key(func),
                "{index}: {func} missing from pprof -top: {:?}",
                rows.keys()
            );
        }
        // Every stack is rooted in the main loop.
        assert_eq!(
            rows["host_workload::workload_main_loop"].1, total,
            "{index}: main loop cum"
        );
        tops.insert(*index, rows);
    }
    let cum = |index: &str, func: &str| tops[index].get(func).map_or(0, |r| r.1);
    // The leak: 256 × 2 KiB per round for 40 rounds, never freed (a sampled estimate).
    let leak = cum("inuse_space", "host_workload::leaky_cache_insert");
    let truth = 40 * 256 * 2048;
    assert!(
        (leak - truth).abs() < truth / 5,
        "leaky_cache_insert in use {leak} vs {truth}"
    );
    let objects = cum("inuse_objects", "host_workload::leaky_cache_insert");
    assert!(
        (objects - 10240).abs() < 10240 / 5,
        "leaky_cache_insert in-use objects {objects} vs 10240"
    );
    // Four 1 MiB buffers: at rate 64 KiB every one is sampled with weight ≈ 1.
    assert_eq!(
        cum("inuse_space", "host_workload::alloc_large_buffers"),
        4 << 20
    );
    assert_eq!(
        cum("inuse_objects", "host_workload::alloc_large_buffers"),
        4
    );
    // Temporaries: the biggest allocator by count, nothing of them in use.
    let temps = cum("alloc_objects", "host_workload::parse_temporaries");
    assert!(
        temps > cum("alloc_objects", "host_workload::leaky_cache_insert"),
        "parse_temporaries {temps}"
    );
    assert_eq!(cum("inuse_space", "host_workload::parse_temporaries"), 0);
    assert!(
        cum("alloc_space", "host_workload::handle_request")
            >= cum("alloc_space", "host_workload::parse_temporaries")
    );
    assert!(cum("alloc_space", "host_workload::parse_temporaries") > 0);
}

#[test]
fn traces_show_inlined_frames() {
    let f = fixture();
    let traces = pprof(&["-traces", "-symbolize=none"], &f.pb);
    let leak = traces
        .split("-----------+")
        .find(|t| t.contains("host_workload::leaky_cache_insert"))
        .unwrap_or_else(|| panic!("no trace through leaky_cache_insert:\n{traces}"));
    assert!(
        leak.contains(" (inline)"),
        "no inlined frame in the leak's trace:\n{leak}"
    );
    // The leak's frame itself: a real function, called from serve_round.
    let lines: Vec<&str> = leak.lines().map(str::trim).collect();
    let i = lines
        .iter()
        .position(|l| l.ends_with("host_workload::leaky_cache_insert"))
        .unwrap();
    assert!(
        lines[i + 1].ends_with("host_workload::serve_round"),
        "{leak}"
    );
}

#[test]
fn elf_flag_gives_the_same_profile_as_the_mapped_file() {
    let f = fixture();
    let pb = tmp().join("workload-elf.pb.gz");
    run(Command::new(heapsnap())
        .arg("convert")
        .arg(&f.snap)
        .arg("--elf")
        .arg(host_workload_exe())
        .arg("-o")
        .arg(&pb));
    // Same symbolization for the example's mapping; libc & co. come from disk either way.
    assert_eq!(std::fs::read(&pb).unwrap(), std::fs::read(&f.pb).unwrap());
}

/// `heapsnap top` = `go tool pprof -top -nodefraction=0`, line for line (with pprof's
/// default `-edgefraction`, which decides the `(inline)` labels: pprof drops edges under
/// 0.1 % of the total before labelling).
fn assert_top_matches(file: &Path, index: &str) {
    let ours = run(Command::new(heapsnap())
        .arg("top")
        .arg(file)
        .args(["--sample-index", index]));
    let theirs = pprof(
        &[
            "-top",
            "-nodefraction=0",
            "-symbolize=none",
            &format!("-sample_index={index}"),
        ],
        file,
    );
    // Header included (comments, Type): pprof's File/Build ID/Time/Duration lines are
    // environmental and heapsnap does not print them.
    let full = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| {
                !["File: ", "Build ID: ", "Time: ", "Duration: "]
                    .iter()
                    .any(|p| l.starts_with(p))
            })
            .map(|l| l.trim_end().to_owned())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let (a, b) = (full(&ours), full(&theirs));
    assert!(
        top_body(&theirs).len() > 3,
        "pprof printed no rows for {}:\n{theirs}",
        file.display()
    );
    if a != b {
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        panic!(
            "heapsnap top differs from go tool pprof -top for {} ({index}) at line {first}:\n  ours:   {:?}\n  pprof:  {:?}\n\nours:\n{ours}\npprof:\n{theirs}",
            file.display(),
            a.get(first),
            b.get(first)
        );
    }
}

#[test]
fn heapsnap_top_equals_pprof_top_on_our_profile() {
    let f = fixture();
    for index in INDICES {
        assert_top_matches(&f.pb, index);
    }
}

#[test]
fn heapsnap_top_equals_pprof_top_on_a_go_runtime_profile() {
    let f = fixture();
    for index in INDICES {
        assert_top_matches(&f.go_pb, index);
    }
    let top = run(Command::new(heapsnap()).arg("top").arg(&f.go_pb));
    assert!(top.starts_with("Type: inuse_space"), "{top}");
    let first = top_body(&top)[2].clone();
    assert!(
        first.ends_with("main.leakLarge"),
        "the 8 MiB leak is not first: {first}"
    );
}

#[test]
fn heapsnap_top_reads_a_snapshot_directly() {
    let f = fixture();
    let from_snap = run(Command::new(heapsnap())
        .arg("top")
        .arg(&f.snap)
        .args(["-n", "5"]));
    let from_pb = run(Command::new(heapsnap())
        .arg("top")
        .arg(&f.pb)
        .args(["-n", "5"]));
    assert_eq!(from_snap, from_pb);
    assert_eq!(
        top_body(&from_snap).len(),
        2 + 1 + 5,
        "-n 5: the two header lines, the `Showing top` line, five rows:\n{from_snap}"
    );
}

#[test]
fn diff_equals_pprof_diff_base() {
    let f = fixture();
    let d = tmp().join("diff.pb.gz");
    run(Command::new(heapsnap())
        .arg("diff")
        .arg(&f.base_snap)
        .arg(&f.snap)
        .arg("-o")
        .arg(&d));
    for index in ["inuse_space", "alloc_objects"] {
        let ours = pprof(
            &[
                "-top",
                "-nodefraction=0",
                "-symbolize=none",
                &format!("-sample_index={index}"),
            ],
            &d,
        );
        let base = f.base_pb.to_str().unwrap();
        let theirs = pprof(
            &[
                "-top",
                "-nodefraction=0",
                "-symbolize=none",
                &format!("-sample_index={index}"),
                "-diff_base",
                base,
            ],
            &f.pb,
        );
        assert_eq!(
            top_body(&ours),
            top_body(&theirs),
            "diff profile vs -diff_base ({index})"
        );
        assert_top_matches(&d, index);
    }
    // The table form: the leak grew (30 more rounds): positive, as pprof prints it.
    let table = run(Command::new(heapsnap())
        .arg("diff")
        .arg(&f.base_pb)
        .arg(&f.pb));
    let row = table
        .lines()
        .find(|l| l.ends_with("host_workload::leaky_cache_insert"))
        .unwrap_or_else(|| panic!("{table}"));
    let flat = row.split_whitespace().next().unwrap();
    assert!(
        !flat.starts_with('-') && flat != "0",
        "the leak did not grow: {row}"
    );
}

#[test]
fn legacy_text_reads_back_with_the_same_values() {
    let f = fixture();
    let txt = tmp().join("workload.heap.txt");
    run(Command::new(heapsnap())
        .arg("convert")
        .arg(&f.snap)
        .args(["--format", "text", "-o"])
        .arg(&txt));
    let raw = pprof(&["-raw", "-symbolize=none"], &txt);
    assert!(
        raw.contains("alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes"),
        "{raw}"
    );
    assert!(
        raw.contains(&format!("Period: {}", snapshot(&f.snap).sample_rate)),
        "{raw}"
    );
    for (i, index) in INDICES.iter().enumerate() {
        let (_, total) = pprof_top_exact(&txt, index);
        assert_eq!(
            total,
            snapshot_totals(&snapshot(&f.snap))[i],
            "legacy text, {index}: pprof unsampled it differently"
        );
    }
}

/// A release build with `debug = "line-tables-only"` (a common release setting, and this
/// workspace's): its DWARF names functions without their crate (`grow_amortized`), so
/// the converter knows the allocator plumbing at the leaf end by its source files. Every
/// leaf must be the workload's own code, none the standard library's or sampler-core's.
#[test]
fn line_tables_only_release_build_leaves_are_the_allocating_functions() {
    let dir = e2e::target_dir().join("e2e-build-release");
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(e2e::repo_root())
            .env("CARGO_TARGET_DIR", &dir)
            .env("CARGO_PROFILE_RELEASE_DEBUG", "line-tables-only")
            .args([
                "build",
                "--release",
                "-p",
                "sampler-core",
                "--example",
                "host_workload",
            ])
            .args(["--features", "std"]),
    );
    let exe = dir.join("release/examples/host_workload");
    let snap = tmp().join("release.snap");
    run(Command::new(&exe).arg(&snap));
    let pb = tmp().join("release.pb.gz");
    run(Command::new(heapsnap())
        .arg("convert")
        .arg(&snap)
        .arg("--elf")
        .arg(&exe)
        .arg("-o")
        .arg(&pb));
    for index in INDICES {
        let top = pprof(
            &[
                "-top",
                "-lines",
                "-nodefraction=0",
                &format!("-sample_index={index}"),
            ],
            &pb,
        );
        let leaves: Vec<&str> = top
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
            .skip(1)
            .filter(|l| l.split_whitespace().next().is_some_and(|flat| flat != "0"))
            .collect();
        assert!(!leaves.is_empty(), "{index}: no leaves in\n{top}");
        for l in leaves {
            assert!(
                l.contains("host_workload.rs:")
                    && !l.contains("/library/")
                    && !l.contains("sampler-core/src/"),
                "{index}: a leaf outside the workload's code: {l}\n{top}"
            );
        }
    }
}

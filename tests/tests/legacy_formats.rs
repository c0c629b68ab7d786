//! Legacy heap profiles from the real writers: `tests/c/leaky.c` (known leaks) built
//! with the system `cc` and run under gperftools' tcmalloc (`HEAPPROFILE`, a
//! `HeapProfilerDump`) and under jemalloc (`MALLOC_CONF=prof:true,…`, a `prof.dump`
//! through `mallctl`), `tests/go/heaptext` writing Go's `debug=1` text heap profile,
//! `tests/go/profiles` writing every Go runtime profile at `debug=1` (goroutine,
//! threadcreate, block, mutex, heap, allocs), and `tests/c/busy.c` linked with
//! gperftools' libprofiler writing a binary CPU profile (`CPUPROFILE`).
//! `cargo xtask test` installs google-perftools (libtcmalloc, `google-pprof`),
//! libjemalloc-dev (libjemalloc, `jeprof`) and golang-go.
//!
//! What is compared:
//! - gperftools (heap and CPU), Go `debug=1` (heap, goroutine, block, mutex) and
//!   contention text: `heapsnap top --no-local --elf PROGRAM` against
//!   `go tool pprof -top -nodefraction=0 PROGRAM FILE`, line for line (the `Type:`,
//!   `Showing` and table lines; pprof's `File:` line, the program's name, is not
//!   printed by heapsnap), for every sample type and the default one, with one
//!   substitution for gperftools: pprof's DWARF symbolizer leaves `_start` (no debug
//!   info) as its mapping, `[leaky]`, where heapsnap falls back to the ELF symbol table
//!   and names it `_start` (rows of equal values are compared in name order, the
//!   order pprof prints them in, so the renamed row sits where pprof puts it).
//! - jemalloc (which `go tool pprof` refuses): `jeprof --text --show_bytes` against the
//!   flat and cum values heapsnap gives (from its folded output) for the program's
//!   functions, and the total, for all four sample types; exact with every allocation
//!   recorded, within jeprof's truncation (one per record) when sampled.

use e2e::{pprof, run, target_dir};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

const INDICES: [&str; 4] = [
    "inuse_space",
    "inuse_objects",
    "alloc_space",
    "alloc_objects",
];

struct Corpus {
    prog: PathBuf,
    tcmalloc: PathBuf,
    /// tcmalloc, nothing freed (`LEAKY_KEEP_ALL`): allocated = in use.
    tcmalloc_kept: PathBuf,
    jemalloc_every: PathBuf,
    jemalloc_sampled: PathBuf,
}

/// A shared library of the system, found as the C compiler finds it.
fn system_lib(name: &str, package: &str) -> PathBuf {
    let p = PathBuf::from(run(Command::new("cc").arg(format!("-print-file-name={name}"))).trim());
    assert!(
        p.is_absolute() && p.is_file(),
        "{name} not found: `cargo xtask test` installs it (Debian {package})"
    );
    p
}

fn corpus() -> &'static Corpus {
    static C: OnceLock<Corpus> = OnceLock::new();
    C.get_or_init(|| {
        let dir = target_dir().join("legacy-corpus");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let prog = dir.join("leaky");
        let src = e2e::repo_root().join("tests/c/leaky.c");
        run(Command::new("cc")
            .args(["-g", "-O1", "-fno-omit-frame-pointer", "-o"])
            .arg(&prog)
            .arg(&src)
            .arg("-ldl"));
        let tcmalloc = system_lib(
            "libtcmalloc.so.4",
            "libgoogle-perftools4 via google-perftools",
        );
        let jemalloc = system_lib("libjemalloc.so.2", "libjemalloc2 via libjemalloc-dev");
        run(Command::new(&prog)
            .env("LD_PRELOAD", &tcmalloc)
            .env("HEAPPROFILE", dir.join("tc")));
        run(Command::new(&prog)
            .env("LD_PRELOAD", &tcmalloc)
            .env("LEAKY_KEEP_ALL", "1")
            .env("HEAPPROFILE", dir.join("kept")));
        let je = |name: &str, conf: &str| {
            let out = dir.join(name);
            run(Command::new(&prog)
                .arg(&out)
                .env("LD_PRELOAD", &jemalloc)
                .env("MALLOC_CONF", conf));
            out
        };
        Corpus {
            tcmalloc: dir.join("tc.0001.heap"),
            tcmalloc_kept: dir.join("kept.0001.heap"),
            jemalloc_every: je("je0.heap", "prof:true,prof_accum:true,lg_prof_sample:0"),
            jemalloc_sampled: je("je10.heap", "prof:true,prof_accum:true,lg_prof_sample:10"),
            prog,
        }
    })
}

fn heapsnap(args: &[&str], file: &Path) -> String {
    let c = corpus();
    run(Command::new(e2e::heapsnap())
        .args(args)
        .args(["--no-local", "--elf"])
        .arg(&c.prog)
        .arg(file))
}

/// `top` output as compared: pprof's `File:` and `Duration:` lines dropped (as in
/// `pprof_parity.rs`: heapsnap prints neither), trailing blanks trimmed,
/// blank lines dropped, and (`start`) `_start` named as pprof names it, by the
/// program's mapping (`[leaky]`), in the place pprof's order (flat, cum, then name)
/// gives that name.
fn normalized(text: &str, start: Option<&Path>) -> Vec<String> {
    let mapping = start.map(|p| format!("[{}]", p.file_name().unwrap().to_string_lossy()));
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| {
            !l.starts_with("File: ") && !l.starts_with("Duration: ") && !l.trim().is_empty()
        })
        .map(|l| {
            let l = l.trim_end();
            match (l.strip_suffix("  _start"), &mapping) {
                (Some(v), Some(m)) => format!("{v}  {m}"),
                _ => l.to_owned(),
            }
        })
        .collect();
    // Rows of equal values (the text before the name) are in name order.
    let key = |l: &str| {
        l.rsplit_once("  ")
            .map(|(v, n)| (v.to_owned(), n.to_owned()))
    };
    let mut i = 0;
    while i < lines.len() {
        let Some((v, _)) = key(&lines[i]) else {
            i += 1;
            continue;
        };
        let j = (i..lines.len())
            .find(|&j| key(&lines[j]).is_none_or(|(w, _)| w != v))
            .unwrap_or(lines.len());
        lines[i..j].sort_by_key(|l| key(l).map(|(_, n)| n));
        i = j.max(i + 1);
    }
    lines
}

/// `heapsnap top` of `file` (symbolized with `prog`) equals `go tool pprof -top
/// -nodefraction=0 prog file`, for the default sample type and each of `indices`;
/// returns pprof's outputs.
fn assert_top_equals_pprof(prog: &Path, file: &Path, indices: &[&str], start: bool) -> Vec<String> {
    top_equals_pprof(Some(prog), file, indices, start)
}

/// [`assert_top_equals_pprof`], with `prog` given to both when there is one (a file
/// that names its own frames has none).
fn top_equals_pprof(
    prog: Option<&Path>,
    file: &Path,
    indices: &[&str],
    start: bool,
) -> Vec<String> {
    let start = prog.filter(|_| start);
    let mut outputs = Vec::new();
    for index in std::iter::once("").chain(indices.iter().copied()) {
        let mut args = vec!["top"];
        let flag = format!("-sample_index={index}");
        let mut theirs_args = vec!["-top", "-nodefraction=0"];
        if !index.is_empty() {
            args.extend(["--sample-index", index]);
            theirs_args.push(&flag);
        }
        let mut ours = Command::new(e2e::heapsnap());
        ours.args(&args).arg("--no-local");
        if let Some(prog) = prog {
            ours.arg("--elf").arg(prog);
            theirs_args.push(prog.to_str().unwrap());
        }
        let ours = run(ours.arg(file));
        let theirs = pprof(&theirs_args, file);
        if !index.is_empty() {
            assert!(theirs.contains(&format!("Type: {index}\n")), "{theirs}");
        }
        assert_eq!(
            normalized(&ours, start),
            normalized(&theirs, None),
            "{} -sample_index={index}: heapsnap top vs go tool pprof -top\nheapsnap:\n{ours}\npprof:\n{theirs}",
            file.display()
        );
        outputs.push(theirs);
    }
    outputs
}

#[test]
fn gperftools_top_equals_pprof_top() {
    let c = corpus();
    let text = std::fs::read_to_string(&c.tcmalloc).unwrap();
    assert!(text.starts_with("heap profile:"), "{text}");
    assert!(text.contains("@ heapprofile"), "{text}");
    let theirs = assert_top_equals_pprof(&c.prog, &c.tcmalloc, &INDICES, true);
    assert!(
        theirs.iter().all(|t| t.contains("  leak_large")),
        "pprof did not symbolize the program: {theirs:#?}"
    );
}

/// A gperftools profile whose allocated figures are those in use (nothing was freed):
/// pprof shows two sample types, `objects` and `space`, and so does heapsnap.
#[test]
fn gperftools_without_frees_has_pprofs_two_sample_types() {
    let c = corpus();
    let text = std::fs::read_to_string(&c.tcmalloc_kept).unwrap();
    let header = text.lines().next().unwrap();
    let (inuse, alloc) = header
        .strip_prefix("heap profile:")
        .and_then(|h| h.split_once('['))
        .unwrap();
    let alloc = alloc.split(']').next().unwrap();
    let figures = |s: &str| {
        s.split(':')
            .map(|n| n.trim().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(figures(inuse), figures(alloc), "{header}");
    let theirs = assert_top_equals_pprof(&c.prog, &c.tcmalloc_kept, &["objects", "space"], true);
    assert!(theirs[0].contains("Type: space\n"), "{}", theirs[0]);
    let out = Command::new(e2e::heapsnap())
        .args(["top", "--sample-index", "alloc_space", "--no-local"])
        .arg(&c.tcmalloc_kept)
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "alloc_space shown for a profile without allocation totals"
    );
}

/// `inspect` on a text profile says why its architecture is unknown: the format does
/// not record it (not an old snapshot encoder).
#[test]
fn inspect_says_a_text_profile_records_no_architecture() {
    let c = corpus();
    let out = run(Command::new(e2e::heapsnap())
        .arg("inspect")
        .arg(&c.tcmalloc));
    assert!(
        out.contains("architecture     unknown (a text profile does not record it)"),
        "{out}"
    );
    assert!(!out.contains("elf_machine"), "{out}");
}

/// Go's `debug=1` heap profiles (`tests/go/heaptext`), every allocation recorded
/// (`MemProfileRate=1`, the header's `@ heap/2`) and sampled at Go's default rate
/// (`@ heap/1048576`, unsampled with `scaleHeapSample`): `heapsnap top` with the
/// program as `--elf` equals `go tool pprof -top` with it, for the default and all four
/// sample types. pprof prunes the Go runtime's frames below the program's (its
/// drop_frames for legacy heap profiles) and names the out-of-line function of
/// inlined code (it symbolizes Go with the Go line table): both are compared here.
#[test]
fn go_debug1_heap_top_equals_pprof_top() {
    let dir = target_dir().join("legacy-corpus-go");
    let _ = std::fs::remove_dir_all(&dir);
    let prog = e2e::go_program("heaptext", &dir);
    // What is sure to be in each: everything when every allocation is recorded; the
    // 1 MiB blocks (each sampled with probability 1 - e^-2) when sampled.
    let every = [
        "main.leakLarge",
        "main.fillTable",
        "main.worker",
        "main.viaSmall",
    ];
    for (name, rate, header, functions) in [
        ("every.txt", "1", "@ heap/2\n", &every[..]),
        ("sampled.txt", "524288", "@ heap/1048576\n", &every[..1]),
    ] {
        let file = dir.join(name);
        run(Command::new(&prog).arg(&file).arg(rate));
        let text = std::fs::read_to_string(&file).unwrap();
        let first = text.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("heap profile:") && text.contains(header),
            "{first}"
        );
        assert!(text.contains("\n#\t0x") && text.contains("# runtime.MemStats"));
        let format = heapsnap_profile::import::guess_format(text.as_bytes());
        assert_eq!(format, Some("Go heap profile (debug=1)"));
        let theirs = assert_top_equals_pprof(&prog, &file, &INDICES, false);
        for f in functions {
            assert!(
                theirs.iter().all(|t| t.contains(&format!("  {f}\n"))),
                "{name}: pprof shows no {f}: {theirs:#?}"
            );
        }
    }
}

/// jeprof's `Total:` and rows: name → (flat, cum).
fn jeprof(index: &str, file: &Path) -> (i64, HashMap<String, (i64, i64)>) {
    let c = corpus();
    let out = run(Command::new("jeprof")
        .args(["--text", "--show_bytes", &format!("--{index}")])
        .arg(&c.prog)
        .arg(file));
    let total = out
        .lines()
        .find_map(|l| l.strip_prefix("Total: "))
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no Total in jeprof's output:\n{out}"));
    let rows = out
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 6 || !f[1].ends_with('%') {
                return None;
            }
            Some((f[5..].join(" "), (f[0].parse().ok()?, f[3].parse().ok()?)))
        })
        .collect();
    (total, rows)
}

/// heapsnap's total and per-function (flat, cum) from its folded stacks of `index`.
fn ours(index: &str, file: &Path) -> (i64, HashMap<String, (i64, i64)>) {
    let folded = heapsnap(
        &["convert", "--format", "folded", "--sample-index", index],
        file,
    );
    let (mut total, mut rows) = (0, HashMap::<String, (i64, i64)>::new());
    for l in folded.lines() {
        let (stack, v) = l.rsplit_once(' ').unwrap();
        let v: i64 = v.parse().unwrap();
        total += v;
        let frames: Vec<&str> = stack.split(';').collect();
        let mut seen = std::collections::HashSet::new();
        for f in &frames {
            if seen.insert(*f) {
                rows.entry(f.to_string()).or_default().1 += v;
            }
        }
        rows.entry(frames.last().unwrap().to_string())
            .or_default()
            .0 += v;
    }
    (total, rows)
}

fn assert_agrees_with_jeprof(file: &Path, tolerance: i64) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.starts_with("heap_v2/"), "{text}");
    for index in INDICES {
        let (jt, jrows) = jeprof(index, file);
        let (ht, hrows) = ours(index, file);
        // The total covers every stack, the C library's own included (4 records).
        assert!(
            (jt - ht).abs() <= 4 * tolerance,
            "{index}: total {ht}, jeprof {jt}"
        );
        for f in ["leak_large", "leak_medium", "leak_small", "main"] {
            let j = jrows.get(f).copied().unwrap_or_default();
            let h = hrows.get(f).copied().unwrap_or_default();
            let close = |a: i64, b: i64, n: i64| (a - b).abs() <= n;
            assert!(
                close(j.0, h.0, tolerance) && close(j.1, h.1, 3 * tolerance),
                "{index} {f}: heapsnap (flat, cum) {h:?}, jeprof {j:?}"
            );
        }
    }
}

#[test]
fn jemalloc_every_allocation_equals_jeprof() {
    let c = corpus();
    assert_agrees_with_jeprof(&c.jemalloc_every, 0);
    // What the program leaks, as jemalloc recorded it (jemalloc's size classes: 48,
    // 4096 for 4000, 1 MiB).
    let (_, rows) = ours("inuse_space", &c.jemalloc_every);
    assert_eq!(rows["leak_large"], (4 << 20, 4 << 20));
    assert_eq!(rows["leak_small"].0, 100 * 48);
    assert_eq!(rows["leak_medium"].0, 10 * 4096);
    let (_, rows) = ours("alloc_objects", &c.jemalloc_every);
    assert_eq!(rows["leak_medium"].0, 20);
}

#[test]
fn jemalloc_sampled_is_unsampled_as_jeprof_does() {
    let c = corpus();
    assert!(std::fs::read_to_string(&c.jemalloc_sampled)
        .unwrap()
        .starts_with("heap_v2/1024\n"));
    // jeprof sums unsampled floats and truncates the row; heapsnap truncates each
    // record's value: one apart per record at most.
    assert_agrees_with_jeprof(&c.jemalloc_sampled, 1);
}

#[test]
fn go_tool_pprof_refuses_jemalloc_dumps_that_heapsnap_reads() {
    let c = corpus();
    let out = e2e::go()
        .args(["tool", "pprof", "-top"])
        .arg(&c.jemalloc_every)
        .output()
        .unwrap();
    assert!(!out.status.success(), "pprof read a jemalloc dump");
    let top = heapsnap(&["top"], &c.jemalloc_every);
    assert!(top.contains("  leak_large"), "{top}");
}

/// Go's other runtime profiles at `debug=1` (`tests/go/profiles`, the program that
/// writes the `debug=0` parity corpus, writes each at `debug=1` right after): goroutine
/// and the program's own profile of open connections (`parseGoCount`, any type name), block and mutex (`--- contention:` / `--- mutex:`,
/// `parseContention`), and heap and allocs (`parseHeap`): `heapsnap top` with the
/// program as `--elf` equals `go tool pprof -top` with it, for the default and every
/// sample type. threadcreate at `debug=1` (records `N @` without addresses) is
/// refused by pprof and by heapsnap, which says the line.
#[test]
fn go_debug1_runtime_profiles_top_equal_pprof_top() {
    let dir = target_dir().join("legacy-corpus-go-runtime");
    let _ = std::fs::remove_dir_all(&dir);
    let (prog, text) = e2e::go_text_corpus(&dir);
    let cases: [(&str, &str, &[&str], &str); 6] = [
        (
            "goroutine.txt",
            "Go count profile (goroutine, threadcreate, a program's own; debug=1)",
            &[],
            "  main.parked\n",
        ),
        (
            "custom.txt",
            "Go count profile (goroutine, threadcreate, a program's own; debug=1)",
            &[],
            "  main.openPool\n",
        ),
        (
            "block.txt",
            "contention profile (Go block, mutex; debug=1)",
            &["contentions", "delay"],
            "  main.blockOnChannel\n",
        ),
        (
            "mutex.txt",
            "contention profile (Go block, mutex; debug=1)",
            &["contentions", "delay"],
            "  main.contend.func1\n",
        ),
        (
            "heap.txt",
            "Go heap profile (debug=1)",
            &INDICES,
            "  main.leakLarge\n",
        ),
        (
            "allocs.txt",
            "Go heap profile (debug=1)",
            &INDICES,
            "  main.churn\n",
        ),
    ];
    for (name, format, indices, function) in cases {
        let file = text.join(name);
        let bytes = std::fs::read(&file).unwrap();
        assert_eq!(
            heapsnap_profile::import::guess_format(&bytes),
            Some(format),
            "{name}"
        );
        let theirs = assert_top_equals_pprof(&prog, &file, indices, false);
        assert!(
            theirs.iter().all(|t| t.contains(function)),
            "{name}: pprof shows no{function}: {theirs:#?}"
        );
    }
    // What pprof shows for the kinds: their own sample types.
    let goroutine = pprof(
        &["-top", "-nodefraction=0", prog.to_str().unwrap()],
        &text.join("goroutine.txt"),
    );
    assert!(goroutine.contains("Type: goroutine\n"), "{goroutine}");
    let custom = pprof(
        &["-top", "-nodefraction=0", prog.to_str().unwrap()],
        &text.join("custom.txt"),
    );
    assert!(custom.contains("Type: example.com/conns\n"), "{custom}");
    let threadcreate = text.join("threadcreate.txt");
    let t = std::fs::read_to_string(&threadcreate).unwrap();
    assert!(t.starts_with("threadcreate profile: total "), "{t}");
    let bad_line = t
        .lines()
        .position(|l| !l.starts_with('#') && l.trim_end().ends_with(" @"))
        .expect("threadcreate at debug=1 has a record without addresses")
        + 1;
    let out = e2e::go()
        .args(["tool", "pprof", "-top"])
        .arg(&threadcreate)
        .output()
        .unwrap();
    assert!(!out.status.success(), "pprof read {t}");
    let out = Command::new(e2e::heapsnap())
        .args(["top", "--no-local"])
        .arg(&threadcreate)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "heapsnap read {t}");
    assert!(
        err.contains(&format!("line {bad_line}: expected `COUNT @ 0xADDR")),
        "{err}"
    );
}

/// `tests/c/busy.c` built into `dir` (made afresh) with libprofiler linked in, and the
/// CPU profile it writes (`CPUPROFILE`, 1000 Hz) burning `ms` milliseconds of CPU:
/// (program, profile).
fn cpu_profile(dir: &Path, ms: &str) -> (PathBuf, PathBuf) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let prog = dir.join("busy");
    let profiler = system_lib(
        "libprofiler.so.0",
        "libgoogle-perftools4 via google-perftools",
    );
    run(Command::new("cc")
        .args(["-g", "-O1", "-fno-omit-frame-pointer", "-o"])
        .arg(&prog)
        .arg(e2e::repo_root().join("tests/c/busy.c"))
        .arg("-Wl,--no-as-needed")
        .arg(&profiler));
    let file = dir.join("busy.prof");
    run(Command::new(&prog)
        .arg(ms)
        .env("CPUPROFILE", &file)
        .env("CPUPROFILE_FREQUENCY", "1000"));
    (prog, file)
}

/// A gperftools CPU profile: `tests/c/busy.c` linked with libprofiler (`-lprofiler`)
/// and run with `CPUPROFILE` at 1000 Hz. `heapsnap top --elf busy` equals `go tool
/// pprof -top busy` for the default type, `samples` and `cpu` (with the `_start`
/// substitution of the heap test: pprof's DWARF symbolizer names it by its mapping),
/// and again on the same profile re-encoded in big-endian words, which pprof reads as
/// well (`parseCPU` tries four word encodings; this machine's libprofiler writes
/// 64-bit little-endian).
#[test]
fn gperftools_cpu_top_equals_pprof_top() {
    let (prog, file) = cpu_profile(&target_dir().join("legacy-corpus-cpu"), "400");
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(
        heapsnap_profile::import::guess_format(&bytes),
        Some("gperftools CPU profile")
    );
    let theirs = assert_top_equals_pprof(&prog, &file, &["samples", "cpu"], true);
    for f in ["hot_loop", "warm_loop", "work", "main"] {
        assert!(
            theirs.iter().all(|t| t.contains(&format!("  {f}\n"))),
            "pprof shows no {f}: {theirs:#?}"
        );
    }
    assert!(theirs[0].contains("Type: cpu\n"), "{}", theirs[0]);
    // The same words big-endian, up to the trailer (0, 1, 0); the maps text as is.
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // Record by record (count, depth, addresses) to the trailer.
    let mut trailer = 5;
    while !words[trailer..].starts_with(&[0, 1, 0]) {
        trailer += 2 + words[trailer + 1] as usize;
        assert!(trailer < words.len(), "no trailer in {}", file.display());
    }
    let mut big: Vec<u8> = words[..trailer + 3]
        .iter()
        .flat_map(|w| w.to_be_bytes())
        .collect();
    big.extend_from_slice(&bytes[(trailer + 3) * 8..]);
    let big_file = file.with_file_name("busy-be.prof");
    std::fs::write(&big_file, big).unwrap();
    let theirs_be = assert_top_equals_pprof(&prog, &big_file, &["samples", "cpu"], true);
    assert_eq!(theirs_be, theirs, "pprof reads both encodings alike");
}

/// `go tool pprof -top` refuses `file`, and `heapsnap top` too, with `want` (the
/// format, the line or byte offset, what is wrong) in its message.
fn assert_both_refuse(file: &Path, want: &str) {
    let out = e2e::go()
        .args(["tool", "pprof", "-top"])
        .arg(file)
        .output()
        .unwrap();
    assert!(!out.status.success(), "pprof read {}", file.display());
    let out = Command::new(e2e::heapsnap())
        .args(["top", "--no-local"])
        .arg(file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "heapsnap read {}", file.display());
    assert!(err.contains(want), "{}: {err}", file.display());
}

/// The C++ `--- contentionz` header (no real writer here: Google's own) on the records
/// of Go's real block profile reads as pprof reads it; files made bad from the real
/// ones are read alike or refused by both, and heapsnap says where: an attribute pprof
/// does not know (a Java contention profile's `format=`), a record without its
/// numbers, and a CPU profile cut inside a record's header.
#[test]
fn contention_variants_and_bad_files_as_pprof() {
    let dir = target_dir().join("legacy-corpus-variants");
    let _ = std::fs::remove_dir_all(&dir);
    let (prog, text) = e2e::go_text_corpus(&dir);
    let block = std::fs::read_to_string(text.join("block.txt")).unwrap();
    let body = block.strip_prefix("--- contention:\n").unwrap();
    let cz = dir.join("contentionz.txt");
    std::fs::write(&cz, format!("--- contentionz 1 ---\n{body}")).unwrap();
    let theirs = assert_top_equals_pprof(&prog, &cz, &["contentions", "delay"], false);
    assert!(theirs[0].contains("Type: delay\n"), "{}", theirs[0]);

    let java = dir.join("java-attr.txt");
    std::fs::write(&java, format!("--- contention:\nformat=java\n{body}")).unwrap();
    assert_both_refuse(
        &java,
        "contention profile (Go block, mutex; debug=1), line 2: unknown attribute `format`",
    );
    // A record whose first number is dropped: pprof's unanchored `(\d+) *(\d+) @`
    // splits the count that is left (`799 @` is 79 cycles, 9 contentions), and so
    // does heapsnap; without either number, both refuse the line.
    let first = body.lines().position(|l| l.contains(" @ ")).unwrap();
    let with_first = |f: &dyn Fn(&str) -> String| -> String {
        let lines: Vec<String> = body
            .lines()
            .enumerate()
            .map(|(i, l)| if i == first { f(l) } else { l.to_owned() })
            .collect();
        format!("--- contention:\n{}\n", lines.join("\n"))
    };
    let split = dir.join("split-count.txt");
    std::fs::write(
        &split,
        with_first(&|l| l.split_once(' ').unwrap().1.to_owned()),
    )
    .unwrap();
    assert_top_equals_pprof(&prog, &split, &["contentions", "delay"], false);
    let bad = dir.join("no-numbers.txt");
    std::fs::write(
        &bad,
        with_first(&|l| format!("@{}", l.split_once('@').unwrap().1)),
    )
    .unwrap();
    assert_both_refuse(
        &bad,
        &format!("line {}: expected `DELAY COUNT @ 0xADDR …`", first + 2),
    );

    // The CPU profile of `busy`, cut three bytes into its first record's depth word.
    let (_, prof) = cpu_profile(&dir.join("cpu"), "100");
    let bytes = std::fs::read(&prof).unwrap();
    let cut = prof.with_file_name("cut.prof");
    std::fs::write(&cut, &bytes[..5 * 8 + 8 + 3]).unwrap();
    assert_both_refuse(
        &cut,
        "gperftools CPU profile, byte offset 40: a record's count and depth are cut off",
    );
}

/// A Java heap profile (`--- heapz 1 ---`) and a Java contention profile
/// (`--- contentionz 1 ---` with Java's attributes), read as pprof's
/// `legacy_java_profile.go` reads them: `heapsnap top` equals `go tool pprof -top` for
/// the default and every sample type. Written here by hand: no program on this machine
/// writes them (the agent is Google's own). The frames cover every form pprof knows:
/// `(file:line)`, a shared library's path, a line number that is not positive, a bare
/// name; the heap's records are unsampled at 512 KiB and the contention's multiplied by
/// the sampling period. A heapz file without its `resolution` is refused by both.
#[test]
fn java_heap_and_contention_profiles_top_equal_pprof_top() {
    let dir = target_dir().join("legacy-corpus-java");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let heapz = "--- heapz 1 ---\nformat = java\nresolution = bytes\n \
        6291456 12 @ 0x100 0x200 0x300 0x400\n \
        1048576 2048 @ 0x500 0x200 0x300 0x400\n \
        262144 1 @ 0x600 0x700 0x400\n \
        40960 640 @ 0x800 0x300 0x400\n \
        6291456 12 @ 0x100 0x900 0x400\n \
        0x100 java.util.Arrays.copyOf (Arrays.java:3512)\n \
        0x200 java.util.ArrayList.grow (ArrayList.java:237)\n \
        0x300 com.example.cache.Cache.put (Cache.java:42)\n \
        0x400 com.example.Main.main (Main.java:17)\n \
        0x500 java.lang.StringBuilder.<init> (StringBuilder.java:101)\n \
        0x600 memcpy (/lib/x86_64-linux-gnu/libc.so.6)\n \
        0x700 Interpreter\n \
        0x800 com.example.cache.Entry.<init> (Entry.java:-1)\n \
        0x900 com.example.cache.Cache.resize (Cache.java:88)\n";
    let contentionz = "--- contentionz 1 ---\nformat = java\nresolution = microseconds\n\
        sampling period = 100\nms since reset = 6000\n \
        3000 12 @ 0x10 0x20 0x30\n \
        250 3 @ 0x10 0x40 0x30\n \
        90000 1 @ 0x50 0x30\n \
        0x10 java.lang.Object.wait (Native Method)\n \
        0x20 com.example.Queue.take (Queue.java:77)\n \
        0x30 java.lang.Thread.run (Thread.java:833)\n \
        0x40 com.example.Pool.borrow (Pool.java:12)\n \
        0x50 com.example.Lock.lock (Lock.java:5)";
    for (name, text, indices, shown) in [
        (
            "heapz.txt",
            heapz,
            ["inuse_objects", "inuse_space"],
            "  java.lang.StringBuilder.<init>\n",
        ),
        (
            "contentionz.txt",
            contentionz,
            ["contentions", "delay"],
            "  com.example.Lock.lock\n",
        ),
    ] {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        assert_eq!(
            heapsnap_profile::import::guess_format(text.as_bytes()),
            Some("Java profile (heapz, contentionz)"),
            "{name}"
        );
        let theirs = top_equals_pprof(None, &file, &indices, false);
        assert!(theirs.iter().all(|t| t.contains(shown)), "{theirs:#?}");
    }
    let bad = dir.join("no-resolution.txt");
    std::fs::write(&bad, heapz.replace("resolution = bytes\n", "")).unwrap();
    assert_both_refuse(
        &bad,
        "Java profile (heapz, contentionz), line 3: a record before any `resolution` attribute",
    );
}

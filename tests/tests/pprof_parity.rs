//! pprof parity: for every file of a corpus written by real Go code (every runtime
//! profile, and profiles written with pprof's own `profile` package for what the
//! runtime never writes: units of every spelling, drop_frames/keep_frames, inlining,
//! empty names, invalid UTF-8) and every sample type, `heapsnap top` prints exactly
//! what `go tool pprof -top -nodefraction=0` prints, and `heapsnap diff` exactly what
//! `go tool pprof -top -nodefraction=0 -diff_base` prints.
//!
//! Normalized, and only these: pprof's `File:`, `Build ID:`, `Time:` and `Duration:`
//! header lines are removed (heapsnap does not print them: the binary's name, its
//! build id and the time of the run are environmental); trailing blanks are trimmed
//! (pprof pads nothing that matters); both outputs are read as UTF-8 lossily (pprof
//! prints a name's bytes as they are, heapsnap decodes them lossily: the same
//! U+FFFD on a terminal).

use e2e::{go_profile_corpus, heapsnap, pprof, run};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The corpus, built (one `go build`) and written once for all tests.
fn corpus() -> &'static [PathBuf] {
    static C: OnceLock<Vec<PathBuf>> = OnceLock::new();
    C.get_or_init(|| {
        let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pprof_parity");
        let files = go_profile_corpus(&d);
        assert!(files.len() >= 12, "the corpus is incomplete: {files:?}");
        files
    })
}

fn file(name: &str) -> &'static Path {
    corpus()
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == name))
        .unwrap_or_else(|| panic!("{name} is not in the corpus {:?}", corpus()))
}

/// pprof's output without the environmental header lines, trailing blanks trimmed.
fn normalized(text: &str) -> Vec<String> {
    const ENVIRONMENTAL: [&str; 4] = ["File: ", "Build ID: ", "Time: ", "Duration: "];
    text.lines()
        .filter(|l| !ENVIRONMENTAL.iter().any(|p| l.starts_with(p)))
        .map(|l| l.trim_end().to_owned())
        .collect()
}

fn sample_type_count(f: &Path) -> usize {
    let p = heapsnap_profile::profile::decode(&std::fs::read(f).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    p.sample_type.len()
}

/// Asserts equal line lists, showing the first differing line and both outputs.
fn assert_same(what: &str, ours: &str, theirs: &str) {
    let (a, b) = (normalized(ours), normalized(theirs));
    if a != b {
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        panic!(
            "{what}: heapsnap differs from go tool pprof at line {first}:\n  heapsnap: {:?}\n  pprof:    {:?}\n\nheapsnap:\n{ours}\npprof:\n{theirs}",
            a.get(first),
            b.get(first)
        );
    }
}

fn pprof_top(f: &Path, index: usize, extra: &[&str]) -> String {
    let mut args = vec![
        "-top".to_owned(),
        "-nodefraction=0".to_owned(),
        "-symbolize=none".to_owned(),
        format!("-sample_index={index}"),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    pprof(&args, f)
}

#[test]
fn top_equals_pprof_top_for_every_file_and_sample_type() {
    let mut compared = Vec::new();
    for f in corpus() {
        let n = sample_type_count(f);
        assert!(n > 0, "{} has no sample types", f.display());
        for i in 0..n {
            let ours = run(Command::new(heapsnap())
                .arg("top")
                .arg(f)
                .args(["--sample-index", &i.to_string()]));
            let theirs = pprof_top(f, i, &[]);
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            assert_same(&format!("{name} -sample_index={i}"), &ours, &theirs);
            compared.push((name, i, theirs));
        }
    }
    // The corpus exercises what it is for (a changed Go program or pprof would
    // otherwise make this test pass on less): each case below is in pprof's output.
    let has = |file: &str, needle: &str| {
        compared
            .iter()
            .any(|(n, _, t)| n == file && t.contains(needle))
    };
    for (file, needle) in [
        ("cpu.pb.gz", "Type: cpu"),
        ("cpu.pb.gz", "ms"),
        ("block.pb.gz", "Type: delay"),
        ("mutex.pb.gz", "Type: contentions"),
        ("goroutine.pb.gz", "Type: goroutine"),
        ("threadcreate.pb.gz", "Type: threadcreate"),
        ("custom.pb.gz", "Type: example.com/conns"),
        ("heap.pb.gz", " (inline)"),
        ("allocs.pb.gz", "Type: alloc_space"),
        ("units.pb.gz", "ms, 100% of"),
        ("units.pb.gz", "us "),
        ("units.pb.gz", "hrs"),
        ("units.pb.gz", "kB"),
        ("units.pb.gz", "GB"),
        ("units.pb.gz", "widgets"),
        ("units.pb.gz", "MiB"),
        ("units.pb.gz", "GCU"),
        ("frames.pb.gz", "(partial-inline)"),
        ("frames.pb.gz", "leaf_inline (inline)"),
        ("frames.pb.gz", "built by the parity corpus"),
        ("utf8.pb.gz", "main.caf\u{fffd}"),
    ] {
        assert!(
            has(file, needle),
            "pprof's output of {file} has no {needle:?}"
        );
    }
    // An empty sample type name: no Type line at all.
    let empty = compared
        .iter()
        .find(|(n, i, _)| n == "units.pb.gz" && *i == 18)
        .expect("units.pb.gz has 21 sample types");
    assert!(!empty.2.contains("Type:"), "{}", empty.2);
    // drop_frames pruned malloc/operator new/runtime.* below user frames, kept
    // runtime.keepme (keep_frames), and kept the lone root-level malloc.
    let frames = &compared
        .iter()
        .find(|(n, _, _)| n == "frames.pb.gz")
        .unwrap()
        .2;
    assert!(
        !frames.contains("operator new") && !frames.contains("runtime.mallocgc"),
        "{frames}"
    );
    assert!(frames.contains("runtime.keepme") && frames.contains("malloc\n"));
}

#[test]
fn default_sample_type_as_pprof() {
    for f in [
        "units.pb.gz",
        "heap.pb.gz",
        "allocs.pb.gz",
        "cpu.pb.gz",
        "frames.pb.gz",
    ] {
        let f = file(f);
        let ours = run(Command::new(heapsnap()).arg("top").arg(f));
        let theirs = pprof(&["-top", "-nodefraction=0", "-symbolize=none"], f);
        assert_same(&format!("{} (default type)", f.display()), &ours, &theirs);
    }
}

#[test]
fn diff_equals_pprof_diff_base() {
    for (base, new) in [
        ("heap.pb.gz", "heap2.pb.gz"),
        ("units.pb.gz", "units2.pb.gz"),
    ] {
        let (b, n) = (file(base), file(new));
        for i in 0..sample_type_count(b) {
            let ours = run(Command::new(heapsnap())
                .arg("diff")
                .arg(b)
                .arg(n)
                .args(["--sample-index", &i.to_string()]));
            let theirs = pprof_top(n, i, &["-diff_base", b.to_str().unwrap()]);
            assert_same(
                &format!("diff {base} {new} -sample_index={i}"),
                &ours,
                &theirs,
            );
        }
    }
}

/// A file pprof refuses is refused, with what is wrong and where.
#[test]
fn files_pprof_rejects_are_rejected_with_where() {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pprof_parity");
    let raw =
        heapsnap_profile::profile::inflate(&std::fs::read(file("heap.pb.gz")).unwrap(), 1 << 26)
            .unwrap();
    // Cut inside the last field: a length that runs past the end.
    let cut = d.join("truncated.pb");
    std::fs::write(&cut, &raw[..raw.len() - 3]).unwrap();
    let theirs = e2e::go()
        .args(["tool", "pprof", "-top", "-symbolize=none"])
        .arg(&cut)
        .output()
        .unwrap();
    assert!(!theirs.status.success(), "pprof read a truncated profile");
    let ours = Command::new(heapsnap())
        .arg("top")
        .arg(&cut)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(!ours.status.success(), "heapsnap read a truncated profile");
    assert!(
        err.contains("truncated.pb") && err.contains("byte"),
        "the error does not say what and where: {err}"
    );
}

//! Golden tests: fixture snapshots from checked-in bytes (`tests/golden/*.snap`), and
//! their pprof (as a deterministic text dump), folded and legacy text outputs. After an
//! intended change, regenerate with `BLESS=1 cargo test -p heapsnap-profile --test golden` and
//! review the diff.

mod common;

use heapsnap_profile::export;
use heapsnap_profile::import::{self as convert, NoSymbols, Symbols};
use heapsnap_profile::profile::{self, Profile};
use sampler_core::decoded::Snapshot;
use std::fmt::Write;
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn bless() -> bool {
    std::env::var_os("BLESS").is_some_and(|v| v == "1")
}

/// Compares `actual` with the golden file (or rewrites it under BLESS=1).
fn check(name: &str, actual: &[u8]) {
    let path = golden_dir().join(name);
    if bless() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with BLESS=1 to create it)", path.display()));
    if want != actual {
        panic!(
            "{} differs from the output (BLESS=1 to accept):\n--- golden\n{}\n--- actual\n{}",
            path.display(),
            String::from_utf8_lossy(&want),
            String::from_utf8_lossy(actual)
        );
    }
}

/// The fixture snapshot from its checked-in bytes (written from `make()` under BLESS).
fn snapshot(name: &str, make: fn() -> Snapshot) -> Snapshot {
    let path = golden_dir().join(format!("{name}.snap"));
    if bless() {
        std::fs::write(&path, make().encode().unwrap()).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let s = sampler_core::snapshot::decode(&bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(
        s,
        make(),
        "{} no longer decodes to the fixture it was written from",
        path.display()
    );
    s
}

/// A deterministic, complete text dump of a profile (pprof's `.string` files serve the
/// same purpose): every field that ends up in the bytes.
fn dump(p: &Profile) -> String {
    let mut o = String::new();
    let s = |i: i64| format!("{:?}", p.str(i));
    let _ = writeln!(o, "sample_types: {:?}", p.sample_types());
    if let Some(pt) = &p.period_type {
        let _ = writeln!(o, "period_type: {} {}", s(pt.r#type), s(pt.unit));
    }
    let _ = writeln!(
        o,
        "period: {}  default_sample_type: {}",
        p.period,
        s(p.default_sample_type)
    );
    for c in p.comments() {
        let _ = writeln!(o, "comment: {c:?}");
    }
    let _ = writeln!(o, "samples:");
    for x in &p.sample {
        let labels: Vec<String> = x
            .label
            .iter()
            .map(|l| {
                format!(
                    "{}={}{}{}",
                    p.str(l.key),
                    p.str(l.str),
                    l.num,
                    p.str(l.num_unit)
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "  {:?} @ {:?} {}",
            x.value,
            x.location_id,
            labels.join(" ")
        );
    }
    let _ = writeln!(o, "locations:");
    for l in &p.location {
        let lines: Vec<String> = l
            .line
            .iter()
            .map(|ln| format!("f{}:{}", ln.function_id, ln.line))
            .collect();
        let _ = writeln!(
            o,
            "  {} m{} {:#x} [{}]",
            l.id,
            l.mapping_id,
            l.address,
            lines.join(" ")
        );
    }
    let _ = writeln!(o, "functions:");
    for f in &p.function {
        let _ = writeln!(
            o,
            "  {} {} {} {}",
            f.id,
            s(f.name),
            s(f.system_name),
            s(f.filename)
        );
    }
    let _ = writeln!(o, "mappings:");
    for m in &p.mapping {
        let _ = writeln!(
            o,
            "  {} {:#x}-{:#x} @{:#x} {} {} fn={} file={} line={} inline={}",
            m.id,
            m.memory_start,
            m.memory_limit,
            m.file_offset,
            s(m.filename),
            s(m.build_id),
            m.has_functions,
            m.has_filenames,
            m.has_line_numbers,
            m.has_inline_frames
        );
    }
    o
}

fn outputs(name: &str, snap: &Snapshot) {
    let p = convert::to_profile(
        snap,
        &mut NoSymbols(snap) as &mut dyn Symbols,
        &mut |_, _| {},
    );
    p.check_valid().unwrap();
    let bytes = profile::encode(&p);
    assert_eq!(profile::decode(&bytes).unwrap(), p, "pprof round trip");
    assert_eq!(
        bytes,
        profile::encode(&convert::to_profile(
            snap,
            &mut NoSymbols(snap),
            &mut |_, _| {}
        )),
        "deterministic"
    );
    check(&format!("{name}.pprof.txt"), dump(&p).as_bytes());
    check(
        &format!("{name}.folded"),
        export::folded(&p, p.default_sample_index()).as_bytes(),
    );
    check(
        &format!("{name}.heap.txt"),
        export::legacy_text(snap, Some(&p)).as_bytes(),
    );
}

#[test]
fn firmware_fixture() {
    outputs("firmware", &snapshot("firmware", common::firmware_snapshot));
}

#[test]
fn host_fixture() {
    outputs("host", &snapshot("host", common::host_snapshot));
}

#[test]
fn inspect_report() {
    let s = snapshot("firmware", common::firmware_snapshot);
    check(
        "firmware.inspect.txt",
        heapsnap_profile::import::inspect_report(&s, &|n| std::borrow::Cow::Borrowed(n)).as_bytes(),
    );
}

/// A legacy text heap profile from `tests/golden/` read through `guess` (the one entry
/// point) into the snapshot it describes.
fn legacy(file: &str, format: &str) -> Snapshot {
    let bytes = std::fs::read(golden_dir().join(file)).unwrap();
    assert_eq!(convert::guess_format(&bytes), Some(format));
    match convert::guess(&bytes).unwrap_or_else(|e| panic!("{file}: {e}")) {
        convert::Input::Snapshot { snapshot, .. } => snapshot,
        other => panic!("{file} read as {other:?}"),
    }
}

/// gperftools (`HEAPPROFILE`, tcmalloc) and jemalloc (`prof.dump`, `lg_prof_sample:10`)
/// dumps of `tests/c/leaky.c`, written by the real allocators: the e2e test
/// `tests/tests/legacy_formats.rs` builds and runs the program the same way (copy its
/// `tc.0001.heap` and `je10.heap` from `target/legacy-corpus/` to refresh these); and
/// Go's `debug=1` heap profile at its default sampling rate, written by
/// `tests/go/heaptext` (`sampled.txt` from `target/legacy-corpus-go/`).
/// Their conversion, folded and legacy text outputs and inspect report are golden.
#[test]
fn legacy_heap_profiles() {
    for (file, name, format) in [
        ("gperftools.heap", "gperftools", "gperftools heap profile"),
        ("jemalloc.heap", "jemalloc", "jemalloc heap profile"),
        ("go.heap", "go", "Go heap profile (debug=1)"),
    ] {
        let s = legacy(file, format);
        outputs(name, &s);
        check(
            &format!("{name}.inspect.txt"),
            convert::inspect_report(&s, &|n| std::borrow::Cow::Borrowed(n)).as_bytes(),
        );
    }
}

/// Legacy profiles that are not heaps, written by the real tools: a gperftools CPU
/// profile of `tests/c/busy.c` (`busy.prof` from `target/legacy-corpus-cpu/`) and Go's
/// goroutine, block and mutex profiles and its own profile of open connections
/// (`pprof.NewProfile("example.com/conns")`, `go.custom`) at `debug=1` (from
/// `target/legacy-corpus-go-runtime/text/`), both made by `tests/tests/legacy_formats.rs`
/// (copy them from there to refresh these). Their conversion, folded stacks of every
/// sample type and inspect report are golden; `threadcreate` at `debug=1` (`go.threadcreate`)
/// is refused as pprof refuses it.
#[test]
fn legacy_other_profiles() {
    for (file, name, format) in [
        ("gperftools.cpu", "gperftools-cpu", "gperftools CPU profile"),
        (
            "go.goroutine",
            "go-goroutine",
            "Go count profile (goroutine, threadcreate, a program's own; debug=1)",
        ),
        (
            "go.custom",
            "go-custom",
            "Go count profile (goroutine, threadcreate, a program's own; debug=1)",
        ),
        (
            "go.block",
            "go-block",
            "contention profile (Go block, mutex; debug=1)",
        ),
        (
            "go.mutex",
            "go-mutex",
            "contention profile (Go block, mutex; debug=1)",
        ),
    ] {
        let s = legacy(file, format);
        let p = convert::to_profile(&s, &mut NoSymbols(&s), &mut |_, _| {});
        check_profile(name, &p);
        check(
            &format!("{name}.inspect.txt"),
            convert::inspect_report(&s, &|n| std::borrow::Cow::Borrowed(n)).as_bytes(),
        );
    }
    let bytes = std::fs::read(golden_dir().join("go.threadcreate")).unwrap();
    let e = convert::guess(&bytes).unwrap_err().to_string();
    assert!(e.contains("line 2: expected `COUNT @ 0xADDR"), "{e}");
}

/// heapsnap's own legacy text export reads back through the gperftools reader with
/// the values it was written with (the same unsampled profile).
#[test]
fn legacy_text_export_reads_back() {
    let s = legacy("gperftools.heap", "gperftools heap profile");
    let p = convert::to_profile(&s, &mut NoSymbols(&s), &mut |_, _| {});
    let text = export::legacy_text(&s, Some(&p));
    let back = match convert::guess(text.as_bytes()).unwrap() {
        convert::Input::Snapshot { snapshot, .. } => snapshot,
        other => panic!("read back as {other:?}"),
    };
    let q = convert::to_profile(&back, &mut NoSymbols(&back), &mut |_, _| {});
    assert_eq!(
        export::folded(&q, 3),
        export::folded(&p, 3),
        "inuse_space after a round trip through the legacy text"
    );
}

/// Java's heap and contention profiles (`java.heapz`, `java.contentionz`: the text of
/// `tests/tests/legacy_formats.rs`, which compares them with `go tool pprof`), read into
/// the model with the frames they name: their conversion and folded stacks of every
/// sample type are golden.
#[test]
fn java_profiles() {
    for (file, name) in [
        ("java.heapz", "java-heapz"),
        ("java.contentionz", "java-contentionz"),
    ] {
        let bytes = std::fs::read(golden_dir().join(file)).unwrap();
        assert_eq!(
            convert::guess_format(&bytes),
            Some("Java profile (heapz, contentionz)")
        );
        let p = match convert::guess(&bytes).unwrap_or_else(|e| panic!("{file}: {e}")) {
            convert::Input::Profile(p) => p,
            other => panic!("{file} read as {other:?}"),
        };
        check_profile(name, &p);
    }
}

/// `p` valid, and its dump (`NAME.pprof.txt`) and folded stacks of every sample type
/// (`NAME.folded`) golden.
fn check_profile(name: &str, p: &profile::Profile) {
    p.check_valid().unwrap();
    check(&format!("{name}.pprof.txt"), dump(p).as_bytes());
    let folded: String = (0..p.sample_type.len())
        .map(|i| format!("# sample type {i}\n{}", export::folded(p, i)))
        .collect();
    check(&format!("{name}.folded"), folded.as_bytes());
}

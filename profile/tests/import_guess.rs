//! The importers against the goldens of every format: `guess` reads each file with its
//! own importer, and no importer's sniff claims another format's file (a false
//! positive there would send a file to the wrong reader before its own is tried).

use heapsnap_profile::import::{self, Input, NoSymbols, FORMATS};
use heapsnap_profile::profile;
use prost::Message;
use sampler_core::snapshot;
use std::path::PathBuf;

fn golden(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// (file, the format that must read it), for every importer: the checked-in goldens,
/// plus the pprof and capture forms made from them with the crate's own writers.
fn corpus() -> Vec<(String, Vec<u8>, &'static str)> {
    let mut v = Vec::new();
    for base in ["firmware", "host"] {
        let snap_bytes = golden(&format!("{base}.snap"));
        let snap = snapshot::decode(&snap_bytes).unwrap();
        let p = import::to_profile(&snap, &mut NoSymbols(&snap), &mut |_, _| {});
        let mut capture = b"boot log line\r\n\0".to_vec();
        capture.extend(snapshot::encode_framed_to_vec(&snap).unwrap());
        capture.extend(snapshot::encode_framed_to_vec(&snap).unwrap());
        v.push((format!("{base}.snap"), snap_bytes, "heapsnap snapshot"));
        v.push((
            format!("{base} capture"),
            capture,
            "heapsnap serial capture (COBS)",
        ));
        v.push((format!("{base}.pb.gz"), profile::encode(&p), "pprof (gzip)"));
        v.push((format!("{base}.pb"), p.encode_to_vec(), "pprof (protobuf)"));
        v.push((
            format!("{base}.folded"),
            golden(&format!("{base}.folded")),
            "folded stacks",
        ));
    }
    v.push((
        "gperftools.heap".into(),
        golden("gperftools.heap"),
        "gperftools heap profile",
    ));
    v.push((
        "jemalloc.heap".into(),
        golden("jemalloc.heap"),
        "jemalloc heap profile",
    ));
    for (file, format) in [
        ("gperftools.cpu", "gperftools CPU profile"),
        (
            "go.goroutine",
            "Go count profile (goroutine, threadcreate, a program's own; debug=1)",
        ),
        (
            "go.custom",
            "Go count profile (goroutine, threadcreate, a program's own; debug=1)",
        ),
        ("go.block", "contention profile (Go block, mutex; debug=1)"),
        ("java.heapz", "Java profile (heapz, contentionz)"),
        ("java.contentionz", "Java profile (heapz, contentionz)"),
        ("go.mutex", "contention profile (Go block, mutex; debug=1)"),
    ] {
        v.push((file.into(), golden(file), format));
    }
    v
}

#[test]
fn guess_reads_every_golden_with_its_own_importer() {
    for (name, bytes, format) in corpus() {
        assert_eq!(import::guess_format(&bytes), Some(format), "{name}");
        let input = import::guess(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let is_snapshot = matches!(input, Input::Snapshot { .. });
        // Legacy heap profiles are read into the snapshot model (symbolized later).
        let snapshot_model = format.starts_with("heapsnap")
            || format.ends_with("heap profile")
            || [
                "gperftools.cpu",
                "go.goroutine",
                "go.custom",
                "go.block",
                "go.mutex",
            ]
            .contains(&name.as_str());
        assert_eq!(is_snapshot, snapshot_model, "{name}");
        if let Input::Profile(p) = input {
            assert!(!p.sample.is_empty(), "{name}: no samples read");
        }
    }
}

#[test]
fn no_sniff_claims_another_formats_golden() {
    let corpus = corpus();
    // Raw protobuf has no marker: it is the catch-all, tried last.
    for f in FORMATS.iter().filter(|f| f.name != "pprof (protobuf)") {
        for (name, bytes, format) in &corpus {
            if *format != f.name {
                assert!(
                    !(f.sniff)(bytes),
                    "the {} sniff claims {name} ({format})",
                    f.name
                );
            }
        }
    }
    // heapsnap's own legacy heap text export is read back by the gperftools importer.
    for other in ["firmware.heap.txt", "host.heap.txt"] {
        assert_eq!(
            import::guess_format(&golden(other)),
            Some("gperftools heap profile"),
            "{other}"
        );
    }
    // A text no importer reads falls through to protobuf and gets an error, not a
    // wrong reading: the inspect report.
    let bytes = golden("firmware.inspect.txt");
    assert_eq!(import::guess_format(&bytes), Some("pprof (protobuf)"));
    assert!(
        import::guess(&bytes).is_err(),
        "the inspect report read as something"
    );
}

#[test]
fn folded_stacks_read_back_with_their_values() {
    let text = "main;alloc_a 300\nmain;run;alloc_b 20\n\nmain;alloc_a 5\n";
    let Input::Profile(p) = import::guess(text.as_bytes()).unwrap() else {
        panic!("folded text read as a snapshot");
    };
    assert_eq!(p.sample_types(), vec![("samples", "count")]);
    let back = heapsnap_profile::export::folded(&p, 0);
    let mut lines: Vec<&str> = back.lines().collect();
    lines.sort();
    assert_eq!(lines, ["main;alloc_a 305", "main;run;alloc_b 20"]);
    // A bad line after the lines the sniff looks at is an error naming it, not a
    // silently skipped stack.
    let mut text = "main;a 1\n".repeat(20);
    text.push_str("main;b x\n");
    let e = import::guess(text.as_bytes()).unwrap_err().to_string();
    assert!(e.contains("line 21") && e.contains("`x`"), "{e}");
}

/// The error of reading `text` through `guess`.
fn error_of(text: &str) -> String {
    match import::guess(text.as_bytes()) {
        Err(e) => e.to_string(),
        Ok(i) => panic!("read {text:?} as {i:?}"),
    }
}

#[test]
fn bad_legacy_heap_profiles_name_the_line_and_what_was_expected() {
    let cases = [
        (
            "heap profile: 1: 8 [1: 8] @ heapprofile\n1: 8 [1: 8] @ 0x10 0xzz\n",
            "gperftools heap profile, line 2: `0xzz` is not a hexadecimal address",
        ),
        (
            "heap profile: 1: 8 [1: 8] @ heapprofile\n\n1: 8 1: 8 @ 0x10\n",
            "gperftools heap profile, line 3: expected `objects: bytes [objects: bytes]`",
        ),
        (
            "heap profile: 1: 8 [1: 8] @ heapprofile\n-1: 8 [1: 8] @ 0x10\n",
            "gperftools heap profile, line 2: `-1` is not a count",
        ),
        (
            "heap profile: 1: 8 [1: 8] @ heapprofile\n0: 8 [1: 8] @ 0x10\n",
            "gperftools heap profile, line 2: in-use count is 0 but in-use bytes is 8",
        ),
        (
            "heap profile: 1: 8 [1: 8] @ cpuprofile\n",
            "gperftools heap profile, line 1: unknown heap profile kind `cpuprofile`",
        ),
        (
            "heap profile: 1: 8 [1: 8] @ heap_v2/x\n",
            "gperftools heap profile, line 1: `heap_v2/x`: expected a sampling rate",
        ),
        (
            "heap profile: 1: 8 [1: 8] @ heapprofile\nhello\n",
            "gperftools heap profile, line 2: expected `N: N [N: N] @ 0xADDR …` or `MAPPED_LIBRARIES:`",
        ),
        (
            "heap_v2/x\n",
            "jemalloc heap profile, line 1: expected `heap_v2/RATE`",
        ),
        (
            "heap_v2/1\n  t*: 1: 8 [1: 8]\n@ 0x10\n  t0: 1: 8 [1: 8]\n",
            "jemalloc heap profile, line 3: stack without a `t*: N: N [N: N]` line",
        ),
        (
            "heap_v2/1\n@ 0x10\n  t*: 1: 8 [1: 8]\n  t*: 1: 8 [1: 8]\n",
            "jemalloc heap profile, line 4: a second `t*:` line for one stack",
        ),
        (
            "heap_v2/1\n@ 0x10\n  t*: 1: 8 [1 8]\n",
            "jemalloc heap profile, line 3: expected `objects: bytes`, found `1 8`",
        ),
        (
            "heap_v2/1\n@ 0x10\n  t*: 1: 8 [1: 8]\nbogus\n",
            "jemalloc heap profile, line 4: expected `@ 0xADDR …`",
        ),
    ];
    for (text, want) in cases {
        let e = error_of(text);
        assert!(e.starts_with(want), "{text:?}:\n  got  {e}\n  want {want}…");
    }
    // Not UTF-8: the line of the first bad byte.
    let e = import::guess(b"heap_v2/1\n@ 0x10\n\xff\n")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "jemalloc heap profile, line 3: not UTF-8 text");
}

#[test]
fn legacy_heap_profiles_are_counted_against_the_limits() {
    let mut text = "heap profile: 1: 8 [1: 8] @ heapprofile\n".to_owned();
    for i in 0..100 {
        text.push_str(&format!("1: 8 [1: 8] @ 0x{:x} 0x20 0x30\n", 0x1000 + i));
    }
    let mut limits = heapsnap_profile::limits::Limits::default();
    limits.set("entries-base=0").unwrap();
    limits.set("entries-per-byte=0").unwrap();
    let e = import::guess_limited(text.as_bytes(), &limits)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("at line 2 of the gperftools heap profile") && e.contains("--limit"),
        "{e}"
    );
    let mut limits = heapsnap_profile::limits::Limits::default();
    limits.set("stack-depth=2").unwrap();
    let e = import::guess_limited(text.as_bytes(), &limits)
        .unwrap_err()
        .to_string();
    assert!(e.contains("frames in one stack"), "{e}");
}

#[test]
fn legacy_heap_profiles_are_unsampled_and_mapped() {
    // Two records of one object size at rate 1024 (heap_v2), and maps of which only the
    // executable one counts.
    let text = "heap profile: 2: 2048 [4: 4096] @ heap_v2/1024\n\
                2: 2048 [4: 4096] @ 0x401010 0x401020\n\
                \n\
                MAPPED_LIBRARIES:\n\
                00400000-00401000 r--p 00000000 08:01 42 /bin/prog\n\
                00401000-00402000 r-xp 00001000 08:01 42 /bin/prog\n\
                not a maps line\n";
    let snap = match import::guess(text.as_bytes()).unwrap() {
        Input::Snapshot { snapshot, .. } => snapshot,
        other => panic!("{other:?}"),
    };
    assert_eq!(snap.word_size, 4);
    assert_eq!(snap.mappings.len(), 1);
    assert_eq!(snap.mappings[0].name, "/bin/prog");
    assert_eq!(snap.mappings[0].offset, 0x1000);
    let p = import::to_profile(&snap, &mut NoSymbols(&snap), &mut |_, _| {});
    // scale = 1 / (1 - exp(-1024/1024)) = 1.58197…
    let s = 1.0 / (1.0 - (-1.0f64).exp());
    assert_eq!(
        p.sample[0].value[..],
        [
            (4.0 * s) as i64,
            (4096.0 * s) as i64,
            (2.0 * s) as i64,
            (2048.0 * s) as i64
        ]
    );
}

#[test]
fn bad_go_count_and_contention_profiles_name_the_line() {
    const COUNT: &str = "Go count profile (goroutine, threadcreate, a program's own; debug=1)";
    const CONTENTION: &str = "contention profile (Go block, mutex; debug=1)";
    let cases = [
        (
            "threadcreate profile: total 5\n5 @\n#\t0x0\n".to_owned(),
            format!(
                "{COUNT}, line 2: expected `COUNT @ 0xADDR …` (at least one address), found `5 @`"
            ),
        ),
        (
            "# x\n\ngoroutine profile: total 1\n1 @ 0x10 0xzz\n".to_owned(),
            format!("{COUNT}, line 4: expected `COUNT @ 0xADDR …` (at least one address), found `1 @ 0x10 0xzz`"),
        ),
        (
            "example.com/conns profile: total 2\n1 @ 0x10\n1 @ 0x20 x\n".to_owned(),
            format!("{COUNT}, line 3: expected `COUNT @ 0xADDR …` (at least one address), found `1 @ 0x20 x`"),
        ),
        (
            "--- mutex:\ncycles/second=x\n".to_owned(),
            format!("{CONTENTION}, line 2: cycles/second: `x` is not an integer"),
        ),
        (
            "--- contention:\ncycles/second=1000\nformat=java\n".to_owned(),
            format!("{CONTENTION}, line 3: unknown attribute `format`"),
        ),
        (
            "--- contention:\ncycles/second=1000\n10 1 @ 0x10\n7 @ 0x10\n".to_owned(),
            format!("{CONTENTION}, line 4: expected `DELAY COUNT @ 0xADDR …`, found `7 @ 0x10`"),
        ),
        (
            "--- contention:\n10 -1 @ 0x10\n".to_owned(),
            format!("{CONTENTION}, line 2: expected `DELAY COUNT @ 0xADDR …`"),
        ),
    ];
    for (text, want) in cases {
        let e = error_of(&text);
        assert!(
            e.starts_with(&want),
            "{text:?}:\n  got  {e}\n  want {want}…"
        );
    }
}

/// A count profile of a name Go does not write itself (a program's own
/// `pprof.NewProfile`) is read as pprof's `parseGoCount` reads it: one sample type of
/// that name, unit `count`, the period the same; `inspect` names it too. Two such files
/// of different names read at once keep their own names.
#[test]
fn a_programs_own_count_profile_keeps_its_type_name() {
    let read = |text: &str| match import::guess(text.as_bytes()).unwrap() {
        Input::Snapshot { snapshot, .. } => snapshot,
        other => panic!("{text:?} read as {other:?}"),
    };
    let conns = read("example.com/conns profile: total 3\n2 @ 0x10 0x20\n1 @ 0x10\n");
    let files = read("\n# files\nopen-files profile: total 5\n5 @ 0x30\n");
    for (s, name, total) in [(&conns, "example.com/conns", 3), (&files, "open-files", 5)] {
        let p = import::to_profile(s, &mut NoSymbols(s), &mut |_, _| {});
        p.check_valid().unwrap();
        assert_eq!(p.sample_types(), vec![(name, "count")]);
        let period = p.period_type.unwrap();
        assert_eq!(
            (p.str(period.r#type), p.str(period.unit), p.period),
            (name, "count", 1)
        );
        let sum: i64 = p.sample.iter().map(|x| x.value[0]).sum();
        assert_eq!(sum, total, "{name}");
        let report = import::inspect_report(s, &|n| std::borrow::Cow::Borrowed(n));
        assert!(
            report.contains(&format!("total {name} {total} (count)")),
            "{report}"
        );
    }
}

/// A gperftools CPU profile cut inside a record, or with a record longer than the
/// file, is refused at the byte offset of the record.
#[test]
fn bad_gperftools_cpu_profiles_name_the_byte_offset() {
    let words = |w: &[u64]| -> Vec<u8> { w.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let header = [0, 3, 0, 10000, 0];
    let mut cut = words(&header);
    cut.extend(words(&[1, 2, 0x1000, 0x2000]));
    cut.extend(&[1, 0, 0]);
    let e = import::guess(&cut).unwrap_err().to_string();
    assert_eq!(
        e,
        "gperftools CPU profile, byte offset 72: a record's count and depth are cut off"
    );
    let long = [&header[..], &[1, 9, 0x1000, 0x2000]].concat();
    let e = import::guess(&words(&long)).unwrap_err().to_string();
    assert_eq!(
        e,
        "gperftools CPU profile, byte offset 40: a record of 9 addresses, and only 2 words are left"
    );
    // The same records, well formed, read: the leaf as sampled, one sample type each.
    let good = [&header[..], &[3, 2, 0x1000, 0x2000], &[0, 1, 0]].concat();
    let Input::Snapshot { snapshot, .. } = import::guess(&words(&good)).unwrap() else {
        panic!("not read into the snapshot model");
    };
    let p = import::to_profile(&snapshot, &mut NoSymbols(&snapshot), &mut |_, _| {});
    assert_eq!(
        p.sample_types(),
        vec![("samples", "count"), ("cpu", "nanoseconds")]
    );
    assert_eq!(p.sample.len(), 1);
    assert_eq!(p.sample[0].value[..], [3, 3 * 10_000_000]);
}

/// Prefixes of the CPU, goroutine and contention goldens, and each with one byte
/// changed, at about 400 positions of each, reads or is refused, and what reads converts to a valid
/// profile: no panic on the ways a real file gets cut or damaged (the fuzz target
/// `import_guess` goes further from the same seeds).
#[test]
fn damaged_cpu_goroutine_and_contention_files_never_panic() {
    for file in [
        "gperftools.cpu",
        "go.goroutine",
        "go.custom",
        "go.block",
        "go.mutex",
    ] {
        let bytes = golden(file);
        // About 400 positions per file, spread over it (a debug build is slow).
        let step = (bytes.len() / 400).max(1);
        let mut inputs: Vec<Vec<u8>> = (0..bytes.len())
            .step_by(step)
            .map(|n| bytes[..n].to_vec())
            .collect();
        for i in (0..bytes.len()).step_by(step) {
            for x in [0u8, b'0', b' ', b'\n', 0xff] {
                let mut b = bytes.clone();
                b[i] = x;
                inputs.push(b);
            }
        }
        for b in inputs {
            if let Ok(Input::Snapshot { snapshot, .. }) = import::guess(&b) {
                let p = import::to_profile(&snapshot, &mut NoSymbols(&snapshot), &mut |_, _| {});
                p.check_valid().unwrap_or_else(|e| panic!("{file}: {e}"));
            }
        }
    }
}

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
    v
}

#[test]
fn guess_reads_every_golden_with_its_own_importer() {
    for (name, bytes, format) in corpus() {
        assert_eq!(import::guess_format(&bytes), Some(format), "{name}");
        let input = import::guess(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let is_snapshot = matches!(input, Input::Snapshot { .. });
        assert_eq!(is_snapshot, format.starts_with("heapsnap"), "{name}");
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
    // Formats no importer reads yet fall through to protobuf and get an error, not a
    // wrong reading: the legacy heap text and the inspect report.
    for other in ["firmware.heap.txt", "host.heap.txt", "firmware.inspect.txt"] {
        let bytes = golden(other);
        assert_eq!(
            import::guess_format(&bytes),
            Some("pprof (protobuf)"),
            "{other}"
        );
        assert!(import::guess(&bytes).is_err(), "{other} read as something");
    }
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

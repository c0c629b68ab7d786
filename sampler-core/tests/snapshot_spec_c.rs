//! The spec is implementable: `tests/c/snapdump.c`, written from
//! `docs/snapshot-format.md` alone (its C functions are the spec's), reads the golden
//! file and random snapshots exactly as the Rust decoder does, and rejects the same
//! corruptions.
#![cfg(feature = "std")]

mod snapshot_common;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;
use sampler_core::decoded::Snapshot;
use sampler_core::snapshot::{decode, encode_to_vec};

/// Compile the C reader with the system C compiler (the one rustc links with).
fn snapdump() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let exe = dir.join("snapdump");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/snapdump.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}` (set CC): {e}"));
    assert!(
        out.status.success(),
        "{cc} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

fn run(exe: &PathBuf, bytes: &[u8], name: &str) -> (bool, String) {
    let file = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&file, bytes).unwrap();
    let out = Command::new(exe).arg(&file).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The same dump from the Rust decoder's value.
fn dump(s: &Snapshot, crc: u32) -> String {
    let mut o = String::new();
    let c = s.counters;
    writeln!(o, "version {}\nword_size {}", s.version, s.word_size).unwrap();
    writeln!(o, "sample_rate {}\ncycle {}", s.sample_rate, s.cycle).unwrap();
    if let Some(t) = s.timestamp {
        writeln!(o, "timestamp {} {}", t.ticks, t.ticks_per_second).unwrap();
    }
    writeln!(
        o,
        "counters {} {} {} {} {} {} {}",
        c.samples,
        c.stack_table_full,
        c.bucket_table_full,
        c.live_map_full,
        c.reentrant,
        c.unknown_frees,
        c.truncated_stacks
    )
    .unwrap();
    for m in &s.mappings {
        let id: String = m.build_id.iter().map(|b| format!("{b:02x}")).collect();
        writeln!(
            o,
            "mapping {:x} {:x} {:x} {} {id}",
            m.start, m.end, m.offset, m.name
        )
        .unwrap();
    }
    for st in &s.stacks {
        let frames: String = st.frames.iter().map(|f| format!(" {f:x}")).collect();
        writeln!(o, "stack {}:{frames}", st.id).unwrap();
    }
    for b in &s.buckets {
        let a = b.active;
        writeln!(
            o,
            "bucket {} {} {} {} {} {}",
            b.stack_id, b.size, a.allocs, a.frees, a.alloc_bytes, a.free_bytes
        )
        .unwrap();
    }
    for ob in s.objects.iter().flatten() {
        writeln!(o, "object {:x} {} {}", ob.addr, ob.stack_id, ob.size).unwrap();
    }
    writeln!(o, "crc {crc:08x}").unwrap();
    o
}

fn crc_of(bytes: &[u8]) -> u32 {
    u32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap())
}

#[test]
fn c_reader_from_the_spec_agrees_with_the_rust_decoder() {
    let exe = snapdump();

    let read = |name: &str| {
        std::fs::read(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("tests/golden")
                .join(name),
        )
        .unwrap()
    };
    use snapshot_common::as_version;
    // Version 4, what the encoder writes: stack 1 names stack 0's last frame (§2.3).
    let golden = read("small-v4.bin");
    let (ok, out) = run(&exe, &golden, "small-v4.bin");
    assert!(ok, "{out}");
    assert_eq!(out, dump(&snapshot_common::small(), crc_of(&golden)));
    assert!(out.contains("stack 1: 8002000 8000400"), "{out}");
    let full = read("small-v4-full.bin");
    let (ok, out) = run(&exe, &full, "small-v4-full.bin");
    assert!(ok, "{out}");
    assert_eq!(out, dump(&decode(&full).unwrap(), crc_of(&full)));
    assert!(out.contains("timestamp 18750000 12500000"), "{out}");

    // Version 1, as earlier encoders wrote it.
    let v1 = read("small.bin");
    let (ok, out) = run(&exe, &v1, "small.bin");
    assert!(ok, "{out}");
    assert_eq!(
        out,
        dump(&as_version(1, snapshot_common::small()), crc_of(&v1))
    );
    assert!(out.contains("stack 0: 8001234 8001100 8000400"), "{out}");
    // Version 3: the timestamp golden (§2.6).
    let stamped = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/small-timestamp.bin"),
    )
    .unwrap();
    let (ok, out) = run(&exe, &stamped, "small-timestamp.bin");
    assert!(ok, "{out}");
    assert_eq!(
        out,
        dump(
            &as_version(3, snapshot_common::small_with_timestamp()),
            crc_of(&stamped)
        )
    );
    assert!(out.contains("timestamp 18750000 12500000"), "{out}");

    // Version 2: the golden file with the object table, deltas both ways.
    let golden2 = std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/small-objects.bin"),
    )
    .unwrap();
    let (ok, out) = run(&exe, &golden2, "small-objects.bin");
    assert!(ok, "{out}");
    assert_eq!(
        out,
        dump(
            &as_version(2, snapshot_common::small_with_objects()),
            crc_of(&golden2)
        )
    );
    assert!(
        out.contains("version 2\n") && out.contains("object 20000040 0 16\nobject 20000200 0 64\n"),
        "{out}"
    );

    // Random valid snapshots (names without newlines or spaces, to keep the dump simple).
    let mut runner = TestRunner::deterministic();
    for i in 0..40 {
        let mut s = snapshot_common::strategy::snapshot()
            .new_tree(&mut runner)
            .unwrap()
            .current();
        for m in &mut s.mappings {
            m.name = m
                .name
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect();
        }
        // Every other one with an object table: objects in random order
        // over the buckets, at addresses that fit the word size.
        if i % 2 == 1 && !s.buckets.is_empty() {
            let max = if s.word_size >= 8 {
                u64::MAX
            } else {
                (1u64 << (8 * u32::from(s.word_size))) - 1
            };
            let mut x = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(i as u64 + 1);
            s.objects = Some(
                (0..(i % 7) * 3)
                    .map(|k| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let b = &s.buckets[k % s.buckets.len()];
                        sampler_core::decoded::LiveObject {
                            addr: x & max,
                            stack_id: b.stack_id,
                            size: b.size,
                        }
                    })
                    .collect(),
            );
        }
        let bytes = encode_to_vec(&s).unwrap();
        let (ok, out) = run(&exe, &bytes, &format!("random-{i}.bin"));
        assert!(ok, "snapshot {i}: {out}");
        assert_eq!(out, dump(&s, crc_of(&bytes)), "snapshot {i}");
    }

    // The C reader rejects what the Rust decoder rejects, for the same reason.
    let mut flipped = golden.clone();
    flipped[0x0d] ^= 1;
    assert!(run(&exe, &flipped, "flipped.bin")
        .1
        .contains("error: bad crc"));
    assert!(run(&exe, &golden[..50], "cut.bin")
        .1
        .contains("error: truncated"));
    let mut v5 = golden.clone();
    v5[4] = 5;
    assert!(run(&exe, &v5, "v5.bin")
        .1
        .contains("error: unsupported version"));
    // A version-1 body read as version 2: the object count is missing.
    let mut v2 = v1.clone();
    v2[4] = 2;
    assert!(run(&exe, &v2, "v2.bin").1.contains("error: "));
    // A link to a stack that is not before it (§2.3), as in Rust.
    let mut far = golden.clone();
    far[0x3f] = 2;
    let n = far.len() - 4;
    let crc = sampler_core::snapshot::crc32(&far[..n]).to_le_bytes();
    far[n..].copy_from_slice(&crc);
    assert!(decode(&far).is_err());
    assert!(run(&exe, &far, "far.bin")
        .1
        .contains("error: stack shares frames of a stack not before it"));
    // The same byte damaged, not resealed: a CRC error for both (§5: meaning is
    // checked only once the CRC matched).
    let mut torn = golden.clone();
    torn[0x3f] = 2;
    assert!(matches!(
        decode(&torn),
        Err(sampler_core::snapshot::DecodeError::BadCrc { .. })
    ));
    assert!(run(&exe, &torn, "torn.bin").1.contains("error: bad crc"));
    // An object naming no bucket (valid CRC): refused after the CRC, as in Rust.
    let mut s = snapshot_common::small_with_objects();
    s.objects.as_mut().unwrap()[1].size = 17;
    let bytes = encode_to_vec(&s).unwrap();
    assert!(sampler_core::snapshot::decode(&bytes).is_err());
    assert!(run(&exe, &bytes, "no-bucket.bin")
        .1
        .contains("error: object names no bucket"));
}

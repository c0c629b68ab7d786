//! Golden bytes: the fixture snapshot must encode to exactly the checked-in bytes, and
//! the worked example in `docs/snapshot-format.md` must be those bytes too, so the spec,
//! the encoder and the decoder cannot drift apart unnoticed.
//!
//! A deliberate format change: run with `BLESS=1` to rewrite `tests/golden/*`, bump
//! `VERSION`, and update the spec's example (this test prints the new hex dump).

mod snapshot_common;

use std::path::PathBuf;

use sampler_core::snapshot::{
    decode, decode_frames, encode_framed_to_vec, encode_to_vec, VERSION, VERSION_FLAGS,
    VERSION_OBJECTS, VERSION_SHARED,
};

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Compare with the golden file, or write it under `BLESS=1`.
fn check_golden(name: &str, actual: &[u8]) {
    let path = golden(name);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        eprintln!("blessed {}:\n{}", path.display(), hex_dump(actual));
        return;
    }
    let expected = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with BLESS=1 to create it)", path.display()));
    assert!(
        expected == actual,
        "{name} changed: the wire format is not what the golden file pins.\nexpected:\n{}\nactual:\n{}\n\
         If the change is deliberate, bump VERSION, run with BLESS=1 and update docs/snapshot-format.md.",
        hex_dump(&expected),
        hex_dump(actual)
    );
}

/// `offset: xx xx …` lines of 16 bytes, the layout the spec uses.
fn hex_dump(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .enumerate()
        .map(|(i, c)| {
            let hex: Vec<String> = c.iter().map(|b| format!("{b:02x}")).collect();
            format!("{:04x}: {}", i * 16, hex.join(" "))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn fixture_encodes_to_the_golden_bytes() {
    let bytes = encode_to_vec(&snapshot_common::small()).unwrap();
    check_golden("small-v4.bin", &bytes);
}

#[test]
fn framed_fixture_encodes_to_the_golden_bytes() {
    let bytes = encode_framed_to_vec(&snapshot_common::small()).unwrap();
    check_golden("small-v4.cobs", &bytes);
}

#[test]
fn golden_bytes_decode_to_the_fixture() {
    let bytes = std::fs::read(golden("small-v4.bin")).unwrap();
    let snap = decode(&bytes).unwrap();
    assert_eq!(snap, snapshot_common::small());
    assert_eq!(snap.version, VERSION_SHARED);

    let framed = std::fs::read(golden("small-v4.cobs")).unwrap();
    let capture = decode_frames(&framed);
    assert_eq!(capture.frames.len(), 1);
    assert_eq!(capture.last_good(), Some(&snapshot_common::small()));
}

/// Version 4's stacks (§2.3): the second stack of the example ends in the first's
/// outermost frame, so it is written as its own frame and a reference (one stack
/// back, one frame), not as both frames: `01 03 01 01 80 c0 80 40` where version 1
/// wrote `01 02 80 c0 80 40 ff 6f`.
#[test]
fn a_stack_ending_in_an_earlier_stacks_frames_names_them() {
    let v4 = std::fs::read(golden("small-v4.bin")).unwrap();
    let v1 = std::fs::read(golden("small.bin")).unwrap();
    let second = [0x01, 0x03, 0x01, 0x01, 0x80, 0xc0, 0x80, 0x40];
    assert!(v4.windows(8).any(|w| w == second), "{}", hex_dump(&v4));
    let whole = [0x01, 0x02, 0x80, 0xc0, 0x80, 0x40, 0xff, 0x6f];
    assert!(v1.windows(8).any(|w| w == whole));
    // The flags byte version 4 always writes costs one; sharing wins it back.
    assert_eq!(v4.len(), v1.len() + 1);
}

/// Version 4 with both optional parts (§2.5, §2.6): flags `03`, the clock after them,
/// the object table after the buckets, pinned byte for byte.
#[test]
fn timestamp_and_objects_encode_to_the_golden_bytes() {
    let mut snap = snapshot_common::small_with_objects();
    snap.timestamp = snapshot_common::small_with_timestamp().timestamp;
    let bytes = encode_to_vec(&snap).unwrap();
    check_golden("small-v4-full.bin", &bytes);
    assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), VERSION_SHARED);
    assert_eq!(bytes[11], 0x03, "flags: timestamp and objects");
    let plain = encode_to_vec(&snapshot_common::small()).unwrap();
    assert_eq!(plain[11], 0x00, "flags: neither");
    // The clock's 8 bytes follow the flags; then the plain snapshot's bytes up to its
    // CRC, then the table.
    assert_eq!(bytes[20..plain.len() + 4], plain[12..plain.len() - 4]);
    let back = decode(&bytes).unwrap();
    assert_eq!(back, snap);
    assert_eq!(back.timestamp.unwrap().seconds(), 1.5);
    assert_eq!(decode(&plain).unwrap().timestamp, None);
    assert_eq!(decode(&plain).unwrap().objects, None);
    // A flag this reader does not know is refused (after the CRC matched).
    let mut unknown = bytes.clone();
    unknown[11] = 0x07;
    let n = unknown.len() - 4;
    let crc = sampler_core::snapshot::crc32(&unknown[..n]).to_le_bytes();
    unknown[n..].copy_from_slice(&crc);
    let e = decode(&unknown).unwrap_err().to_string();
    assert!(e.contains("byte 11") && e.contains("flags 0x7"), "{e}");
}

/// What encoders before version 4 wrote (devices in the field still send it) decodes
/// to the same snapshot, with its version: version 1 (`small.bin`, and framed), version
/// 2 with the object table (`small-objects.bin`), version 3 with a timestamp and flags
/// (`small-timestamp.bin`). Re-encoded, each is version 4.
#[test]
fn versions_1_to_3_still_decode() {
    use snapshot_common::as_version;
    for (file, version, want) in [
        ("small.bin", VERSION, snapshot_common::small()),
        (
            "small-objects.bin",
            VERSION_OBJECTS,
            snapshot_common::small_with_objects(),
        ),
        (
            "small-timestamp.bin",
            VERSION_FLAGS,
            snapshot_common::small_with_timestamp(),
        ),
    ] {
        let bytes = std::fs::read(golden(file)).unwrap();
        assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), version, "{file}");
        let snap = decode(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(snap, as_version(version, want.clone()), "{file}");
        let again = decode(&encode_to_vec(&snap).unwrap()).unwrap();
        assert_eq!(again, want, "{file} re-encoded");
    }
    let framed = std::fs::read(golden("small.cobs")).unwrap();
    let capture = decode_frames(&framed);
    assert_eq!(
        capture.last_good(),
        Some(&as_version(VERSION, snapshot_common::small()))
    );
}

/// Bytes an encoder wrote before the heap totals were appended to the counters (7
/// counters, the version-1 minimum; `small.bin` as it was): still version 1, still
/// decoded, and its totals are absent, not zero. The spec's §6 allows appending
/// counters without a new version; this file pins that such snapshots stay readable.
#[test]
fn seven_counter_bytes_decode_with_heap_totals_absent() {
    let bytes = std::fs::read(golden("small-7.bin")).unwrap();
    assert_eq!(bytes[0x0b], 7, "counter_count of the pre-totals golden");
    let snap = decode(&bytes).unwrap();
    assert_eq!(snap, snapshot_common::small_seven_counters());
    assert_eq!(snap.counters.heap(), None);
    // The same snapshot now encodes with every counter of the table (6 more bytes, all
    // zero: `heap_totals` 0 says the four after it mean nothing, `elf_machine` 0 unknown),
    // as version 4 (one more: the flags; the shared frame's saving pays for its link).
    let now = encode_to_vec(&snap).unwrap();
    assert_eq!(now.len(), bytes.len() + 6 + 1);
    assert_eq!(
        decode(&now).unwrap(),
        snapshot_common::as_version(VERSION_SHARED, snap)
    );
}

/// Bytes an encoder wrote before `elf_machine` was appended (12 counters; `small.bin`
/// as it was): still decoded, the architecture unknown (0), and re-encoded with the
/// one more counter (one byte: 0).
#[test]
fn twelve_counter_bytes_decode_with_the_architecture_unknown() {
    let bytes = std::fs::read(golden("small-12.bin")).unwrap();
    assert_eq!(
        bytes[0x0b], 12,
        "counter_count of the pre-elf_machine golden"
    );
    let snap = decode(&bytes).unwrap();
    assert_eq!(snap, snapshot_common::small_twelve_counters());
    assert_eq!(snap.counters.elf_machine, 0);
    let now = encode_to_vec(&snap).unwrap();
    assert_eq!(now.len(), bytes.len() + 1 + 1);
    assert_eq!(
        decode(&now).unwrap(),
        snapshot_common::as_version(VERSION_SHARED, snap)
    );
}

/// The spec's worked examples (the hex block after each `<!-- golden: FILE -->`) are the
/// golden files, byte for byte.
#[test]
fn spec_worked_example_is_the_golden_bytes() {
    let spec_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/snapshot-format.md");
    let spec = std::fs::read_to_string(&spec_path).unwrap();
    for name in [
        "small-v4.bin",
        "small-v4.cobs",
        "small-v4-full.bin",
        "small.bin",
        "small.cobs",
        "small-objects.bin",
        "small-timestamp.bin",
    ] {
        let marker = format!("<!-- golden: {name} -->");
        let want = std::fs::read(golden(name)).unwrap();
        let at = spec
            .find(&marker)
            .unwrap_or_else(|| panic!("spec has no `{marker}` block"));
        let block = &spec[at + marker.len()..];
        let block = &block[block.find("```").unwrap() + 3..];
        let block = &block[block.find('\n').unwrap() + 1..];
        let block = &block[..block.find("```").unwrap()];
        let mut bytes = Vec::new();
        for line in block.lines() {
            // `0000: 48 53 …  ; comment` — hex pairs between the colon and any `;`.
            let line = line.split(';').next().unwrap();
            let Some((_, hex)) = line.split_once(':') else {
                continue;
            };
            for pair in hex.split_whitespace() {
                bytes.push(
                    u8::from_str_radix(pair, 16)
                        .unwrap_or_else(|_| panic!("bad hex `{pair}` in spec")),
                );
            }
        }
        assert!(
            bytes == want,
            "spec example after `{marker}` differs from the golden file:\n{}",
            hex_dump(&want)
        );
    }
}

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
    VERSION_OBJECTS,
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
    check_golden("small.bin", &bytes);
}

#[test]
fn framed_fixture_encodes_to_the_golden_bytes() {
    let bytes = encode_framed_to_vec(&snapshot_common::small()).unwrap();
    check_golden("small.cobs", &bytes);
}

#[test]
fn golden_bytes_decode_to_the_fixture() {
    let bytes = std::fs::read(golden("small.bin")).unwrap();
    let snap = decode(&bytes).unwrap();
    assert_eq!(snap, snapshot_common::small());
    assert_eq!(snap.version, VERSION);

    let framed = std::fs::read(golden("small.cobs")).unwrap();
    let capture = decode_frames(&framed);
    assert_eq!(capture.frames.len(), 1);
    assert_eq!(capture.last_good(), Some(&snapshot_common::small()));
}

/// Version 2: the same snapshot with its object table (§2.5), pinned byte for byte; the
/// version-1 bytes above are untouched by the table's existence (a source without
/// objects still writes version 1).
#[test]
fn object_table_encodes_to_the_version_2_golden_bytes() {
    let snap = snapshot_common::small_with_objects();
    let bytes = encode_to_vec(&snap).unwrap();
    check_golden("small-objects.bin", &bytes);
    assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), VERSION_OBJECTS);
    let v1 = encode_to_vec(&snapshot_common::small()).unwrap();
    // Everything before the buckets' end is version 1's, but for the version field
    // and the CRC; the table follows the buckets.
    assert_eq!(bytes[6..v1.len() - 4], v1[6..v1.len() - 4]);
    let back = decode(&bytes).unwrap();
    assert_eq!(back, snap);
    assert_eq!(back.version, VERSION_OBJECTS);
    // A version-1 snapshot decodes with no table at all (not an empty one).
    assert_eq!(decode(&v1).unwrap().objects, None);
}

/// Version 3: the same snapshot with a device timestamp (§2.6), pinned byte for byte:
/// the flags and the clock follow `cycle`, everything else is version 1's. With the
/// object table as well, flags say both, and the table follows the buckets as in
/// version 2. A source without a timestamp still writes versions 1 and 2 (above).
#[test]
fn timestamp_encodes_to_the_version_3_golden_bytes() {
    let snap = snapshot_common::small_with_timestamp();
    let bytes = encode_to_vec(&snap).unwrap();
    check_golden("small-timestamp.bin", &bytes);
    assert_eq!(u16::from_le_bytes([bytes[4], bytes[5]]), VERSION_FLAGS);
    let v1 = encode_to_vec(&snapshot_common::small()).unwrap();
    // magic, version, word size, rate (3 bytes), cycle: 11 bytes; then flags 01 and
    // the two varints (4 bytes each), then version 1's bytes up to its CRC.
    assert_eq!(bytes[6..11], v1[6..11]);
    assert_eq!(bytes[11], 0x01, "flags: timestamp only");
    assert_eq!(bytes[20..bytes.len() - 4], v1[11..v1.len() - 4]);
    let back = decode(&bytes).unwrap();
    assert_eq!(back, snap);
    assert_eq!(back.timestamp.unwrap().seconds(), 1.5);
    // Versions 1 and 2 decode with no timestamp.
    assert_eq!(decode(&v1).unwrap().timestamp, None);

    let mut both = snapshot_common::small_with_objects();
    both.version = VERSION_FLAGS;
    both.timestamp = snap.timestamp;
    let b = encode_to_vec(&both).unwrap();
    assert_eq!(b[11], 0x03, "flags: timestamp and objects");
    let v2 = encode_to_vec(&snapshot_common::small_with_objects()).unwrap();
    assert_eq!(b[20..b.len() - 4], v2[11..v2.len() - 4]);
    assert_eq!(decode(&b).unwrap(), both);
    // A flag this reader does not know is refused (after the CRC matched).
    let mut unknown = b.clone();
    unknown[11] = 0x07;
    let n = unknown.len() - 4;
    let crc = sampler_core::snapshot::crc32(&unknown[..n]).to_le_bytes();
    unknown[n..].copy_from_slice(&crc);
    let e = decode(&unknown).unwrap_err().to_string();
    assert!(e.contains("byte 11") && e.contains("flags 0x7"), "{e}");
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
    // zero: `heap_totals` 0 says the four after it mean nothing, `elf_machine` 0 unknown).
    let now = encode_to_vec(&snap).unwrap();
    assert_eq!(now.len(), bytes.len() + 6);
    assert_eq!(decode(&now).unwrap(), snap);
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
    assert_eq!(now.len(), bytes.len() + 1);
    assert_eq!(decode(&now).unwrap(), snap);
}

/// The spec's worked example (the hex block after `<!-- golden: small.bin -->`) is the
/// golden file, byte for byte.
#[test]
fn spec_worked_example_is_the_golden_bytes() {
    let spec_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/snapshot-format.md");
    let spec = std::fs::read_to_string(&spec_path).unwrap();
    let expected = std::fs::read(golden("small.bin")).unwrap();
    for (marker, want) in [
        ("<!-- golden: small.bin -->", expected),
        (
            "<!-- golden: small.cobs -->",
            std::fs::read(golden("small.cobs")).unwrap(),
        ),
        (
            "<!-- golden: small-objects.bin -->",
            std::fs::read(golden("small-objects.bin")).unwrap(),
        ),
        (
            "<!-- golden: small-timestamp.bin -->",
            std::fs::read(golden("small-timestamp.bin")).unwrap(),
        ),
    ] {
        let at = spec
            .find(marker)
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

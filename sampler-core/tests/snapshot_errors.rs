//! Bad input gets the right typed error, never a panic: truncation at every length,
//! every single-bit flip, wrong version, wrong magic, trailing bytes, hostile counts,
//! and semantic errors behind a valid CRC.

mod snapshot_common;

use sampler_core::decoded::{Bucket, Snapshot, Stack};
use sampler_core::snapshot::{
    crc32, decode, decode_prefix, encode_to_vec, DecodeError, LATEST_VERSION,
};

fn fixture_bytes() -> Vec<u8> {
    encode_to_vec(&snapshot_common::small()).unwrap()
}

/// Recompute the trailing CRC after editing the body, so the test reaches the check it
/// is about instead of stopping at the CRC.
fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    let n = bytes.len() - 4;
    let crc = crc32(&bytes[..n]);
    bytes[n..].copy_from_slice(&crc.to_le_bytes());
    bytes
}

#[test]
fn every_truncation_is_unexpected_eof() {
    let bytes = fixture_bytes();
    for len in 0..bytes.len() {
        match decode(&bytes[..len]) {
            Err(DecodeError::UnexpectedEof { offset, needed }) => {
                assert!(
                    offset <= len,
                    "prefix {len}: offset {offset} beyond the input"
                );
                assert!(needed >= 1, "prefix {len}: needs {needed}");
            }
            other => panic!(
                "prefix of {len}/{} bytes: expected UnexpectedEof, got {other:?}",
                bytes.len()
            ),
        }
    }
}

#[test]
fn truncation_reports_exactly_what_is_missing_in_the_crc() {
    let bytes = fixture_bytes();
    let n = bytes.len();
    assert_eq!(
        decode(&bytes[..n - 3]),
        Err(DecodeError::UnexpectedEof {
            offset: n - 4,
            needed: 3
        })
    );
}

#[test]
fn every_single_bit_flip_is_a_typed_error() {
    let bytes = fixture_bytes();
    let body = bytes.len() - 4;
    let (mut crc, mut other) = (0, 0);
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            match decode(&b) {
                Ok(s) => panic!("flip of bit {bit} in byte {i} decoded as {s:?}"),
                Err(DecodeError::BadCrc { .. }) => crc += 1,
                Err(e) => {
                    // Flips in the stored CRC itself must be reported as a CRC error.
                    assert!(i < body, "flip in CRC byte {i} gave {e:?}");
                    // Errors other than the CRC can only come from structure: magic,
                    // version, a count or varint continuation bit.
                    assert!(
                        matches!(
                            e,
                            DecodeError::BadMagic { .. }
                                | DecodeError::UnsupportedVersion { .. }
                                | DecodeError::UnexpectedEof { .. }
                                | DecodeError::Malformed { .. }
                        ),
                        "{e:?}"
                    );
                    other += 1;
                }
            }
        }
    }
    // Most flips hit a value, where only the CRC can notice them.
    assert!(crc > other, "{crc} CRC errors vs {other} others");
}

#[test]
fn value_flip_is_bad_crc_with_both_crcs() {
    let bytes = fixture_bytes();
    let mut b = bytes.clone();
    b[0x0d] ^= 0x01; // samples counter 42 -> 43: same structure, different value
    let n = b.len() - 4;
    let stored = u32::from_le_bytes(bytes[n..].try_into().unwrap());
    assert_eq!(
        decode(&b),
        Err(DecodeError::BadCrc {
            offset: n,
            expected: stored,
            found: crc32(&b[..n])
        })
    );
}

#[test]
fn other_versions_are_unsupported() {
    for v in [0u16, 5, 0x100, u16::MAX] {
        let mut b = fixture_bytes();
        b[4..6].copy_from_slice(&v.to_le_bytes());
        let e = decode(&reseal(b)).unwrap_err();
        assert_eq!(
            e,
            DecodeError::UnsupportedVersion {
                found: v,
                supported: LATEST_VERSION
            }
        );
        assert!(e.to_string().contains(&format!("version {v}")), "{e}");
    }
    // Even a truncated snapshot of another version says so (nothing after is read).
    let mut b = fixture_bytes();
    b[4] = 5;
    assert!(matches!(
        decode(&b[..7]),
        Err(DecodeError::UnsupportedVersion { found: 5, .. })
    ));
}

#[test]
fn other_files_are_bad_magic() {
    for junk in [
        &b"\x1f\x8b\x08\x00gzip"[..],
        b"HSNQ\x01\x00",
        b"X",
        b"\x06HSNP\x01",
    ] {
        assert!(
            matches!(decode(junk), Err(DecodeError::BadMagic { .. })),
            "{junk:?}"
        );
    }
    assert!(matches!(
        decode(b"HS"),
        Err(DecodeError::UnexpectedEof {
            offset: 0,
            needed: 2
        })
    ));
    let e = decode(b"PK\x03\x04zip").unwrap_err();
    assert!(e.to_string().contains("not a heapsnap snapshot"), "{e}");
}

#[test]
fn trailing_bytes_are_malformed_but_decode_prefix_reads_flash_dumps() {
    let mut b = fixture_bytes();
    let n = b.len();
    b.extend_from_slice(&[0xff; 32]); // erased flash after the snapshot
    assert!(matches!(decode(&b), Err(DecodeError::Malformed { offset, .. }) if offset == n));
    let (snap, used) = decode_prefix(&b).unwrap();
    assert_eq!((snap, used), (snapshot_common::small(), n));
}

/// A hostile count must fail fast on the bytes that remain, not allocate for it (if it
/// did allocate, `Vec::with_capacity` of 2^60 stacks would abort this test binary).
#[test]
fn hostile_counts_do_not_allocate() {
    let s = Snapshot {
        version: 1,
        word_size: 8,
        ..Default::default()
    };
    let b = encode_to_vec(&s).unwrap();
    // Layout: magic(4) version(2) word(1) rate(1) cycle(1) flags(1) 0d + 13 counters,
    // then the mapping count at offset 24.
    for count_at in [24usize, 25, 26] {
        let mut h = b[..count_at].to_vec();
        h.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f]); // 2^63-1
        h.extend_from_slice(&b[count_at + 1..]);
        match decode(&h) {
            Err(DecodeError::UnexpectedEof { offset, needed }) => {
                assert_eq!(offset, count_at);
                assert!(needed > 1 << 40, "{needed}");
            }
            other => panic!("count at {count_at}: {other:?}"),
        }
    }
    // Same for a frame count and a name length.
    let mut s = snapshot_common::small();
    s.stacks.truncate(1);
    s.stacks[0].frames.truncate(1);
    s.buckets.retain(|b| b.stack_id == 0);
    let b = encode_to_vec(&s).unwrap();
    let at = 0x34; // head of stack 0: one own frame, shares none
    assert_eq!(b[at], 2);
    let mut h = b[..at].to_vec();
    h.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    h.extend_from_slice(&b[at + 1..]);
    assert!(matches!(decode(&h), Err(DecodeError::UnexpectedEof { offset, .. }) if offset == at));
}

#[test]
fn overlong_varint_is_malformed() {
    let s = Snapshot {
        version: 1,
        word_size: 8,
        ..Default::default()
    };
    let b = encode_to_vec(&s).unwrap();
    let mut h = b[..7].to_vec(); // up to and including word size
    h.extend_from_slice(&[0x80; 11]); // sample_rate: a varint longer than 10 bytes
    h.extend_from_slice(&b[8..]);
    assert!(
        matches!(decode(&h), Err(DecodeError::Malformed { offset: 7, .. })),
        "{:?}",
        decode(&h)
    );
}

/// Checks of meaning, behind a valid CRC (an encoder bug or a hostile file).
#[test]
fn semantic_errors_are_malformed_with_offsets() {
    let base = snapshot_common::small();
    let cases: Vec<(Snapshot, &str)> = vec![
        (
            Snapshot {
                word_size: 3,
                ..base.clone()
            },
            "word size 3",
        ),
        (
            Snapshot {
                buckets: vec![Bucket {
                    stack_id: 9,
                    ..base.buckets[0]
                }],
                ..base.clone()
            },
            "stack id 9",
        ),
        (
            Snapshot {
                stacks: vec![Stack {
                    id: 0,
                    frames: vec![1 << 32],
                }],
                buckets: vec![],
                ..base.clone()
            },
            "does not fit the 4-byte word size",
        ),
        (
            Snapshot {
                stacks: vec![
                    Stack {
                        id: 5,
                        frames: vec![],
                    },
                    Stack {
                        id: 5,
                        frames: vec![1],
                    },
                ],
                buckets: vec![],
                ..base.clone()
            },
            "stack id 5 appears twice",
        ),
        (
            Snapshot {
                mappings: vec![sampler_core::decoded::Mapping {
                    start: 10,
                    end: 5,
                    ..base.mappings[0].clone()
                }],
                ..base.clone()
            },
            "ends (0x5) before it starts (0xa)",
        ),
    ];
    for (s, what) in cases {
        let b = encode_to_vec(&s).unwrap();
        match decode(&b) {
            Err(e @ DecodeError::Malformed { .. }) => {
                let text = e.to_string();
                assert!(text.contains(what), "expected `{what}` in `{text}`");
                assert!(text.contains("at byte "), "{text}");
            }
            other => panic!("{what}: {other:?}"),
        }
    }
    // A name that is not UTF-8: patch "fw.elf" in the fixture and reseal.
    let mut b = fixture_bytes();
    b[0x27] = 0xff;
    assert!(matches!(
        decode(&reseal(b)),
        Err(DecodeError::Malformed { offset: 0x26, .. })
    ));
    // The heap totals flag is 0 or 1: patch it to 2 (fixture offset 0x14) and reseal.
    let mut b = fixture_bytes();
    assert_eq!(b[0x14], 1, "heap_totals of the fixture");
    b[0x14] = 2;
    match decode(&reseal(b)) {
        Err(e @ DecodeError::Malformed { offset: 0x14, .. }) => {
            assert!(
                e.to_string().contains("heap_totals 2 (must be 0 or 1)"),
                "{e}"
            );
        }
        other => panic!("heap_totals 2: {other:?}"),
    }
}

#[test]
fn error_texts_say_what_and_where() {
    let b = fixture_bytes();
    let e = decode(&b[..40]).unwrap_err();
    assert!(
        e.to_string().contains("truncated") && e.to_string().contains("byte"),
        "{e}"
    );
    let mut c = b.clone();
    c[0x0d] ^= 1;
    let e = decode(&c).unwrap_err().to_string();
    assert!(
        e.contains("checksum mismatch") && e.contains("byte 91"),
        "{e}"
    );
}

/// Stack ids are u32 varints: `ff ff ff ff 0f` is u32::MAX, `ff ff ff ff 1f` overflows.
#[test]
fn stack_id_varint_beyond_u32_is_malformed() {
    let s = Snapshot {
        version: sampler_core::snapshot::VERSION_SHARED,
        word_size: 8,
        stacks: vec![Stack {
            id: u32::MAX,
            frames: vec![],
        }],
        ..Default::default()
    };
    let b = encode_to_vec(&s).unwrap();
    let at = 26; // header (24), mapping count, stack count
    assert_eq!(&b[at..at + 5], &[0xff, 0xff, 0xff, 0xff, 0x0f]);
    assert_eq!(decode(&b).unwrap(), s);
    let mut h = b.clone();
    h[at + 4] = 0x1f;
    assert!(
        matches!(decode(&reseal(h)), Err(DecodeError::Malformed { offset, .. }) if offset == at)
    );
}

/// Version 4's links (§2.3) behind a valid CRC: a base further back than the stacks
/// before it, or more frames than the base has, or none, is `Malformed` at the link.
/// The fixture's stack 1 is `01 03 01 01 …` at 0x3d: id 1, one own frame and a link,
/// base 1, one frame.
#[test]
fn links_to_a_stack_that_is_not_there_are_malformed() {
    let b = fixture_bytes();
    assert_eq!(&b[0x3d..0x41], &[0x01, 0x03, 0x01, 0x01]);
    for (at, value, what) in [
        (
            0x3f,
            2,
            "shares frames of the stack 2 before it, but 1 come before it",
        ),
        (0x3f, 0, "shares frames of the stack 0 before it"),
        (0x40, 4, "shares 4 frames of a stack of 3 (must be 1 to 3)"),
        (0x40, 0, "shares 0 frames of a stack of 3"),
    ] {
        let mut c = b.clone();
        c[at] = value;
        match decode(&reseal(c)) {
            Err(e @ DecodeError::Malformed { offset: 0x3f, .. }) => {
                assert!(e.to_string().contains(what), "{e}")
            }
            other => panic!("{what}: {other:?}"),
        }
    }
}

/// A stack that names the frames of an earlier one costs a few bytes however many it
/// names: the cap of §2.3 (4 frames per byte read) stops a small file
/// from asking for a huge expansion, at the stack that passes it, before allocating.
#[test]
fn shared_frames_beyond_the_cap_are_refused_at_once() {
    // One stack of 4,096 frames (one byte each after the first), then stacks of no own
    // frames that each name all of them: 5 bytes a stack for 4,096 frames.
    // Magic, version 4, word size 8, rate 0, cycle 0, flags 0, 7 counters of 0, no
    // mappings: 19 bytes; then the stack count.
    let mut b = b"HSNP\x04\x00\x08\x00\x00\x00\x07".to_vec();
    b.extend_from_slice(&[0; 8]);
    let count_at = b.len();
    let n = 100u32;
    b.push(n as u8);
    b.extend_from_slice(&[0x00, 0x80, 0x40]); // id 0, head 8192: 4,096 own frames
    b.push(0x01);
    b.extend(std::iter::repeat_n(0x00, 4095));
    let at_first_link = b.len();
    for id in 1..n {
        // id, head 1 (no own frames, a link), base 1, 4,096 frames (0x80 0x20).
        b.extend_from_slice(&[id as u8, 0x01, 0x01, 0x80, 0x20]);
    }
    b.push(0x00); // no buckets
    let crc = crc32(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    // 4 × bytes: 4,119 bytes to the end of stack 0, 5 more a stack; the fifth stack
    // (20,480 frames against 16,556) passes the cap, not the last.
    match decode(&b) {
        Err(e @ DecodeError::Malformed { offset, .. }) => {
            assert_eq!(offset, at_first_link + 3 * 5, "{e}");
            assert!(e.to_string().contains("more than the"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // Fewer stacks, within the cap: the same bytes decode, every stack expanded.
    let few = 4u32;
    let mut c = b[..at_first_link + 5 * (few as usize - 1)].to_vec();
    c[count_at] = few as u8;
    c.push(0x00);
    let crc = crc32(&c);
    c.extend_from_slice(&crc.to_le_bytes());
    let s = decode(&c).unwrap();
    assert_eq!(s.stacks.len(), few as usize);
    assert!(s.stacks.iter().all(|s| s.frames.len() == 4096));
}

//! The compile-time snapshot bound holds for the worst tables a profiler can hold, and
//! a full sink says how many bytes the snapshot needed.
#![cfg(feature = "std")]

use sampler_core::decoded::{Mapping, Snapshot, Stack};
use sampler_core::snapshot::{
    encode_framed_stream, encode_framed_to_vec, encode_stream, encode_to_vec, encoded_len,
    encoded_len_framed, max_encoded_len, max_framed_len, Bucket, EncodeError, FnSink, MappingRef,
    Shape, Slice,
};
use sampler_core::{Counters, Cycle, Profiler};

const S: usize = 8;
const F: usize = S * D;
const B: usize = 16;
const L: usize = 16;
const D: usize = 8;
type Prof = Profiler<S, F, B, L, D>;

/// Every table full of the widest values: frames that swing between 0 and the top of
/// the address space (the largest deltas), object sizes near `usize::MAX`.
fn worst() -> Prof {
    let prof = Prof::new(1, 3);
    for i in 0..(2 * B) {
        let s = i % S;
        let stack: Vec<usize> = (0..D)
            .map(|k| {
                if (k + s) % 2 == 0 {
                    usize::MAX - k - s
                } else {
                    k + s
                }
            })
            .collect();
        let size = usize::MAX / 4 - i;
        prof.record_alloc((0x1000 + 16 * i) as *const u8, size, &stack[..]);
    }
    prof.advance_cycle();
    prof
}

#[test]
fn max_snapshot_len_bounds_full_tables_of_the_widest_values() {
    let prof = worst();
    let c = prof.counters();
    assert!(
        c.stack_table_full + c.bucket_table_full > 0,
        "tables not filled: {c:?}"
    );
    let (len, framed) = prof
        .with_view(&[], |v| {
            (encoded_len(v).unwrap(), encoded_len_framed(v).unwrap())
        })
        .unwrap();
    assert!(
        len <= Prof::MAX_SNAPSHOT_LEN,
        "{len} > {}",
        Prof::MAX_SNAPSHOT_LEN
    );
    assert!(
        framed <= Prof::MAX_SNAPSHOT_LEN_FRAMED,
        "{framed} > {}",
        Prof::MAX_SNAPSHOT_LEN_FRAMED
    );
    // The buffer sized by the constant takes the snapshot.
    let mut buf = [0u8; Prof::MAX_SNAPSHOT_LEN];
    assert_eq!(
        prof.write_snapshot_to_slice(&[], &mut buf).unwrap().len(),
        len
    );
}

#[test]
fn a_full_sink_says_how_many_bytes_were_needed_framed_or_not() {
    let prof = worst();
    let (len, framed) = prof
        .with_view(&[], |v| {
            (encoded_len(v).unwrap(), encoded_len_framed(v).unwrap())
        })
        .unwrap();
    let mut small = [0u8; 64];
    assert_eq!(
        prof.write_snapshot_to_slice(&[], &mut small),
        Err(sampler_core::SnapshotError::Encode(EncodeError::SinkFull {
            needed: len
        }))
    );
    let err = prof
        .write_snapshot_framed(&[], postcard::ser_flavors::Slice::new(&mut small))
        .unwrap_err();
    assert_eq!(
        err,
        sampler_core::SnapshotError::Encode(EncodeError::SinkFull { needed: framed })
    );
    assert!(
        err.to_string().contains(&format!("needs {framed} bytes")),
        "{err}"
    );
}

/// A sink whose write fails (a UART error) ends the snapshot with `SinkFailed`, not with
/// a "full" that would send the user off to enlarge a buffer: the writer keeps the
/// sink's own error.
#[test]
fn a_failing_sink_is_reported_as_failed_not_full() {
    let prof = worst();
    for fail_after in [0usize, 3, 40] {
        let mut sent = 0usize;
        let sink = sampler_core::snapshot::FnSink::new(|bytes: &[u8]| {
            if sent >= fail_after {
                return Err(());
            }
            sent += bytes.len();
            Ok(())
        });
        assert_eq!(
            prof.write_snapshot(&[], sink),
            Err(sampler_core::SnapshotError::Encode(EncodeError::SinkFailed)),
            "failing after {fail_after} bytes"
        );
        let sink = sampler_core::snapshot::FnSink::new(|_: &[u8]| Err(()));
        assert_eq!(
            prof.write_snapshot_framed(&[], sink),
            Err(sampler_core::SnapshotError::Encode(EncodeError::SinkFailed)),
            "framed"
        );
    }
}

/// The streaming encoders (the C library's) write the very bytes `encode` and
/// `encode_framed` write, and, having no counting pass, report a full slice as a failed
/// sink.
#[test]
fn streaming_encoders_write_the_same_bytes_and_a_full_slice_fails() {
    let prof = worst();
    prof.with_view(&[], |v| {
        let mut plain = Vec::new();
        encode_stream(
            v,
            FnSink::new(|b: &[u8]| {
                plain.extend_from_slice(b);
                Ok(())
            }),
        )
        .unwrap();
        assert_eq!(plain, encode_to_vec(v).unwrap());
        let mut framed = Vec::new();
        encode_framed_stream(
            v,
            FnSink::new(|b: &[u8]| {
                framed.extend_from_slice(b);
                Ok(())
            }),
        )
        .unwrap();
        assert_eq!(framed, encode_framed_to_vec(v).unwrap());
        let mut small = vec![0u8; plain.len() - 1];
        assert_eq!(
            encode_stream(v, Slice::new(&mut small)).map(|s| s.len()),
            Err(EncodeError::SinkFailed)
        );
        let mut exact = vec![0u8; plain.len()];
        assert_eq!(
            encode_stream(v, Slice::new(&mut exact)).map(|s| s.len()),
            Ok(plain.len())
        );
    })
    .unwrap();
}

/// The bound is reached, not just respected: a source with every field at its widest
/// (all-ones counters and tallies, frames swinging across the whole address space, ids
/// at `u32::MAX`) encodes to within a few bytes of it, for 4- and 8-byte words.
#[test]
fn the_bound_is_tight_for_a_source_of_the_widest_values() {
    for word_size in [4u8, 8] {
        let top = if word_size == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        // The widest delta between 64-bit frames is half the space (wrapping makes
        // `0 → u64::MAX` a delta of -1): `i64::MIN`, whose zigzag is all ones.
        let far = if word_size == 4 { top } else { 1 << 63 };
        let shape = Shape {
            word_size: usize::from(word_size),
            stacks: 5,
            frames: 20,
            depth: 6,
            buckets: 7,
            objects: 0,
        };
        let snap = Snapshot {
            objects: None,
            timestamp: None,
            count_type: None,
            version: sampler_core::snapshot::VERSION_SHARED,
            word_size,
            sample_rate: u64::MAX,
            cycle: u64::MAX,
            counters: Counters::from_array([u64::MAX; Counters::LEN]),
            mappings: vec![Mapping {
                start: u64::MAX,
                end: u64::MAX,
                offset: u64::MAX,
                name: "firmware.elf".into(),
                build_id: vec![0xab; 20],
            }],
            stacks: (0..5u32)
                .map(|i| Stack {
                    id: u32::MAX - i,
                    // The outermost frame differs from stack to stack: nothing to share.
                    frames: (0..4)
                        .map(|k| if k % 2 == 0 { far } else { u64::from(i) })
                        .collect(),
                })
                .collect(),
            buckets: (0..7u64)
                .map(|i| Bucket {
                    stack_id: u32::MAX,
                    size: top - i,
                    active: Cycle {
                        allocs: u64::MAX,
                        frees: u64::MAX,
                        alloc_bytes: u64::MAX,
                        free_bytes: u64::MAX,
                    },
                })
                .collect(),
        };
        let mapping = [MappingRef {
            start: 0,
            end: 0,
            offset: 0,
            name: "firmware.elf",
            build_id: &[0xab; 20],
        }];
        let bound = max_encoded_len(shape, &mapping);
        let len = encoded_len(&snap).unwrap();
        assert!(len <= bound, "word {word_size}: {len} > {bound}");
        // Slack: a stack's head (1 byte here, bounded by `depth`), and the link to a
        // base (2 bytes) these stacks do not need.
        assert!(
            bound - len <= 18,
            "word {word_size}: bound {bound} for {len}"
        );
        let framed = encoded_len_framed(&snap).unwrap();
        assert!(
            framed <= max_framed_len(len),
            "{framed} > {}",
            max_framed_len(len)
        );
    }
}

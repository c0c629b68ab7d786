//! decode(encode(s)) == s, for the fixture and for arbitrary valid snapshots, through
//! every writer (slice, Vec, COBS-framed) — and arbitrary bytes never panic the decoder.

mod snapshot_common;

use proptest::prelude::*;
use sampler_core::snapshot::{
    decode, decode_frames, encode_framed_to_slice, encode_to_slice, encode_to_vec, DecodeError,
    EncodeError,
};

#[test]
fn fixture_round_trips() {
    let s = snapshot_common::small();
    let bytes = encode_to_vec(&s).unwrap();
    assert_eq!(decode(&bytes).unwrap(), s);
}

#[test]
fn slice_and_vec_encoders_agree() {
    let s = snapshot_common::small();
    let mut buf = [0u8; 256];
    let used = encode_to_slice(&s, &mut buf).unwrap();
    assert_eq!(used.to_vec(), encode_to_vec(&s).unwrap());
}

#[test]
fn too_small_buffer_is_sink_full_at_every_size() {
    let s = snapshot_common::small();
    let n = encode_to_vec(&s).unwrap().len();
    for len in 0..n {
        let mut buf = vec![0u8; len];
        assert_eq!(
            encode_to_slice(&s, &mut buf).unwrap_err(),
            EncodeError::SinkFull { needed: n },
            "buffer of {len}"
        );
    }
    let mut buf = vec![0u8; n];
    assert_eq!(encode_to_slice(&s, &mut buf).unwrap().len(), n);
}

/// A source whose `len()` lies must not produce a snapshot that looks valid.
#[test]
fn lying_source_is_refused() {
    use sampler_core::snapshot::{encode, Bucket, Header, MappingRef, SnapshotSource, StackRef};

    struct Liar;
    /// Announces 3 buckets, yields 2.
    struct Short(std::vec::IntoIter<Bucket>);
    impl Iterator for Short {
        type Item = Bucket;
        fn next(&mut self) -> Option<Bucket> {
            self.0.next()
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (3, Some(3))
        }
    }
    impl ExactSizeIterator for Short {}
    impl SnapshotSource for Liar {
        fn header(&self) -> Header {
            Header {
                word_size: 8,
                ..Default::default()
            }
        }
        fn mappings(&self) -> impl ExactSizeIterator<Item = MappingRef<'_>> {
            std::iter::empty()
        }
        fn stacks(&self) -> impl ExactSizeIterator<Item = StackRef<'_>> {
            std::iter::empty()
        }
        fn buckets(&self) -> impl ExactSizeIterator<Item = Bucket> {
            Short(vec![Bucket::default(); 2].into_iter())
        }
    }
    let e = encode(&Liar, postcard::ser_flavors::ExtendFlavor::new(Vec::new())).unwrap_err();
    assert_eq!(
        e,
        EncodeError::LengthMismatch {
            section: "buckets",
            announced: 3,
            yielded: 2
        }
    );
}

/// The device's own word width goes through `Frames::U32`/`Usize` unchanged.
#[test]
fn narrow_frame_slices_encode_like_u64() {
    use sampler_core::snapshot::{Bucket, Frames, Header, MappingRef, SnapshotSource, StackRef};
    struct Device {
        frames: [u32; 3],
        words: [usize; 3],
    }
    impl SnapshotSource for Device {
        fn header(&self) -> Header {
            Header {
                word_size: 4,
                ..Default::default()
            }
        }
        fn mappings(&self) -> impl ExactSizeIterator<Item = MappingRef<'_>> {
            std::iter::empty()
        }
        fn stacks(&self) -> impl ExactSizeIterator<Item = StackRef<'_>> {
            [
                StackRef {
                    id: 0,
                    frames: Frames::U32(&self.frames),
                },
                StackRef {
                    id: 1,
                    frames: Frames::Usize(&self.words),
                },
            ]
            .into_iter()
        }
        fn buckets(&self) -> impl ExactSizeIterator<Item = Bucket> {
            std::iter::empty()
        }
    }
    let d = Device {
        frames: [0x0800_1234, 0x0800_1100, 0x0800_0400],
        words: [0x2000, 0x1000, 0x3000],
    };
    let s = decode(&encode_to_vec(&d).unwrap()).unwrap();
    assert_eq!(
        s.stacks[0].frames,
        vec![0x0800_1234, 0x0800_1100, 0x0800_0400]
    );
    assert_eq!(s.stacks[1].frames, vec![0x2000, 0x1000, 0x3000]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip(s in snapshot_common::strategy::snapshot()) {
        let bytes = encode_to_vec(&s).unwrap();
        prop_assert_eq!(decode(&bytes).unwrap(), s.clone());

        // The slice writer gives the same bytes, and the framed form decodes the same.
        let mut buf = vec![0u8; bytes.len() + bytes.len() / 254 + 2];
        prop_assert_eq!(&encode_to_slice(&s, &mut buf).unwrap()[..], &bytes[..]);
        let framed = encode_framed_to_slice(&s, &mut buf).unwrap().to_vec();
        let capture = decode_frames(&framed);
        prop_assert_eq!(capture.frames.len(), 1);
        prop_assert_eq!(capture.last_good(), Some(&s));
    }

    #[test]
    fn truncated_is_eof(s in snapshot_common::strategy::snapshot(), cut in any::<prop::sample::Index>()) {
        let bytes = encode_to_vec(&s).unwrap();
        let len = cut.index(bytes.len());
        let is_eof = matches!(decode(&bytes[..len]), Err(DecodeError::UnexpectedEof { .. }));
        prop_assert!(is_eof);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode(&bytes);
        let _ = decode_frames(&bytes);
        // With a valid header, so the fuzzing reaches the tables.
        let mut b = b"HSNP\x01\x00\x04".to_vec();
        b.extend_from_slice(&bytes);
        let _ = decode(&b);
    }
}

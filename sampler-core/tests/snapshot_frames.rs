//! COBS framing: the streaming `CobsFlavor` against the `cobs` crate, and reading raw
//! serial captures with garbage, torn and corrupt frames.

mod snapshot_common;

use postcard::ser_flavors::{ExtendFlavor, Flavor};
use proptest::prelude::*;
use sampler_core::decoded::Snapshot;
use sampler_core::snapshot::{decode_frames, encode_framed_to_vec, CobsFlavor, DecodeError};

fn cobs_stream(data: &[u8]) -> Vec<u8> {
    let mut f = CobsFlavor::new(ExtendFlavor::new(Vec::new()));
    for &b in data {
        f.try_push(b).unwrap();
    }
    f.finalize().unwrap()
}

fn cobs_reference(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; cobs::max_encoding_length(data.len()) + 2];
    let n = cobs::encode(data, &mut out);
    out.truncate(n);
    out.push(0);
    out
}

#[test]
fn cobs_block_boundaries_match_the_reference() {
    // Empty input is the one place the crate differs (it writes nothing); a snapshot is
    // never empty, and `01 00` is the textbook encoding of it.
    assert_eq!(cobs_stream(&[]), [1, 0]);
    for len in [1usize, 253, 254, 255, 508, 509, 1000] {
        for zero_at in [None, Some(0), Some(len / 2), Some(len.saturating_sub(1))] {
            let mut data: Vec<u8> = (0..len).map(|i| (i % 255 + 1) as u8).collect();
            if let Some(z) = zero_at.filter(|&z| z < len) {
                data[z] = 0;
            }
            assert_eq!(
                cobs_stream(&data),
                cobs_reference(&data),
                "len {len}, zero at {zero_at:?}"
            );
        }
    }
}

proptest! {
    #[test]
    fn cobs_matches_the_reference(data in proptest::collection::vec(
        prop_oneof![9 => 1u8..=255, 1 => Just(0u8)], 1..2000)) {
        let framed = cobs_stream(&data);
        prop_assert_eq!(&framed, &cobs_reference(&data));
        prop_assert!(!framed[..framed.len() - 1].contains(&0));
        prop_assert_eq!(*framed.last().unwrap(), 0);
    }
}

fn numbered(cycle: u64) -> Snapshot {
    Snapshot {
        cycle,
        ..snapshot_common::small()
    }
}

#[test]
fn capture_with_garbage_and_torn_frames_yields_the_last_good_snapshot() {
    let f1 = encode_framed_to_vec(&numbered(1)).unwrap();
    let f2 = encode_framed_to_vec(&numbered(2)).unwrap();
    let f3 = encode_framed_to_vec(&numbered(3)).unwrap();
    let f4 = encode_framed_to_vec(&numbered(4)).unwrap();
    let f5 = encode_framed_to_vec(&numbered(5)).unwrap();

    let mut cap = Vec::new();
    cap.extend_from_slice(b"boot: heap at 0x20000000\r\n"); // banner, no delimiter
    cap.extend_from_slice(&f1); // good (after the banner is split off)
    cap.extend_from_slice(&f2[..40]); // device reset mid-frame: torn, no delimiter
    cap.extend_from_slice(&f3); // good
    cap.extend_from_slice(&[0, 0]); // idle delimiters: ignored
    let mut bad = f4.clone();
    bad[14] ^= 0x04; // line noise in a counter's value (not producing a 0x00)
    assert_ne!(bad[14], 0);
    cap.extend_from_slice(&bad); // CRC error
    cap.extend_from_slice(&f5[..50]); // capture stopped mid-frame

    let c = decode_frames(&cap);
    let cycles: Vec<Option<u64>> = c
        .frames
        .iter()
        .map(|f| f.result.as_ref().ok().map(|s| s.cycle))
        .collect();
    assert_eq!(
        cycles,
        vec![None, Some(1), None, Some(3), None, None],
        "{c:#?}"
    );
    assert_eq!(c.last_good(), Some(&numbered(3)));
    assert_eq!(c.bad_count(), 4);

    // What each bad frame says, and where it is.
    let banner = &c.frames[0];
    assert_eq!((banner.offset, banner.len), (0, 26)); // the code byte of f1 follows it
    assert!(matches!(
        banner.result,
        Err(DecodeError::BadMagic { .. }) | Err(DecodeError::BadFrame { .. })
    ));
    assert_eq!(c.frames[1].offset, 26);
    assert!(c.frames[2].result.is_err());
    assert_eq!(c.frames[2].len, 40);
    assert!(
        matches!(c.frames[4].result, Err(DecodeError::BadCrc { .. })),
        "{:?}",
        c.frames[4].result
    );
    match &c.frames[5].result {
        Err(e @ DecodeError::BadFrame { .. }) => assert!(e.to_string().contains("torn"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn empty_and_delimiter_only_captures_have_no_frames() {
    assert!(decode_frames(&[]).frames.is_empty());
    assert!(decode_frames(&[0, 0, 0]).frames.is_empty());
    assert_eq!(decode_frames(&[0, 0, 0]).last_good(), None);
}

proptest! {
    /// Random garbage between good frames never hides them.
    #[test]
    fn good_frames_survive_garbage_between_them(
        junk in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..5)
    ) {
        let mut cap = Vec::new();
        for (i, j) in junk.iter().enumerate() {
            cap.extend_from_slice(j);
            cap.push(0); // the device always sends a frame's own delimiter; junk may not
            cap.extend_from_slice(&encode_framed_to_vec(&numbered(i as u64)).unwrap());
        }
        let c = decode_frames(&cap);
        let good: Vec<u64> = c.frames.iter().filter_map(|f| f.result.as_ref().ok()).map(|s| s.cycle).collect();
        prop_assert_eq!(good, (0..junk.len() as u64).collect::<Vec<_>>());
    }
}

/// A capture made of nothing but frame starts (no delimiter) must not take quadratic
/// time: each byte is decoded at most twice.
#[test]
fn capture_full_of_magics_stays_linear() {
    let unit = b"\x06HSNP\x01";
    let cap: Vec<u8> = unit
        .iter()
        .copied()
        .cycle()
        .take(unit.len() * 50_000)
        .collect();
    let c = decode_frames(&cap);
    assert_eq!(c.frames.len(), 50_000);
    assert_eq!(c.bad_count(), 50_000);
    assert!(c.frames.iter().all(|f| f.len == unit.len()));
}

/// Errors in a frame of a capture give offsets in the capture file, not in the frame:
/// a CRC stored wrong is reported at the encoded CRC's first byte, after a banner.
#[test]
fn frame_errors_are_at_capture_offsets() {
    let s = snapshot_common::small();
    let mut raw = s.encode().unwrap();
    let n = raw.len();
    raw[n - 4..].copy_from_slice(&0x1122_3344u32.to_le_bytes()); // no zero byte
    let banner = b"boot: hello\r\n\x00";
    let frame = cobs_reference(&raw);
    let mut cap = banner.to_vec();
    cap.extend_from_slice(&frame);
    let c = decode_frames(&cap);
    let f = c.frames.last().unwrap();
    assert_eq!(f.offset, banner.len());
    // The last block's data bytes are the decoded bytes verbatim: the CRC is the four
    // bytes before the delimiter.
    let crc_at = cap.len() - 1 - 4;
    assert_eq!(&cap[crc_at..crc_at + 4], &0x1122_3344u32.to_le_bytes());
    match &f.result {
        Err(DecodeError::BadCrc { offset, .. }) => assert_eq!(*offset, crc_at),
        other => panic!("{other:?}"),
    }
    // A frame cut after the magic: the end of its first block, in the capture.
    let mut cut = banner.to_vec();
    cut.extend_from_slice(&[0x05, b'H', b'S', b'N', b'P', 0x00]);
    let c = decode_frames(&cut);
    assert_eq!(
        c.frames.last().unwrap().result,
        Err(DecodeError::UnexpectedEof {
            offset: banner.len() + 5,
            needed: 2
        })
    );
    // A frame that is not COBS at all: the frame's offset in the capture.
    let mut bad = banner.to_vec();
    bad.extend_from_slice(&[0x09, b'a', 0x00]);
    let e = decode_frames(&bad)
        .frames
        .last()
        .unwrap()
        .result
        .clone()
        .unwrap_err();
    assert!(
        e.to_string().contains(&format!(
            "bad serial frame at byte {} of the capture",
            banner.len()
        )),
        "{e}"
    );
}

/// Hands out at most `step` bytes per read: frames and delimiter runs cut anywhere.
struct Trickle<'a> {
    data: &'a [u8],
    step: usize,
}

impl std::io::Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// The streaming reader finds exactly the frames the in-memory one finds (garbage,
/// torn, corrupt, idle delimiters, long zero runs), whatever the read sizes; a frame
/// over its limit is one bad frame naming the limit at its offset, and the frames
/// after it still decode.
#[test]
fn streamed_capture_yields_the_frames_of_the_whole_capture() {
    use sampler_core::snapshot::decode_frames_from;
    let cap = mixed_capture(77);
    let whole = decode_frames(&cap).frames;
    assert_eq!(whole.len(), 5);
    for step in [1, 3, 8, 9, 64, 1 << 20] {
        let mut streamed = Vec::new();
        let read =
            decode_frames_from(Trickle { data: &cap, step }, 4096, |f| streamed.push(f)).unwrap();
        assert_eq!(read, cap.len() as u64);
        assert_eq!(streamed, whole, "read {step} bytes at a time");
    }

    // 5000 non-zero bytes between two frames, over a 1000-byte limit per frame.
    let mut cap = encode_framed_to_vec(&numbered(1)).unwrap();
    let long_at = cap.len();
    cap.extend(std::iter::repeat_n(0x41u8, 5000));
    cap.push(0);
    cap.extend(encode_framed_to_vec(&numbered(2)).unwrap());
    let mut frames = Vec::new();
    decode_frames_from(
        Trickle {
            data: &cap,
            step: 700,
        },
        1000,
        |f| frames.push(f),
    )
    .unwrap();
    let cycles: Vec<Option<u64>> = frames
        .iter()
        .map(|f| f.result.as_ref().ok().map(|s| s.cycle))
        .collect();
    assert_eq!(cycles, [Some(1), None, Some(2)]);
    assert_eq!((frames[1].offset, frames[1].len), (long_at, 5000));
    let e = frames[1].result.as_ref().unwrap_err().to_string();
    assert!(
        e.contains(&format!("at byte {long_at}")) && e.contains("over the limit of 1000 bytes"),
        "{e}"
    );
}

/// Bytes pushed in chunks of any size give the frames a read of the whole capture finds,
/// with the detail asked for (the browser pushes a file's slices, decoded for their
/// totals); each good frame then decodes in full from a window of the capture holding
/// it, its errors at their offsets in the capture.
#[test]
fn pushed_chunks_yield_the_frames_of_the_whole_capture_and_frames_decode_from_a_window() {
    use sampler_core::snapshot::CaptureStream;
    use sampler_core::snapshot::{decode_frame, decode_frame_in, decode_frames_with, Detail};
    let cap = mixed_capture(1500);
    let mut whole = Vec::new();
    decode_frames_with(&cap, Detail::Totals, |f| whole.push(f));
    assert_eq!(whole.len(), 5);
    for step in [1, 2, 7, 512, 513, 4096, 1 << 20] {
        let mut stream = CaptureStream::new(4096, Detail::Totals);
        let mut pushed = Vec::new();
        for chunk in cap.chunks(step) {
            assert_eq!(stream.position(), pushed_len(&cap, chunk) as u64);
            stream.push(chunk, |f| pushed.push(f));
        }
        assert_eq!(stream.finish(|f| pushed.push(f)), cap.len() as u64);
        assert_eq!(pushed, whole, "pushed {step} bytes at a time");
    }
    // A good frame from a window of the capture = from the whole capture.
    let good = whole.iter().find(|f| f.result.is_ok()).unwrap();
    let base = good.offset - 5;
    let window = &cap[base..good.offset + good.len + 3];
    assert_eq!(
        decode_frame_in(window, base, good.offset, good.len).unwrap(),
        decode_frame(&cap, good.offset, good.len).unwrap()
    );
    // A window that does not hold the frame says which bytes it holds.
    let e = decode_frame_in(&window[..10], base, good.offset, good.len)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&format!("the bytes read are {base}..{}", base + 10)),
        "{e}"
    );
    // The corrupt frame's error is at its offset in the capture, from a window too.
    let corrupt = &whole[2];
    let from = corrupt.offset - 1;
    let in_window = decode_frame_in(&cap[from..], from, corrupt.offset, corrupt.len)
        .unwrap_err()
        .to_string();
    let in_whole = decode_frame(&cap, corrupt.offset, corrupt.len)
        .unwrap_err()
        .to_string();
    assert_eq!(in_window, in_whole);
}

/// A boot banner, a good frame, `zeros` idle delimiters, a corrupt frame, a good frame
/// and a torn one: every case a capture reader meets.
fn mixed_capture(zeros: usize) -> Vec<u8> {
    let mut cap = b"boot banner\r\n".to_vec();
    cap.extend(encode_framed_to_vec(&numbered(1)).unwrap());
    cap.extend(vec![0u8; zeros]);
    let mut bad = encode_framed_to_vec(&numbered(2)).unwrap();
    bad[13] ^= 0x04;
    cap.extend(&bad);
    cap.extend(encode_framed_to_vec(&numbered(3)).unwrap());
    let torn = encode_framed_to_vec(&numbered(4)).unwrap();
    cap.extend(&torn[..30]);
    cap
}

/// Where `chunk` (a slice of `cap`) starts in `cap`.
fn pushed_len(cap: &[u8], chunk: &[u8]) -> usize {
    chunk.as_ptr() as usize - cap.as_ptr() as usize
}

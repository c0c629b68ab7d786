//! The decoder's memory is bounded by a small multiple of its input, whatever the
//! counts claim: measured with a counting global allocator on the inputs that make it
//! allocate the most per input byte (empty stacks, one-byte frames, minimal buckets).
#![cfg(feature = "std")]

mod counting_alloc;

use sampler_core::decoded::{Bucket, Snapshot, Stack};
use sampler_core::snapshot::{
    decode, decode_frames, encode_framed_to_vec, encode_to_vec, shared_frames_cap, VERSION_SHARED,
};

/// Peak bytes allocated while `f` runs, above what was live before.
fn peak_during(f: impl FnOnce()) -> usize {
    counting_alloc::peak_during(f).0
}

/// Bytes of heap per input byte the decoder may use (a decoded `Stack` is 32 bytes for
/// a 2-byte encoding, plus its id in the duplicate check: about 19).
const PER_BYTE: usize = 24;

fn check(what: &str, bytes: &[u8], peak: usize) {
    eprintln!(
        "{what}: {} bytes in, peak {peak} bytes of heap",
        bytes.len()
    );
    assert!(
        peak <= PER_BYTE * bytes.len() + 4096,
        "{what}: {peak} bytes of heap for {} bytes of input",
        bytes.len()
    );
}

#[test]
fn decoder_memory_is_bounded_by_its_input() {
    let n = 20_000u32;
    let worst: Vec<(&str, Snapshot)> = vec![
        (
            "empty stacks",
            Snapshot {
                version: VERSION_SHARED,
                word_size: 8,
                stacks: (0..n).map(|id| Stack { id, frames: vec![] }).collect(),
                ..Default::default()
            },
        ),
        (
            "one-byte frames",
            Snapshot {
                version: VERSION_SHARED,
                word_size: 8,
                stacks: vec![Stack {
                    id: 0,
                    frames: vec![0; n as usize * 4],
                }],
                ..Default::default()
            },
        ),
        (
            "minimal buckets",
            Snapshot {
                version: VERSION_SHARED,
                word_size: 8,
                stacks: vec![Stack {
                    id: 0,
                    frames: vec![],
                }],
                buckets: vec![Bucket::default(); n as usize],
                ..Default::default()
            },
        ),
    ];
    for (what, s) in worst {
        let bytes = encode_to_vec(&s).unwrap();
        let mut decoded = None;
        let peak = peak_during(|| decoded = Some(decode(&bytes).unwrap()));
        assert_eq!(decoded.as_ref(), Some(&s));
        drop(decoded);
        check(what, &bytes, peak);

        let framed = encode_framed_to_vec(&s).unwrap();
        let peak = peak_during(|| assert_eq!(decode_frames(&framed).last_good(), Some(&s)));
        check(&format!("{what} (framed)"), &framed, peak);

        // Cut right after the counts: the counts alone must not buy an allocation.
        let head = &bytes[..32];
        let peak = peak_during(|| assert!(decode(head).is_err()));
        check(&format!("{what} (first 32 bytes)"), head, peak);
    }

    // Version 4's shared frames (§2.3): stacks that each name all 64 frames of the one
    // before cost 5 bytes, and expand to 512 bytes of frames. Within the cap, the
    // decoder needs its 24 bytes per input byte plus 8 per frame the cap allows.
    let deep: Vec<u64> = (0..64).collect();
    let s = Snapshot {
        version: VERSION_SHARED,
        word_size: 8,
        stacks: (0..n)
            .map(|id| Stack {
                id,
                frames: deep.clone(),
            })
            .collect(),
        ..Default::default()
    };
    let bytes = encode_to_vec(&s).unwrap();
    let mut decoded = None;
    let peak = peak_during(|| decoded = Some(decode(&bytes).unwrap()));
    assert_eq!(decoded.as_ref(), Some(&s));
    drop(decoded);
    let expanded = n as usize * deep.len();
    eprintln!(
        "shared stacks: {} bytes in, {expanded} frames, peak {peak} bytes of heap",
        bytes.len()
    );
    // The encoder shared frames until the cap, then wrote stacks whole.
    assert!(
        bytes.len() < expanded,
        "{} bytes for {expanded} frames",
        bytes.len()
    );
    assert!(
        peak as u64 <= (PER_BYTE * bytes.len()) as u64 + 8 * shared_frames_cap(bytes.len()) + 4096,
        "shared stacks: {peak} bytes of heap for {} bytes of input",
        bytes.len()
    );

    // A capture of such snapshots keeps every frame's: the cap is per byte, so the
    // capture's memory is bounded by its size the same way.
    let framed = encode_framed_to_vec(&s).unwrap();
    let capture: Vec<u8> = framed
        .iter()
        .copied()
        .cycle()
        .take(framed.len() * 4)
        .collect();
    let peak = peak_during(|| assert_eq!(decode_frames(&capture).frames.len(), 4));
    eprintln!(
        "capture of 4: {} bytes in, peak {peak} bytes of heap",
        capture.len()
    );
    assert!(
        peak as u64
            <= (PER_BYTE * capture.len()) as u64 + 8 * shared_frames_cap(capture.len()) + 4096,
        "capture: {peak} bytes of heap for {} bytes of input",
        capture.len()
    );

    // The densest hostile input: 2-byte stacks that all claim id 0. Rejected (after the
    // CRC), but only once parsed, so it is the worst case for memory per input byte.
    let s = Snapshot {
        version: VERSION_SHARED,
        word_size: 8,
        stacks: vec![
            Stack {
                id: 0,
                frames: vec![]
            };
            n as usize
        ],
        ..Default::default()
    };
    let bytes = encode_to_vec(&s).unwrap();
    let peak = peak_during(|| assert!(decode(&bytes).is_err()));
    check("duplicate 2-byte stacks", &bytes, peak);
}

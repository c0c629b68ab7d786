//! A serial capture is read a frame at a time: only the last good snapshot is kept,
//! so reading a capture of many snapshots needs the memory of one, not of all (a
//! 10,000-frame capture of the QEMU firmware, 9.3 MB, took 78 MB of RSS in `heapsnap
//! inspect` when every frame was decoded and held; 13 MB now). Measured with a
//! counting global allocator on captures of 4 and of 400 copies of one snapshot.

use std::path::PathBuf;

use heapsnap_profile::import::{self, Input};
use sampler_core::snapshot;

#[path = "../../sampler-core/tests/counting_alloc/mod.rs"]
mod counting_alloc;

/// Peak heap above what was live before, while reading `capture`; and its frame count.
fn peak_reading(capture: &[u8]) -> (usize, usize) {
    counting_alloc::peak_during(|| match import::guess(capture) {
        Ok(Input::Snapshot { frames, .. }) => frames,
        Ok(_) => panic!("a capture read as something else"),
        Err(e) => panic!("{e}"),
    })
}

#[test]
fn reading_a_capture_holds_one_snapshot_not_all_of_them() {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/host.snap");
    let snap = snapshot::decode(&std::fs::read(p).unwrap()).unwrap();
    let frame = snapshot::encode_framed_to_vec(&snap).unwrap();
    let capture = |n: usize| -> Vec<u8> {
        frame
            .iter()
            .copied()
            .cycle()
            .take(frame.len() * n)
            .collect()
    };
    let (few, many) = (capture(4), capture(400));
    let (peak_few, n_few) = peak_reading(&few);
    let (peak_many, n_many) = peak_reading(&many);
    eprintln!(
        "{n_few} frames: peak {peak_few} B of heap; {n_many} frames ({} B): peak {peak_many} B",
        many.len()
    );
    assert_eq!((n_few, n_many), (4, 400));
    // 100 times the frames, about the same memory (each decoded snapshot is a few
    // times its frame's bytes: holding all 400 would be well over the input's size).
    assert!(
        peak_many <= peak_few * 2 + 64 * 1024,
        "{peak_many} B of heap for 400 frames against {peak_few} B for 4"
    );
    assert!(
        peak_many < many.len(),
        "{peak_many} B for a {} B capture",
        many.len()
    );
}

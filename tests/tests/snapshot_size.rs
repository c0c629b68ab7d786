//! What a snapshot costs on the wire against the pprof it stands for (issue 19, "Snapshot
//! size"): for the QEMU firmware's snapshots and the host example's, the snapshot's
//! bytes against the unsymbolized pprof protobuf of the same data (`heapsnap convert
//! --no-local`: addresses only, as the device could have sent it), raw and gzipped, with
//! bytes per frame and per bucket. The goal: a snapshot at most half the raw pprof, for
//! every one (the firmware's ~0.25×, the host example's ~0.32× since format version 4
//! writes the frames a stack shares with an earlier one as a reference: 0.52× before).
//!
//! Prints the table (`cargo test -p e2e --test snapshot_size -- --nocapture`); needs
//! `cargo xtask firmware` (`HEAPSNAP_FIRMWARE_OUT`), as `cargo xtask test` provides.

use e2e::{firmware_output, firmware_snapshots, heapsnap, host_workload_snapshot, run};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The goal: snapshot bytes / raw pprof bytes. The host example's snapshot needs version
/// 4's shared frames to meet it: its stacks are 10–40 64-bit return addresses (zigzag
/// deltas of 4–6 bytes between a binary's and libc's code) that share most of their
/// frames (the runtime's start, `main`), where pprof writes each location once.
const GOAL: f64 = 0.5;

struct Size {
    name: String,
    snapshot: usize,
    pprof_raw: usize,
    pprof_gz: usize,
    frames: usize,
    buckets: usize,
}

/// The sizes of `snap` and of its unsymbolized pprof.
fn measure(snap: &Path, dir: &Path) -> Size {
    let bytes = std::fs::read(snap).unwrap();
    let decoded = sampler_core::snapshot::decode(&bytes)
        .unwrap_or_else(|e| panic!("{}: {e}", snap.display()));
    let name = snap.file_name().unwrap().to_string_lossy().into_owned();
    let pb = dir.join(format!("{name}.pb.gz"));
    run(Command::new(heapsnap())
        .args(["convert", "--no-local"])
        .arg(snap)
        .arg("-o")
        .arg(&pb));
    let gz = std::fs::read(&pb).unwrap();
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut raw)
        .unwrap();
    Size {
        name,
        snapshot: bytes.len(),
        pprof_raw: raw.len(),
        pprof_gz: gz.len(),
        frames: decoded.stacks.iter().map(|s| s.frames.len()).sum(),
        buckets: decoded.buckets.len(),
    }
}

#[test]
fn snapshots_are_at_most_half_the_raw_pprof_of_the_same_data() {
    let out = firmware_output(
        "HEAPSNAP_FIRMWARE_OUT",
        "heapsnap-firmware.elf",
        "cargo xtask firmware",
        "snapshot_size",
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("snapshot_size");
    std::fs::create_dir_all(&dir).unwrap();
    let mut snaps = firmware_snapshots(&out);
    assert!(
        !snaps.is_empty(),
        "no firmware snapshot in {}",
        out.display()
    );
    snaps.push(host_workload_snapshot(&dir.join("host.snap"), &[]));
    let sizes: Vec<Size> = snaps.iter().map(|s| measure(s, &dir)).collect();

    println!(
        "{:<16} {:>9} {:>10} {:>9} {:>8} {:>8} {:>7} {:>8} {:>7} {:>8}",
        "snapshot",
        "bytes",
        "pprof raw",
        "pprof gz",
        "/raw",
        "/gz",
        "frames",
        "B/frame",
        "buckets",
        "B/bucket"
    );
    for s in &sizes {
        println!(
            "{:<16} {:>9} {:>10} {:>9} {:>7.2}× {:>7.2}× {:>7} {:>8.1} {:>7} {:>8.1}",
            s.name,
            s.snapshot,
            s.pprof_raw,
            s.pprof_gz,
            s.snapshot as f64 / s.pprof_raw as f64,
            s.snapshot as f64 / s.pprof_gz as f64,
            s.frames,
            s.snapshot as f64 / s.frames.max(1) as f64,
            s.buckets,
            s.snapshot as f64 / s.buckets.max(1) as f64,
        );
    }
    for s in &sizes {
        assert!(
            s.frames > 0 && s.buckets > 0,
            "{}: an empty snapshot",
            s.name
        );
        let ratio = s.snapshot as f64 / s.pprof_raw as f64;
        assert!(
            ratio <= GOAL,
            "{}: {} bytes, {ratio:.2}× the {} bytes of its raw pprof (at most {GOAL}×)",
            s.name,
            s.snapshot,
            s.pprof_raw
        );
    }
}

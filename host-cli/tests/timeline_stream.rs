//! `heapsnap timeline` on captures far larger than memory: streamed frame by frame
//! under a 512 MiB address-space limit (`ulimit -v`, as `hostile.rs` does), a 3 GiB
//! sparse capture reads in full, and a frame over the per-frame limit is a bad frame
//! that names the limit and its offset while the frames after it still count.

use sampler_core::decoded::{Bucket, Snapshot, Stack};
use sampler_core::snapshot::{encode_framed_to_vec, Timestamp};
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::Output;

mod common;
use common::heapsnap;

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("heapsnap-timeline-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A snapshot of `in_use` bytes at `cycle`, stamped `ticks` of a 1 MHz clock.
fn frame(cycle: u64, in_use: u64, ticks: u64) -> Vec<u8> {
    let mut b = Bucket {
        stack_id: 1,
        size: 16,
        ..Bucket::default()
    };
    b.active.allocs = in_use / 16;
    b.active.alloc_bytes = in_use;
    let s = Snapshot {
        version: sampler_core::snapshot::VERSION_SHARED,
        word_size: 4,
        sample_rate: 1,
        cycle,
        stacks: vec![Stack {
            id: 1,
            frames: vec![0x1000, 0x2000],
        }],
        buckets: vec![b],
        timestamp: Some(Timestamp {
            ticks,
            ticks_per_second: 1_000_000,
        }),
        ..Snapshot::default()
    };
    encode_framed_to_vec(&s).unwrap()
}

/// CSV rows after the header, up to the blank line before the growth table.
fn csv_rows(out: &Output) -> Vec<Vec<String>> {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split(',').map(str::to_owned).collect())
        .collect()
}

#[test]
fn a_3_gib_sparse_capture_streams_in_bounded_memory() {
    const HOLE: u64 = 3 << 30;
    let path = dir().join("sparse.cobs");
    let mut f = std::fs::File::create(&path).unwrap();
    let first = frame(1, 160, 2_000_000);
    f.write_all(&first).unwrap();
    // 3 GiB of zeros (delimiters: an idle line), a hole on disk.
    f.seek(SeekFrom::Current(HOLE as i64)).unwrap();
    let last_at = first.len() as u64 + HOLE;
    f.write_all(&frame(2, 480, 5_500_000)).unwrap();
    drop(f);
    let p = path.to_str().unwrap();
    let out = heapsnap(&["timeline", "--format", "csv", p]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {err}", out.status);
    let rows = csv_rows(&out);
    assert_eq!(rows.len(), 2, "{rows:?}");
    // offset, cycle, in-use bytes, the timestamp's ticks and rate.
    let pick = |r: &Vec<String>| {
        (
            r[2].clone(),
            r[3].clone(),
            r[4].clone(),
            r[8].clone(),
            r[9].clone(),
        )
    };
    assert_eq!(
        pick(&rows[0]),
        (
            "0".into(),
            "1".into(),
            "160".into(),
            "2000000".into(),
            "1000000".into()
        )
    );
    assert_eq!(
        pick(&rows[1]),
        (
            last_at.to_string(),
            "2".into(),
            "480".into(),
            "5500000".into(),
            "1000000".into()
        )
    );
    // The table shows the device time in seconds.
    let out = heapsnap(&["timeline", p]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains(" time_s ") && text.contains("5.500000"),
        "{text}"
    );
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_frame_over_the_limit_is_a_bad_frame_naming_limit_and_offset() {
    let path = dir().join("long.cobs");
    let mut cap = frame(1, 160, 1);
    let long_at = cap.len();
    // 8 MiB without a delimiter: over a 1 MiB per-frame limit.
    cap.extend(std::iter::repeat_n(0x41u8, 8 << 20));
    cap.push(0);
    cap.extend(frame(2, 320, 2));
    std::fs::write(&path, &cap).unwrap();
    let p = path.to_str().unwrap();
    let out = heapsnap(&["timeline", "--limit", "input-size=1M", p]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("3 frame(s) in the capture, 2 good, 1 bad"),
        "{text}"
    );
    let bad = text
        .lines()
        .find(|l| l.contains(&format!("offset {long_at} ")))
        .unwrap_or_else(|| panic!("no bad frame at {long_at}:\n{text}"));
    assert!(
        bad.contains(&format!("({} bytes)", 8 << 20))
            && bad.contains("over the limit of 1048576 bytes per frame"),
        "{bad}"
    );
    let _ = std::fs::remove_file(&path);
}

//! Generators of hostile inputs (issue 12): each builds, in memory and in well under
//! a second, a file that once made heapsnap use gigabytes, read forever or misreport.
//! Nothing large is committed: the files are made at test time.

use flate2::write::GzEncoder;
use sampler_core::decoded::{Bucket, Snapshot, Stack};
use std::io::Write;

/// A gzipped pprof of nothing but empty entries of one repeated top-level field
/// (`tag` 2 = samples, 4 = locations, 6 = strings): two bytes each, a whole struct each
/// once decoded. `members` gzip members of 256 KiB each (as `cat` of gzip files; pprof
/// and heapsnap read multi-member gzip), so it is quick to make: 1020 members inflate
/// to 255 MiB from about 280 KB, the file.
pub fn empty_entries_gz(tag: u8, members: usize) -> Vec<u8> {
    let unit = [tag << 3 | 2, 0];
    let raw: Vec<u8> = unit.iter().copied().cycle().take(1 << 18).collect();
    let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(&raw).unwrap();
    let member = enc.finish().unwrap();
    member.repeat(members)
}

/// A snapshot with one stack of `frames` frames (each 1 byte: delta +1) in one bucket.
pub fn deep_snapshot(frames: usize) -> Vec<u8> {
    snapshot(frames, 1)
}

/// A snapshot of `buckets` buckets (distinct sizes) all on one stack of `frames`
/// frames: a few bytes per bucket, `frames` location ids per sample once converted.
pub fn shared_stack_snapshot(frames: usize, buckets: usize) -> Vec<u8> {
    snapshot(frames, buckets)
}

fn snapshot(frames: usize, buckets: usize) -> Vec<u8> {
    let s = Snapshot {
        version: 1,
        word_size: 8,
        sample_rate: 1,
        stacks: vec![Stack {
            id: 1,
            frames: (0..frames as u64).map(|i| 0x1000 + i).collect(),
        }],
        buckets: (0..buckets as u64)
            .map(|i| Bucket {
                stack_id: 1,
                size: 16 + i,
                active: sampler_core::Cycle {
                    allocs: 1,
                    alloc_bytes: 16 + i,
                    ..Default::default()
                },
            })
            .collect(),
        ..Default::default()
    };
    s.encode().unwrap()
}

/// A small good snapshot (one stack of three frames).
pub fn good_snapshot() -> Vec<u8> {
    deep_snapshot(3)
}

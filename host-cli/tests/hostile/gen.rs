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
    gzip(&raw).repeat(members)
}

/// [`empty_entries_gz`] as one gzip member inflating to `len` bytes, as browsers'
/// `DecompressionStream` reads only the first member of a multi-member file (64 MiB
/// take about a second to make).
pub fn empty_entries_gz_one_member(tag: u8, len: usize) -> Vec<u8> {
    let unit = [tag << 3 | 2, 0];
    let raw: Vec<u8> = unit.iter().copied().cycle().take(1 << 20).collect();
    let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::default());
    for _ in 0..len >> 20 {
        enc.write_all(&raw).unwrap();
    }
    enc.finish().unwrap()
}

/// A gzip (one member) whose inflated bytes are one string-table entry declared `len`
/// bytes long, then `pieces` × 256 KiB of its zero bytes: a bomb of a single field,
/// which no entry count catches (only the inflated-size cap does).
pub fn huge_field_gz(len: u64, pieces: usize) -> Vec<u8> {
    let mut head = vec![6 << 3 | 2];
    let mut n = len;
    while n >= 0x80 {
        head.push(n as u8 | 0x80);
        n >>= 7;
    }
    head.push(n as u8);
    let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&head).unwrap();
    for _ in 0..pieces {
        enc.write_all(&[0; 1 << 18]).unwrap();
    }
    enc.finish().unwrap()
}

/// A gzipped pprof with one sample whose stack is `frames` deep (one function calling
/// itself): 1M frames are 1 MB of location ids, a few KB gzipped.
pub fn deep_pprof_gz(frames: usize) -> Vec<u8> {
    use heapsnap_profile::profile::{Function, Line, Location, Profile, Sample, ValueType};
    use prost::Message;
    let p = Profile {
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        sample: vec![Sample {
            location_id: vec![1; frames],
            value: vec![4096],
            ..Default::default()
        }],
        location: vec![Location {
            id: 1,
            address: 0x1000,
            line: vec![Line {
                function_id: 1,
                line: 7,
                ..Default::default()
            }],
            ..Default::default()
        }],
        function: vec![Function {
            id: 1,
            name: 3,
            filename: 4,
            ..Default::default()
        }],
        string_table: ["", "inuse_space", "bytes", "recurse", "deep.c"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    };
    gzip(&p.encode_to_vec())
}

fn gzip(raw: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(raw).unwrap();
    enc.finish().unwrap()
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

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
            location_id: vec![1; frames].into(),
            value: vec![4096].into(),
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

/// A large, valid heap profile (raw pprof protobuf), shaped as the viewer benchmark's
/// (tests/browser/gen_profile.mjs): `samples` samples over `stacks` distinct stacks of
/// 18 to 46 frames that share prefixes, a `bytes` label each, four sample types.
/// 550k samples over 50k stacks are 52 MB, the profile that `diff -o` took 1.57 GB
/// for. `seed` makes another profile of the same program (same tables).
pub fn big_profile(samples: usize, stacks: usize, seed: u64) -> Vec<u8> {
    use heapsnap_profile::profile::{
        Function, Label, Line, Location, Mapping, Profile, Sample, ValueType,
    };
    use prost::Message;
    const FUNCTIONS: u64 = 6_000;
    const LOCATIONS: u64 = 24_000;
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut rand = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) % n
    };
    let mut strings: Vec<String> = ["", "alloc_objects", "count", "alloc_space", "bytes"]
        .map(String::from)
        .to_vec();
    strings.extend(
        [
            "inuse_objects",
            "inuse_space",
            "space",
            "/usr/bin/bench-app",
        ]
        .map(String::from),
    );
    let mix = |a: u64, b: u64| (a ^ (b + 0x9e37_79b9)).wrapping_mul(0x85eb_ca6b) >> 7;
    // The tables depend on the layout only, so two seeds make profiles of one program.
    let function = (1..=FUNCTIONS)
        .map(|f| {
            strings.push(format!("app/pkg{}.Func{f}", f % 97));
            strings.push(format!("/src/app/pkg{}/file{}.go", f % 97, f % 13));
            let name = strings.len() as i64 - 2;
            Function {
                id: f,
                name,
                system_name: name,
                filename: name + 1,
                start_line: 10,
            }
        })
        .collect();
    let location = (1..=LOCATIONS)
        .map(|l| {
            let line = |f: u64, n: i64| Line {
                function_id: 1 + f % FUNCTIONS,
                line: n,
                column: 0,
            };
            let mut lines = Vec::new();
            if l % 7 == 0 {
                lines.push(line(mix(l, 9), 10 + (l % 300) as i64));
            }
            lines.push(line(mix(l, 7), 10 + (l % 500) as i64));
            Location {
                id: l,
                mapping_id: 1,
                address: 0x40_0000 + l * 16,
                line: lines,
                is_folded: false,
            }
        })
        .collect();
    let mut stack_list = Vec::with_capacity(stacks);
    let mut seen = std::collections::HashSet::new();
    while stack_list.len() < stacks {
        let depth = 18 + rand(29);
        let mut h = 17;
        let mut st: Vec<u64> = (0..depth)
            .map(|d| {
                let fan = match d {
                    0..3 => 2,
                    3..8 => 4,
                    _ => 12,
                };
                h = mix(h, rand(fan) + d * 1000);
                1 + h % LOCATIONS
            })
            .collect();
        if seen.insert(st.clone()) {
            st.reverse(); // leaf first
            stack_list.push(st);
        }
    }
    let sample = (0..samples)
        .map(|i| {
            let s = if i < stacks {
                i
            } else {
                let r = rand(1 << 20) as f64 / (1 << 20) as f64;
                (stacks as f64 * r * r) as usize
            };
            let size = [16, 32, 48, 64, 128, 256, 512, 1024, 4096, 65536][rand(10) as usize];
            let n = 1 + rand(40) as i64;
            let live = rand(n as u64) as i64;
            Sample {
                location_id: stack_list[s].clone().into(),
                value: vec![n, n * size, live, live * size].into(),
                label: vec![Label {
                    key: 4,
                    str: 0,
                    num: size,
                    num_unit: 0,
                }]
                .into(),
            }
        })
        .collect();
    let vt = |t: i64, u: i64| ValueType { r#type: t, unit: u };
    Profile {
        sample_type: vec![vt(1, 2), vt(3, 4), vt(5, 2), vt(6, 4)],
        sample,
        mapping: vec![Mapping {
            id: 1,
            memory_start: 0x40_0000,
            memory_limit: 0x400_0000,
            filename: 8,
            has_functions: true,
            has_filenames: true,
            has_line_numbers: true,
            has_inline_frames: true,
            ..Default::default()
        }],
        location,
        function,
        string_table: strings,
        period_type: Some(vt(7, 4)),
        period: 524_288,
        ..Default::default()
    }
    .encode_to_vec()
}

/// A large valid snapshot: `stacks` distinct stacks of 18 to 46 frames over 24,000
/// return addresses, and `buckets` buckets (object sizes) on each: what a big
/// program's heap looks like to heapsnap, for `convert` under a memory limit.
pub fn big_snapshot(stacks: usize, buckets: usize) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) % n
    };
    let s = Snapshot {
        version: 1,
        word_size: 8,
        sample_rate: 1,
        stacks: (1..=stacks as u32)
            .map(|id| Stack {
                id,
                frames: (0..18 + rand(29))
                    .map(|_| 0x40_0000 + 16 * rand(24_000))
                    .collect(),
            })
            .collect(),
        buckets: (1..=stacks as u32)
            .flat_map(|stack_id| (0..buckets as u64).map(move |b| (stack_id, b)))
            .map(|(stack_id, b)| Bucket {
                stack_id,
                size: 16 << b,
                active: sampler_core::Cycle {
                    allocs: 1 + b,
                    alloc_bytes: (1 + b) * (16 << b),
                    ..Default::default()
                },
            })
            .collect(),
        ..Default::default()
    };
    s.encode().unwrap()
}

/// Names that carry what a terminal acts on (issue 12, item 3).
pub const EVIL: [&str; 5] = [
    "title\x1b]0;pwned\x07",
    "two\nlines",
    "cr\rtab\tend",
    "del\x7f csi\u{9b}31m",
    "clear\x1b[2J\x1b[H",
];
/// [`EVIL`] as the CLI prints them (and the viewer shows them).
pub const SHOWN: [&str; 5] = [
    "title\\x1b]0;pwned\\x07",
    "two\\nlines",
    "cr\\rtab\\tend",
    "del\\x7f csi\\u{9b}31m",
    "clear\\x1b[2J\\x1b[H",
];

/// A profile whose leaf functions are named `names` (one sample each, values
/// `values`), one sample type `ty`/`unit`, and `comments`.
pub fn profile_with(
    ty: &str,
    names: &[&str],
    values: &[i64],
    comments: &[&str],
) -> heapsnap_profile::profile::Profile {
    use heapsnap_profile::profile::{Builder, Line};
    let mut b = Builder::new();
    b.sample_type(ty, "bytes");
    for c in comments {
        b.comment(c);
    }
    for (n, &v) in names.iter().zip(values) {
        let f = b.function(n, "", "", 0);
        let l = b.location(
            0,
            0x1000,
            vec![Line {
                function_id: f,
                line: 1,
                column: 0,
            }],
            false,
        );
        b.sample(vec![l], vec![v], vec![]);
    }
    b.finish()
}

/// A name with bidirectional controls ("Trojan Source": shown reordered), and how the
/// CLI prints it (and the viewer shows it).
pub const BIDI: (&str, &str) = (
    "main\u{202e}cod\u{2066}x\u{2069}\u{200f}",
    "main\\u{202e}cod\\u{2066}x\\u{2069}\\u{200f}",
);

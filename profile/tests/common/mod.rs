//! Fixtures shared by the profile library's and the CLI's integration tests.
#![allow(dead_code)]

use sampler_core::decoded::{Bucket, Mapping, Snapshot, Stack};
use sampler_core::{Counters, Cycle};
use std::path::PathBuf;

/// A firmware-like snapshot: 32-bit, no mappings (link addresses), Thumb return
/// addresses, every drop counter non-zero, buckets sharing stacks with several sizes.
pub fn firmware_snapshot() -> Snapshot {
    let c = |allocs, frees, size: u64| Cycle {
        allocs,
        frees,
        alloc_bytes: allocs * size,
        free_bytes: frees * size,
    };
    Snapshot {
        objects: None,
        timestamp: None,
        count_type: None,
        version: 1,
        word_size: 4,
        sample_rate: 128,
        cycle: 7,
        counters: Counters {
            samples: 40,
            stack_table_full: 3,
            bucket_table_full: 312,
            live_map_full: 2,
            reentrant: 1,
            unknown_frees: 4,
            truncated_stacks: 5,
            ..Counters::ZERO
        },
        mappings: vec![],
        stacks: vec![
            Stack {
                id: 1,
                frames: vec![0x0800_1235, 0x0800_2001, 0x0800_0101],
            },
            Stack {
                id: 2,
                frames: vec![0x0800_1301, 0x0800_2001, 0x0800_0101],
            },
            Stack {
                id: 3,
                frames: vec![0x0800_4441],
            },
        ],
        buckets: vec![
            Bucket {
                stack_id: 1,
                size: 64,
                active: c(10, 2, 64),
            },
            Bucket {
                stack_id: 1,
                size: 256,
                active: c(3, 0, 256),
            },
            Bucket {
                stack_id: 2,
                size: 16,
                active: c(20, 20, 16),
            },
            Bucket {
                stack_id: 3,
                size: 1024,
                active: c(1, 0, 1024),
            },
            Bucket {
                stack_id: 3,
                size: 8,
                active: c(0, 0, 8),
            },
        ],
    }
}

/// A host-like snapshot: 64-bit PIE with two mappings and build ids, rate 512 KiB.
pub fn host_snapshot() -> Snapshot {
    let c = |allocs, frees, size: u64| Cycle {
        allocs,
        frees,
        alloc_bytes: allocs * size,
        free_bytes: frees * size,
    };
    Snapshot {
        objects: None,
        timestamp: None,
        count_type: None,
        version: 1,
        word_size: 8,
        sample_rate: 512 * 1024,
        cycle: 3,
        counters: Counters {
            samples: 9,
            ..Default::default()
        },
        mappings: vec![
            Mapping {
                start: 0x5555_5555_4000,
                end: 0x5555_5556_0000,
                offset: 0x1000,
                name: "/nonexistent/bin/app".into(),
                build_id: vec![0xab, 0xcd, 0xef, 0x01],
            },
            Mapping {
                start: 0x7fff_f7dd_0000,
                end: 0x7fff_f7f0_0000,
                offset: 0x28000,
                name: "/nonexistent/lib/libc.so.6".into(),
                build_id: vec![0x12, 0x34],
            },
        ],
        stacks: vec![
            Stack {
                id: 7,
                frames: vec![0x7fff_f7dd_1000, 0x5555_5555_4123, 0x5555_5555_5abc],
            },
            Stack {
                id: 9,
                frames: vec![0x5555_5555_4200, 0x5555_5555_5abc, 0x1234],
            },
        ],
        buckets: vec![
            Bucket {
                stack_id: 7,
                size: 1 << 20,
                active: c(4, 1, 1 << 20),
            },
            Bucket {
                stack_id: 9,
                size: 48,
                active: c(5, 3, 48),
            },
        ],
    }
}

/// `CARGO_TARGET_TMPDIR/<name>`, created.
pub fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

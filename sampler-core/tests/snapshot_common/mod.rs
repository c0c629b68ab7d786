//! Fixtures shared by the snapshot tests (not a test crate of its own).
#![allow(dead_code)]

use sampler_core::decoded::{Bucket, Mapping, Snapshot, Stack};
use sampler_core::{Counters, Cycle};

/// `s` as read from a snapshot of `version`: what it decodes to from bytes of that
/// version (the decoder says which version it read; every other field is the same).
pub fn as_version(version: u16, s: Snapshot) -> Snapshot {
    Snapshot { version, ..s }
}

/// [`small`] as an encoder before the heap totals wrote it (`tests/golden/small-7.bin`,
/// version 1): the 7 version-1 counters only, so no heap totals (`Counters::heap` is
/// `None`).
pub fn small_seven_counters() -> Snapshot {
    let mut s = small_twelve_counters();
    s.counters.set_heap(None);
    s
}

/// [`small`] as an encoder before `elf_machine` wrote it (`tests/golden/small-12.bin`,
/// version 1): 12 counters, so the architecture is unknown (0).
pub fn small_twelve_counters() -> Snapshot {
    let mut s = small();
    s.version = 1;
    s.counters.elf_machine = 0;
    s
}

/// [`small`] with its object table: four live objects, in the live map's (hash) order,
/// so the address deltas go both ways (`tests/golden/small-objects.bin` as version 2
/// wrote it, with `version` 2).
pub fn small_with_objects() -> Snapshot {
    use sampler_core::decoded::LiveObject;
    let o = |addr, stack_id, size| LiveObject {
        addr,
        stack_id,
        size,
    };
    let mut s = small();
    s.objects = Some(vec![
        o(0x2000_0100, 0, 16),
        o(0x2000_0040, 0, 16),
        o(0x2000_0200, 0, 64),
        o(0x2000_0120, 0, 16),
    ]);
    s
}

/// The worked example stamped with a device clock (§2.6): 1.5 s on a 12.5 MHz clock
/// (`tests/golden/small-timestamp.bin` as version 3 wrote it, with `version` 3).
#[allow(dead_code)]
pub fn small_with_timestamp() -> Snapshot {
    let mut s = small();
    s.timestamp = Some(sampler_core::snapshot::Timestamp {
        ticks: 18_750_000,
        ticks_per_second: 12_500_000,
    });
    s
}

/// The small snapshot whose bytes `tests/golden/small-v4.bin` pins and whose hex dump
/// `docs/snapshot-format.md` walks through: 32-bit firmware, one mapping, two stacks
/// (the second shares a caller with the first, so version 4 names it), three buckets,
/// exact heap totals, written by Arm code (`elf_machine` 40). `tests/golden/small.bin`
/// is the same snapshot as version 1 wrote it (with `version` 1).
pub fn small() -> Snapshot {
    Snapshot {
        objects: None,
        timestamp: None,
        count_type: None,
        version: sampler_core::snapshot::VERSION_SHARED,
        word_size: 4,
        sample_rate: 512 * 1024,
        cycle: 3,
        counters: Counters {
            samples: 42,
            stack_table_full: 1,
            bucket_table_full: 0,
            live_map_full: 2,
            reentrant: 0,
            unknown_frees: 3,
            truncated_stacks: 0,
            heap_totals: 1,
            heap_allocs: 57,
            heap_frees: 50,
            heap_in_use_bytes: 1200,
            heap_peak_bytes: 3100,
            elf_machine: 40,
        },
        mappings: vec![Mapping {
            start: 0x0800_0000,
            end: 0x0804_0000,
            offset: 0,
            name: "fw.elf".into(),
            build_id: vec![0xde, 0xad, 0xbe, 0xef],
        }],
        stacks: vec![
            Stack {
                id: 0,
                frames: vec![0x0800_1234, 0x0800_1100, 0x0800_0400],
            },
            Stack {
                id: 1,
                frames: vec![0x0800_2000, 0x0800_0400],
            },
        ],
        buckets: vec![
            Bucket {
                stack_id: 0,
                size: 16,
                active: Cycle {
                    allocs: 3,
                    frees: 1,
                    alloc_bytes: 48,
                    free_bytes: 16,
                },
            },
            Bucket {
                stack_id: 0,
                size: 64,
                active: Cycle {
                    allocs: 1,
                    frees: 0,
                    alloc_bytes: 64,
                    free_bytes: 0,
                },
            },
            Bucket {
                stack_id: 1,
                size: 1024,
                active: Cycle {
                    allocs: 2,
                    frees: 2,
                    alloc_bytes: 2048,
                    free_bytes: 2048,
                },
            },
        ],
    }
}

pub mod strategy;

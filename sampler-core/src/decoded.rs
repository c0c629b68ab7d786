//! Owned, decoded snapshot (feature `std`): what host programs read.
//!
//! The contract between sampler-core and host-cli. Frames are stored as captured:
//! return addresses, innermost (the allocator's caller) first; the host subtracts one
//! before symbolizing caller frames.

use crate::{Counters, Cycle};

/// A decoded snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Format version the bytes were written with.
    pub version: u16,
    /// Pointer width of the device in bytes (4 or 8).
    pub word_size: u8,
    /// Mean sampling interval in bytes (1 = every allocation, 0 = off).
    pub sample_rate: u64,
    /// Record cycle the published `active` records belong to.
    pub cycle: u64,
    /// Everything dropped or skipped.
    pub counters: Counters,
    /// Memory mappings (may be empty on firmware: addresses are link addresses).
    pub mappings: Vec<Mapping>,
    /// Interned stacks; `Bucket::stack_id` indexes this by `Stack::id`.
    pub stacks: Vec<Stack>,
    /// One bucket per (stack, object size).
    pub buckets: Vec<Bucket>,
}

/// A memory mapping of the profiled program (host/PIE programs, or a kernel's modules).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// File offset that `start` maps.
    pub offset: u64,
    /// Path or name of the mapped object.
    pub name: String,
    /// GNU build id, empty if unknown.
    pub build_id: Vec<u8>,
}

/// An interned call stack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stack {
    pub id: u32,
    /// Return addresses, innermost first.
    pub frames: Vec<u64>,
}

/// Allocation record of one (stack, size) pair: the published `active` cycle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bucket {
    pub stack_id: u32,
    /// Object size in bytes.
    pub size: u64,
    pub active: Cycle,
}

//! Owned, decoded snapshot (feature `std`): what host programs read.
//!
//! The contract between sampler-core and the host side (heapsnap-profile). Frames are stored as captured:
//! return addresses, innermost (the allocator's caller) first; the host subtracts one
//! before symbolizing caller frames.

use crate::Counters;

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
    /// The object table (§2.5): every live sampled object, when the device was asked
    /// to send it; `None` in a snapshot without it.
    pub objects: Option<Vec<LiveObject>>,
    /// The device's clock at the snapshot (§2.6), when the integrator supplied
    /// one; `None` otherwise.
    pub timestamp: Option<crate::snapshot::Timestamp>,
    /// The sample type of a snapshot that a host importer read from another tool's
    /// count profile whose type its `version` cannot name (a Go program's own
    /// `pprof.NewProfile("example.com/conns")` at `debug=1`). Never on the wire: `None`
    /// for every decoded heapsnap snapshot.
    pub count_type: Option<String>,
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

/// Allocation record of one (stack, size) pair: the published `active` cycle. One
/// type with the encoder's view of a bucket.
pub use crate::snapshot::Bucket;

/// One live sampled object of the object table: the same type the encoder writes.
pub use crate::snapshot::LiveObject;

impl Snapshot {
    /// Encode with the one snapshot encoder (same bytes a device would write).
    pub fn encode(&self) -> Result<Vec<u8>, crate::snapshot::EncodeError> {
        crate::snapshot::encode_to_vec(self)
    }
}

/// The host's owned snapshot is a source too, so tests, `heapsnap` and fuzzers write
/// snapshots through the same code path as the device.
impl crate::snapshot::SnapshotSource for Snapshot {
    fn header(&self) -> crate::snapshot::Header {
        crate::snapshot::Header {
            word_size: self.word_size,
            sample_rate: self.sample_rate,
            cycle: self.cycle,
            counters: self.counters,
        }
    }

    fn mappings(&self) -> impl ExactSizeIterator<Item = crate::snapshot::MappingRef<'_>> {
        self.mappings.iter().map(|m| crate::snapshot::MappingRef {
            start: m.start,
            end: m.end,
            offset: m.offset,
            name: &m.name,
            build_id: &m.build_id,
        })
    }

    fn stacks(&self) -> impl ExactSizeIterator<Item = crate::snapshot::StackRef<'_>> {
        self.stacks.iter().map(|s| crate::snapshot::StackRef {
            id: s.id,
            frames: crate::snapshot::Frames::U64(&s.frames),
        })
    }

    fn buckets(&self) -> impl ExactSizeIterator<Item = Bucket> {
        self.buckets.iter().copied()
    }

    fn objects(&self) -> Option<impl ExactSizeIterator<Item = LiveObject>> {
        self.objects.as_ref().map(|o| o.iter().copied())
    }

    fn timestamp(&self) -> Option<crate::snapshot::Timestamp> {
        self.timestamp
    }
}

//! The profiler as a [`SnapshotSource`]: its tables go straight into the one snapshot
//! encoder, no copy.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

use core::fmt;

use postcard::ser_flavors::{Flavor, Slice};

use crate::snapshot::{
    self, Bucket, EncodeError, Frames, Header, LiveObject, MappingRef, SnapshotSource, StackRef,
    Timestamp,
};
use crate::tables::Tables;
use crate::{Counters, Profiler};

/// The profiler's tables borrowed under its lock, plus the mappings to publish.
#[derive(Clone, Copy)]
pub struct ProfilerView<'a, const S: usize, const F: usize, const B: usize, const L: usize> {
    tables: &'a Tables<S, F, B, L>,
    counters: Counters,
    rate: usize,
    mappings: &'a [MappingRef<'a>],
    /// Write the object table (§2.5 of the spec).
    objects: bool,
    /// The integrator's clock reading to write (§2.6 of the spec).
    timestamp: Option<Timestamp>,
}

impl<const S: usize, const F: usize, const B: usize, const L: usize> ProfilerView<'_, S, F, B, L> {
    /// The same view with the object table: every live sampled object's address, size
    /// and stack, what `heapsnap leaks` needs next to a RAM image. Costs up to
    /// `L` × (address + stack id + size) bytes on the wire (§2.5 of the spec).
    pub fn with_objects(self) -> Self {
        ProfilerView {
            objects: true,
            ..self
        }
    }

    /// The same view stamped with the integrator's clock reading `at` (§2.6 of the
    /// spec): what a host orders a series by and shows in
    /// seconds. Read the clock just before, e.g. inside the closure of
    /// [`Profiler::with_view`](crate::Profiler::with_view).
    pub fn at(self, at: Timestamp) -> Self {
        ProfilerView {
            timestamp: Some(at),
            ..self
        }
    }
}

impl<const S: usize, const F: usize, const B: usize, const L: usize> SnapshotSource
    for ProfilerView<'_, S, F, B, L>
{
    fn header(&self) -> Header {
        Header {
            word_size: core::mem::size_of::<usize>() as u8,
            sample_rate: self.rate as u64,
            cycle: self.tables.cycle,
            counters: self.counters,
        }
    }

    fn mappings(&self) -> impl ExactSizeIterator<Item = MappingRef<'_>> {
        self.mappings.iter().copied()
    }

    fn stacks(&self) -> impl ExactSizeIterator<Item = StackRef<'_>> {
        self.tables.stacks().map(|(id, frames)| StackRef {
            id: u32::from(id),
            frames: Frames::Usize(frames),
        })
    }

    fn buckets(&self) -> impl ExactSizeIterator<Item = Bucket> {
        self.tables.buckets().map(|b| Bucket {
            stack_id: u32::from(b.stack),
            size: b.size as u64,
            active: b.record.active.to_cycle(b.size),
        })
    }

    fn objects(&self) -> Option<impl ExactSizeIterator<Item = LiveObject>> {
        self.objects.then(|| {
            self.tables.live().map(|(addr, stack, size)| LiveObject {
                addr: addr as u64,
                stack_id: u32::from(stack),
                size: size as u64,
            })
        })
    }

    fn timestamp(&self) -> Option<Timestamp> {
        self.timestamp
    }
}

/// Why a snapshot was not written.
#[cfg_attr(all(feature = "defmt", target_os = "none"), derive(defmt::Format))]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SnapshotError {
    /// Called from inside the profiler (e.g. an allocation hook or interrupt while the
    /// profiler was recording); counted in `Counters::reentrant`.
    Reentered,
    /// The encoder or the sink failed.
    Encode(EncodeError),
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Reentered => {
                f.write_str("snapshot requested from inside the profiler (re-entrant call)")
            }
            SnapshotError::Encode(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for SnapshotError {}

impl<
        const S: usize,
        const F: usize,
        const B: usize,
        const L: usize,
        const D: usize,
        const TOTALS: bool,
    > Profiler<S, F, B, L, D, TOTALS>
{
    /// Run `f` on a [`SnapshotSource`] view of the tables, with the lock held (the
    /// tables stay still while `f` encodes them). On a device interrupts are off for
    /// that time: write to RAM and send afterwards if that matters.
    pub fn with_view<R>(
        &self,
        mappings: &[MappingRef<'_>],
        f: impl FnOnce(&ProfilerView<'_, S, F, B, L>) -> R,
    ) -> Result<R, SnapshotError> {
        let reentrant = self.counters().reentrant;
        self.with_locked(|l| {
            let mut counters = l.counters;
            counters.reentrant = reentrant;
            // Read with the tables still (on a device: interrupts off), so the totals
            // and the buckets describe the same moment.
            counters.set_heap(self.heap());
            counters.elf_machine = crate::counters::ELF_MACHINE;
            f(&ProfilerView {
                tables: &l.tables,
                counters,
                rate: l.rate,
                mappings,
                objects: false,
                timestamp: None,
            })
        })
        .ok_or(SnapshotError::Reentered)
    }

    /// Most bytes a snapshot of these capacities can take, without mappings (firmware
    /// at link addresses): a `static mut [u8; MAX_SNAPSHOT_LEN]` never overflows.
    pub const MAX_SNAPSHOT_LEN: usize = Self::max_snapshot_len(&[]);

    /// [`MAX_SNAPSHOT_LEN`](Self::MAX_SNAPSHOT_LEN) for a COBS-framed snapshot.
    pub const MAX_SNAPSHOT_LEN_FRAMED: usize = snapshot::max_framed_len(Self::MAX_SNAPSHOT_LEN);

    /// Most bytes a snapshot of these capacities can take with these `mappings`.
    pub const fn max_snapshot_len(mappings: &[MappingRef<'_>]) -> usize {
        Self::max_len(mappings, 0)
    }

    /// [`MAX_SNAPSHOT_LEN`](Self::MAX_SNAPSHOT_LEN) with the object table
    /// ([`write_snapshot_with_objects`](Self::write_snapshot_with_objects)).
    pub const MAX_SNAPSHOT_LEN_WITH_OBJECTS: usize = Self::max_len(&[], L);

    const fn max_len(mappings: &[MappingRef<'_>], objects: usize) -> usize {
        snapshot::max_encoded_len(
            snapshot::Shape {
                word_size: core::mem::size_of::<usize>(),
                stacks: S,
                frames: F,
                depth: D,
                buckets: B,
                objects,
            },
            mappings,
        )
    }

    /// As [`write_snapshot`](Self::write_snapshot), with the object table (§2.5 of
    /// the spec): what a leak check (`heapsnap leaks`) reads next to a RAM
    /// image taken at the same moment. At sample rate 1 it lists every live object.
    pub fn write_snapshot_with_objects<Fl: Flavor>(
        &self,
        mappings: &[MappingRef<'_>],
        sink: Fl,
    ) -> Result<Fl::Output, SnapshotError> {
        self.with_view(mappings, |v| snapshot::encode(&v.with_objects(), sink))?
            .map_err(SnapshotError::Encode)
    }

    /// Write a snapshot into any postcard [`Flavor`] (a UART, semihosting, a flash
    /// page), streaming: no intermediate copy of the tables.
    pub fn write_snapshot<Fl: Flavor>(
        &self,
        mappings: &[MappingRef<'_>],
        sink: Fl,
    ) -> Result<Fl::Output, SnapshotError> {
        self.with_view(mappings, |v| snapshot::encode(v, sink))?
            .map_err(SnapshotError::Encode)
    }

    /// As [`write_snapshot`](Self::write_snapshot), COBS-framed (ends with `0x00`) for
    /// serial links.
    pub fn write_snapshot_framed<Fl: Flavor>(
        &self,
        mappings: &[MappingRef<'_>],
        sink: Fl,
    ) -> Result<Fl::Output, SnapshotError> {
        self.with_view(mappings, |v| snapshot::encode_framed(v, sink))?
            .map_err(SnapshotError::Encode)
    }

    /// Write a snapshot into `buf`; returns the written prefix.
    pub fn write_snapshot_to_slice<'b>(
        &self,
        mappings: &[MappingRef<'_>],
        buf: &'b mut [u8],
    ) -> Result<&'b mut [u8], SnapshotError> {
        self.write_snapshot(mappings, Slice::new(buf))
    }

    /// A snapshot as owned bytes (hosts). The buffer is allocated *outside* the lock
    /// (an allocation inside would be the profiler re-entering itself), growing and
    /// retrying if the tables outgrew it.
    #[cfg(feature = "std")]
    pub fn snapshot_vec(
        &self,
        mappings: &[MappingRef<'_>],
        framed: bool,
    ) -> Result<Vec<u8>, SnapshotError> {
        let mut cap = 64 * 1024;
        loop {
            let mut buf = vec![0u8; cap];
            let r = if framed {
                self.write_snapshot_framed(mappings, Slice::new(&mut buf))
                    .map(|o| o.len())
            } else {
                self.write_snapshot_to_slice(mappings, &mut buf)
                    .map(|o| o.len())
            };
            match r {
                Ok(n) => {
                    buf.truncate(n);
                    return Ok(buf);
                }
                Err(SnapshotError::Encode(EncodeError::SinkFull { needed })) if cap < needed => {
                    // The tables may grow between the sizing pass and the next try.
                    cap = needed + needed / 8;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

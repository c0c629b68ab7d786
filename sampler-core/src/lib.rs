//! sampler-core: a heap sampler for code with no operating system under it.
//!
//! `#![no_std]`, no `alloc`: everything lives in fixed-capacity tables chosen at
//! compile time, because this code runs *inside* the allocator.
//!
//! * [`ProfiledAlloc`] wraps any `GlobalAlloc`; [`Profiler::record_alloc`] /
//!   [`Profiler::record_free`] serve pools and arenas.
//! * Sampling is a Poisson process over bytes ([`sampler`]), stacks come from a
//!   [`StackSource`] ([`stack`]), tables are fixed-capacity ([`tables`]) with Go's
//!   record cycles ([`tables::MemRecord`]).
//! * Snapshots: [`Profiler::write_snapshot`] and friends, format in [`snapshot`];
//!   [`SnapshotMailbox`] holds the latest one in RAM for a debugger (`heapsnap pull`).
#![cfg_attr(not(any(test, feature = "decode")), no_std)]

/// One record cycle's tallies for a bucket (Go's `memRecordCycle`).
///
/// Shared by the device tables, the snapshot format and the host decoder: one data
/// model for "what happened to a bucket".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cycle {
    /// Sampled allocations.
    pub allocs: u64,
    /// Sampled frees credited to this bucket.
    pub frees: u64,
    /// Bytes of the sampled allocations.
    pub alloc_bytes: u64,
    /// Bytes of the sampled frees.
    pub free_bytes: u64,
}

#[cfg(feature = "decode")]
pub mod decoded;
pub mod snapshot;

mod alloc;
/// Cortex-M on cortex-m-rt: the bounded stack source and the semihosting sink.
#[cfg(all(feature = "cortex-m", target_arch = "arm", target_os = "none"))]
pub mod cortex_m;
mod counters;
/// Build id and `.text` mapping, shared by the runtime integrations.
#[cfg(any(
    all(feature = "cortex-m", target_arch = "arm", target_os = "none"),
    all(feature = "riscv-rt", target_arch = "riscv32", target_os = "none"),
    all(feature = "riscv-rt", target_arch = "riscv64", target_os = "none")
))]
mod firmware_id;
pub mod lock_stats;
pub mod mailbox;
#[cfg(all(feature = "std", target_os = "linux"))]
pub mod mappings;
#[cfg_attr(
    not(any(
        all(feature = "cortex-m", target_arch = "arm", target_os = "none"),
        all(feature = "riscv-rt", target_arch = "riscv32", target_os = "none"),
        all(feature = "riscv-rt", target_arch = "riscv64", target_os = "none")
    )),
    allow(dead_code)
)]
mod note;
mod profiler;
/// RISC-V on riscv-rt: the bounded stack source and the semihosting sink.
#[cfg(all(
    feature = "riscv-rt",
    any(target_arch = "riscv32", target_arch = "riscv64"),
    target_os = "none"
))]
pub mod riscv_rt;
pub mod sampler;
/// Semihosting file output, shared by the runtime integrations.
#[cfg(any(
    all(feature = "cortex-m", target_arch = "arm", target_os = "none"),
    all(feature = "riscv-rt", target_arch = "riscv32", target_os = "none"),
    all(feature = "riscv-rt", target_arch = "riscv64", target_os = "none")
))]
mod semihosting;
pub mod stack;
pub mod tables;
mod view;

pub use alloc::ProfiledAlloc;
pub use counters::{CounterInfo, Counters, HeapTotals, ELF_MACHINE};
pub use mailbox::{MailboxError, SnapshotMailbox};
pub use profiler::{Profiler, Recorded};
#[cfg(all(feature = "std", unix))]
pub use stack::HostStack;
pub use stack::{Captured, FramePointerStack, NoStack, StackRange, StackSource};
pub use view::{ProfilerView, SnapshotError};

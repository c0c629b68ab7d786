//! Stack capture: where a sampled allocation came from.
//!
//! The profiler asks a [`StackSource`] for return addresses, innermost first. Kernels
//! and RTOSes usually have an unwinder already, and pools often know their caller, so
//! the source is a trait; this crate ships a bounded frame-pointer walker
//! ([`FramePointerStack`]) for x86_64, aarch64, ARM Thumb and RISC-V, a slice source
//! (`&[usize]`: a stack the caller already has), [`NoStack`], and on hosts with `std`
//! a DWARF unwinder ([`HostStack`]) that needs no frame pointers.
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

mod fp;
#[cfg(all(feature = "std", unix))]
mod unwind;

pub use fp::{walk, FrameLayout, FramePointerStack, StackRange};
#[cfg(all(feature = "std", unix))]
pub use unwind::HostStack;

/// What a capture produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Captured {
    /// Frames written to the front of the buffer.
    pub len: usize,
    /// The stack had more frames than the buffer holds (counted in
    /// `Counters::truncated_stacks`).
    pub truncated: bool,
}

/// Something that can tell the profiler the current call stack.
///
/// Must not allocate through the profiled allocator (if it does, the nested allocation
/// is detected and counted as re-entrant, not recorded) and must not panic.
pub trait StackSource {
    /// Write return addresses into `out`, innermost first.
    ///
    /// `boundary` is the address of a local variable in the profiler's never-inlined
    /// recording function: a walker skips every frame at or below it, so the first
    /// frame written is that function's return address (into the caller of
    /// `record_alloc`, or into the allocator shim when it was not inlined), never the
    /// profiler's internals. Sources that already know the caller's stack ignore it.
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured;
}

/// A stack the caller already has (e.g. from a kernel unwinder), innermost first.
impl StackSource for [usize] {
    fn capture(&self, _boundary: usize, out: &mut [usize]) -> Captured {
        let len = self.len().min(out.len());
        for (o, f) in out.iter_mut().zip(self.iter()) {
            *o = *f;
        }
        Captured {
            len,
            truncated: self.len() > out.len(),
        }
    }
}

impl<const N: usize> StackSource for [usize; N] {
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        self.as_slice().capture(boundary, out)
    }
}

impl<S: StackSource + ?Sized> StackSource for &S {
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        (**self).capture(boundary, out)
    }
}

/// Records every sample with an empty stack: sizes and counts only, the cheapest
/// possible profiler (all samples land in one bucket per size).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoStack;

impl StackSource for NoStack {
    fn capture(&self, _boundary: usize, _out: &mut [usize]) -> Captured {
        Captured::default()
    }
}

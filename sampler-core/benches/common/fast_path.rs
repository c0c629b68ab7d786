//! The fast path's loop body and allocators, shared by the criterion bench
//! (`benches/sampler.rs`, which times it) and `examples/fast_path.rs` (which counts its
//! instructions under callgrind), so both measure the same code.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;

use sampler_core::{HostStack, ProfiledAlloc};

/// The default rate (512 KiB) and a host-sized profiler.
pub static PROFILED: ProfiledAlloc<System, HostStack, 1024, 16384, 2048, 4096> =
    ProfiledAlloc::new(System, HostStack, 512 * 1024, 1);

/// The same with the exact heap totals counted (`TOTALS = true`).
pub static PROFILED_TOTALS: ProfiledAlloc<System, HostStack, 1024, 16384, 2048, 4096, 32, true> =
    ProfiledAlloc::new(System, HostStack, 512 * 1024, 1);

/// 16 bytes, word aligned: a small object.
pub const L16: Layout = match Layout::from_size_align(16, 8) {
    Ok(l) => l,
    Err(_) => panic!("16/8 is a valid layout"),
};

/// One 16-byte allocation and its free through `a`.
#[inline(always)]
pub fn churn<A: GlobalAlloc>(a: &A) {
    // SAFETY: a valid layout; the block is freed with it right away.
    unsafe {
        let p = a.alloc(L16);
        black_box(p);
        a.dealloc(p, L16);
    }
}

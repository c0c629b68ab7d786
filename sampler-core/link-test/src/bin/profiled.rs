//! A minimal firmware using sampler-core the way an integrator would: `ProfiledAlloc`
//! as the global allocator (frame-pointer stacks bounded by the stack region),
//! `advance_cycle` each main-loop turn, and a snapshot published into the RAM mailbox a
//! debugger reads (`heapsnap pull`).
//! Its flash size minus `baseline`'s is the profiler's flash cost.
#![no_std]
#![no_main]

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout};
use core::hint::black_box;

use cortex_m_rt::entry;
use sampler_core::{ProfiledAlloc, SnapshotMailbox};
use sampler_link_test::{Bump, McuStack};

#[global_allocator]
static HEAP: ProfiledAlloc<Bump, McuStack, 64, 1024, 128, 128, 16> =
    ProfiledAlloc::off(Bump::new(), McuStack);

/// Where a debugger reads the latest snapshot (`heapsnap pull`), the way out the guide
/// recommends. (Each snapshot sink type is its own copy of the encoder, ~3 KiB: a
/// firmware that also wrote into a slice would pay twice, so this one does not.)
#[no_mangle]
static HEAPSNAP_MAILBOX: SnapshotMailbox<2048> = SnapshotMailbox::new();

#[entry]
fn main() -> ! {
    HEAP.profiler().start(4096, 0x1234);
    let layout = black_box(Layout::new::<[u32; 6]>());
    let mut n = 0u32;
    loop {
        unsafe {
            let p = HEAP.alloc(layout);
            let q = alloc::alloc::alloc_zeroed(layout);
            let r = alloc::alloc::realloc(q, layout, 96);
            black_box((p, r));
            HEAP.dealloc(p, layout);
            alloc::alloc::dealloc(r, Layout::from_size_align_unchecked(96, 4));
        }
        n = n.wrapping_add(1);
        if n % 64 == 0 {
            HEAP.profiler().advance_cycle();
            let written = HEAPSNAP_MAILBOX
                .publish(HEAP.profiler(), &[])
                .unwrap_or(0);
            black_box(written);
        }
        #[cfg(feature = "inject-panic")]
        {
            // A reachable panic: this build must fail to link.
            let v: Option<u32> = black_box(None);
            black_box(v.unwrap());
        }
    }
}

//! The same program as `profiled` without sampler-core: the flash baseline.
#![no_std]
#![no_main]

extern crate alloc;

use core::alloc::{GlobalAlloc, Layout};
use core::hint::black_box;

use cortex_m_rt::entry;
use sampler_link_test::Bump;

#[global_allocator]
static HEAP: Bump = Bump::new();

#[entry]
fn main() -> ! {
    let layout = black_box(Layout::new::<[u32; 6]>());
    loop {
        unsafe {
            let p = HEAP.alloc(layout);
            let q = alloc::alloc::alloc_zeroed(layout);
            let r = alloc::alloc::realloc(q, layout, 96);
            black_box((p, r));
            HEAP.dealloc(p, layout);
            alloc::alloc::dealloc(r, Layout::from_size_align_unchecked(96, 4));
        }
    }
}

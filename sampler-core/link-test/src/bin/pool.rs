//! The explicit API for a pool that is not a `GlobalAlloc`: `record_alloc` /
//! `record_free` with a caller-walked and a caller-supplied stack, counters, exact heap
//! totals, cycles, a COBS-framed snapshot and one with the object table (version 2).
//! Linked only to prove no panic is reachable.
#![no_std]
#![no_main]

use core::hint::black_box;

use cortex_m_rt::entry;
use postcard::ser_flavors::Slice;
use sampler_core::Profiler;
use sampler_link_test::McuStack;

// With the exact heap totals on, so their path is linked (and proven panic-free) too.
static POOL: Profiler<16, 128, 16, 16, 16, true> = Profiler::off();

static mut FRAME: [u8; 1024] = [0; 1024];

#[entry]
fn main() -> ! {
    POOL.start(64, 7);
    let mut n = 0usize;
    loop {
        let slot = black_box(0x2000_8000usize + (n % 16) * 32) as *const u8;
        POOL.record_alloc(slot, 32, &McuStack);
        POOL.record_alloc(
            slot.wrapping_add(16),
            16,
            &[0x0800_0101usize, 0x0800_0203][..],
        );
        POOL.record_free(black_box(slot), 32);
        black_box(POOL.counters());
        black_box(POOL.heap());
        n = n.wrapping_add(1);
        if n % 32 == 0 {
            POOL.advance_cycle();
            // SAFETY: the only reference to the buffer, in the only thread.
            let buf = unsafe { &mut *core::ptr::addr_of_mut!(FRAME) };
            black_box(
                POOL.write_snapshot_framed(&[], Slice::new(buf))
                    .map(|s| s.len())
                    .unwrap_or(0),
            );
            black_box(
                POOL.write_snapshot_with_objects(&[], Slice::new(buf))
                    .map(|s| s.len())
                    .unwrap_or(0),
            );
        }
    }
}

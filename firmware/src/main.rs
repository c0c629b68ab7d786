//! heapsnap demo firmware: a message router on a Cortex-M3 (QEMU `lm3s6965evb`) whose
//! heap is profiled by sampler-core.
//!
//! The global allocator is `embedded-alloc`'s linked-list heap wrapped in
//! `sampler_core::ProfiledAlloc`. The main loop handles one message per turn, closes a
//! record cycle with `advance_cycle()`, and every `DUMP_EVERY` messages writes a snapshot
//! to the host over semihosting (`snap-000.bin`, `snap-001.bin`, … in QEMU's working
//! directory). Then it exits QEMU with a status code.
#![no_std]
#![no_main]

extern crate alloc;

mod host;
mod router;

// Links the single-core `critical-section` implementation (interrupts off).
use cortex_m as _;

use core::mem::MaybeUninit;
use cortex_m_rt::{entry, exception, ExceptionFrame};
use cortex_m_semihosting::{debug, hprintln};
use embedded_alloc::LlffHeap;

/// Heap bytes (of the LM3S6965's 64 KiB SRAM).
const HEAP_BYTES: usize = 32 * 1024;
/// Messages the router handles before exiting.
const MESSAGES: u32 = 480;
/// A snapshot every this many messages (so the run writes MESSAGES / DUMP_EVERY files).
const DUMP_EVERY: u32 = 96;
/// Seed of the message source.
const SEED: u32 = 0x2545_f491;

static mut HEAP_MEM: [MaybeUninit<u8>; HEAP_BYTES] = [MaybeUninit::uninit(); HEAP_BYTES];

#[global_allocator]
static HEAP: LlffHeap = LlffHeap::empty();

#[entry]
fn main() -> ! {
    // SAFETY: called once, before any allocation; HEAP_MEM is used by nothing else.
    unsafe { HEAP.init(core::ptr::addr_of_mut!(HEAP_MEM) as usize, HEAP_BYTES) }

    let mut router = router::Router::new(SEED);
    let mut written = 0u32;
    for n in 1..=MESSAGES {
        router.handle_message();
        if n % DUMP_EVERY == 0 {
            match dump_snapshot(written) {
                Ok(len) => hprintln!(
                    "snapshot {} after {} messages: {} bytes, heap used {}",
                    written,
                    n,
                    len,
                    HEAP.used()
                ),
                Err(e) => {
                    hprintln!("snapshot {} failed: {:?}", written, e);
                    exit(false);
                }
            }
            written += 1;
        }
    }
    hprintln!(
        "done: {} messages, {} forwarded, {} remembered (leaked), checksum {:08x}, heap used {} of {}",
        MESSAGES,
        router.forwarded,
        router.leaked(),
        router.checksum,
        HEAP.used(),
        HEAP_BYTES
    );
    exit(true)
}

#[derive(Debug)]
enum DumpError {
    Host(host::HostError),
}

fn dump_snapshot(n: u32) -> Result<usize, DumpError> {
    let name = host::snapshot_name(n);
    let mut f = host::HostFile::create(&name).map_err(DumpError::Host)?;
    let bytes = b"placeholder";
    f.write_all(bytes).map_err(DumpError::Host)?;
    f.close().map_err(DumpError::Host)?;
    Ok(bytes.len())
}

/// Leave QEMU with a status code (semihosting SYS_EXIT).
fn exit(ok: bool) -> ! {
    debug::exit(if ok { debug::EXIT_SUCCESS } else { debug::EXIT_FAILURE });
    #[allow(clippy::empty_loop)]
    loop {}
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("firmware panicked: {}", info);
    exit(false)
}

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    hprintln!("hard fault: {:?}", frame);
    exit(false)
}

//! heapsnap RISC-V firmware: a sensor log on a riscv32imac hart (QEMU `virt`, started
//! with `-bios none`) whose heap is profiled by sampler-core's `riscv-rt` integration.
//!
//! The global allocator is `embedded-alloc`'s linked-list heap wrapped in
//! `sampler_core::ProfiledAlloc`, capturing stacks with the frame-pointer walker bounded
//! by riscv-rt's stack symbols (`sampler_core::riscv_rt::RtStack`; built with
//! `-C force-frame-pointers=yes`, see `.cargo/config.toml`). Each turn of the main loop
//! polls the sensor through a fixed call chain, `main` → `SensorLog::poll` →
//! `read_sample` → `decode_reading`, and the log keeps every decoded reading: that is
//! the leak the end-to-end test expects `heapsnap` to name, with the whole chain, down
//! to riscv-rt's `_start_rust`. Halfway and at the end it streams a snapshot to the
//! host over RISC-V semihosting (`snap-000.bin`, `snap-001.bin` in QEMU's working
//! directory), then exits QEMU with a status code.
#![no_std]
#![no_main]

extern crate alloc;

// Links the single-hart `critical-section` implementation (interrupts off).
use riscv as _;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::mem::MaybeUninit;
use embedded_alloc::LlffHeap;
use riscv_semihosting::{debug, hprintln};
use sampler_core::riscv_rt::{firmware_mapping, RtStack, SemihostingFile, SemihostingSink};
use sampler_core::ProfiledAlloc;

/// Heap bytes.
const HEAP_BYTES: usize = 32 * 1024;
/// Sensor polls before exiting (a snapshot after half of them and at the end).
const POLLS: u32 = 200;
/// Mean sampling interval in bytes: each poll allocates ~170 bytes, so the run takes
/// some 500 samples.
const SAMPLE_RATE: usize = 64;
/// Seed of the sampler's random intervals (fixed: the run is reproducible).
const SAMPLER_SEED: u64 = 0x5eed;
/// Profiler capacities: stacks, frames in the arena, buckets, live sampled objects,
/// frames per stack (as in the guide).
const STACKS: usize = 64;
const FRAMES: usize = 512;
const BUCKETS: usize = 256;
const LIVE: usize = 256;
const DEPTH: usize = 16;
/// Exact heap totals next to the samples.
const TOTALS: bool = true;

static mut HEAP_MEM: [MaybeUninit<u8>; HEAP_BYTES] = [MaybeUninit::uninit(); HEAP_BYTES];

/// Profiled from the first allocation on; `start()` at boot sets rate and seed.
#[global_allocator]
static HEAP: ProfiledAlloc<LlffHeap, RtStack, STACKS, FRAMES, BUCKETS, LIVE, DEPTH, TOTALS> =
    ProfiledAlloc::off(LlffHeap::empty(), RtStack);

/// The readings kept so far (never trimmed: the leak).
struct SensorLog {
    readings: Vec<Box<[u8]>>,
    state: u32,
}

impl SensorLog {
    /// One poll: read a raw sample, keep its decoded reading.
    #[inline(never)]
    fn poll(&mut self) {
        self.state = self
            .state
            .wrapping_mul(1_664_525)
            .wrapping_add(1_013_904_223);
        let reading = read_sample(self.state);
        self.readings.push(reading);
    }
}

/// Read a raw frame into a scratch buffer (freed on return) and decode it.
#[inline(never)]
fn read_sample(seed: u32) -> Box<[u8]> {
    let mut raw: Vec<u8> = Vec::with_capacity(96);
    raw.extend((0..96u32).map(|i| (seed >> (i % 24)) as u8));
    decode_reading(&raw)
}

/// The decoded reading: 48 bytes, kept by the log.
#[inline(never)]
fn decode_reading(raw: &[u8]) -> Box<[u8]> {
    let mut out = Vec::with_capacity(48);
    out.extend(raw.chunks(2).map(|p| p.iter().fold(0u8, |a, b| a ^ b)));
    out.into_boxed_slice()
}

#[riscv_rt::entry]
fn main() -> ! {
    // SAFETY: called once, before any allocation; HEAP_MEM is used by nothing else.
    unsafe {
        HEAP.inner()
            .init(core::ptr::addr_of_mut!(HEAP_MEM) as usize, HEAP_BYTES)
    }
    let profiler = HEAP.profiler();
    profiler.start(SAMPLE_RATE, SAMPLER_SEED);

    let mut log = SensorLog {
        readings: Vec::new(),
        state: 0x2545_f491,
    };
    for n in 1..=POLLS {
        log.poll();
        // End of a main-loop turn: the scratch buffer is gone, the heap means something.
        profiler.advance_cycle();
        if n % (POLLS / 2) == 0 {
            let which = n / (POLLS / 2) - 1;
            match dump_snapshot(which) {
                Ok(len) => hprintln!(
                    "snap-{:03}.bin after {} polls: {} bytes; heap used {} B; {} samples",
                    which,
                    n,
                    len,
                    HEAP.inner().used(),
                    profiler.counters().samples
                ),
                Err(()) => exit(false),
            }
        }
    }
    hprintln!("done: {} readings kept", log.readings.len());
    exit(true)
}

/// Stream snapshot `n` (0..=9) to `snap-00N.bin` on the host; returns its size.
fn dump_snapshot(n: u32) -> Result<usize, ()> {
    let mut name = *b"snap-000.bin\0";
    name[7] = b'0' + (n % 10) as u8;
    let mapping = [firmware_mapping("heapsnap-firmware-riscv")];
    let file = SemihostingFile::create(&name).map_err(|e| hprintln!("snapshot {}: {}", n, e))?;
    let (len, file) = HEAP
        .profiler()
        .write_snapshot(&mapping, SemihostingSink::new(file))
        .map_err(|e| hprintln!("snapshot {}: {}", n, e))?;
    file.close()
        .map_err(|e| hprintln!("snapshot {}: {}", n, e))?;
    Ok(len)
}

/// Leave QEMU with a status code (semihosting SYS_EXIT).
fn exit(ok: bool) -> ! {
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[allow(clippy::empty_loop)]
    loop {}
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("firmware panicked: {}", info);
    exit(false)
}

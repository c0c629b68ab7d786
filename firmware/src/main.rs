//! heapsnap demo firmware: a message router on a Cortex-M3 (QEMU `lm3s6965evb`) whose
//! heap is profiled by sampler-core.
//!
//! The global allocator is `embedded-alloc`'s linked-list heap wrapped in
//! `sampler_core::ProfiledAlloc`, capturing stacks with the frame-pointer walker bounded
//! by cortex-m-rt's stack (`sampler_core::cortex_m::RtStack`; the crate is built with
//! `-C force-frame-pointers=yes`, see `.cargo/config.toml`). The main
//! loop handles one message per turn and closes a record cycle with `advance_cycle()`;
//! every `DUMP_EVERY` messages it streams a snapshot to the host over semihosting
//! (`snap-000.bin`, `snap-001.bin`, … in QEMU's working directory) and publishes it into
//! the RAM mailbox `HEAPSNAP_MAILBOX`, where a debugger reads it (`heapsnap pull`). Then
//! it exits QEMU with a status code, or, when the semihosting command line has the word
//! `live`, keeps running: a live target for `heapsnap pull` to read from.
//!
//! Every `STREAM_EVERY` messages it also streams a snapshot over UART0 as one COBS frame
//! (the serial stream a device sends for hours; QEMU's `-serial file:` records it as
//! `capture.cobs`), stamped with the SysTick clock (`serial::now`, format
//! §2.6): `heapsnap timeline` reads the heap over time from it.
//!
//! With the word `leaks` it is the leak-check run instead: every allocation sampled
//! (rate 1), no periodic snapshots, and at the end a snapshot with the object table
//! (`leaks-snap.bin`), the registers (`leaks-regs.txt`) and the RAM from its static
//! data to the stack's top, heap included (`leaks-ram.bin`, from `__sdata` to
//! `_stack_start`), taken at the same moment, for `heapsnap leaks` and `heapsnap
//! retain`. It prints its own count of what it lost (`lost: N blocks, B bytes`) and of
//! what `main` holds in a local (`held by main: N blocks, B bytes`).
#![no_std]
#![no_main]

extern crate alloc;

mod host;
mod router;
mod serial;

// Links the single-core `critical-section` implementation (interrupts off).
use cortex_m as _;

use core::mem::MaybeUninit;
use cortex_m_rt::{entry, exception, ExceptionFrame};
use cortex_m_semihosting::{debug, hprintln};
use embedded_alloc::LlffHeap;
use sampler_core::cortex_m::{RtStack, SemihostingFile, SemihostingSink};
use sampler_core::{ProfiledAlloc, SnapshotMailbox};

/// Heap bytes (of the LM3S6965's 64 KiB SRAM).
const HEAP_BYTES: usize = 16 * 1024;
/// Messages the router handles before exiting.
const MESSAGES: u32 = 480;
/// A snapshot every this many messages (so the run writes MESSAGES / DUMP_EVERY files).
const DUMP_EVERY: u32 = 96;
/// A snapshot over UART0 every this many messages (so the capture holds
/// MESSAGES / STREAM_EVERY frames; every sixth is taken with a semihosting file's).
const STREAM_EVERY: u32 = 16;
/// Seed of the message source.
const SEED: u32 = 0x2545_f491;

/// Mean sampling interval in bytes: the leak (~30 bytes per hello message) shows after
/// a few hundred messages, and the ~57 KB allocated per run give ~450 samples.
const SAMPLE_RATE: usize = 128;
/// Seed of the sampler's random intervals (fixed: the run is reproducible).
const SAMPLER_SEED: u64 = 0x5eed;
/// Profiler capacities: interned stacks, frames in the arena, (stack, size) buckets,
/// live sampled objects, frames per stack. S, B and L are powers of two.
/// RAM = 12·S + 4·F + 40·B + 16·L bytes ≈ 17 KiB here; `heapsnap inspect` shows how
/// full each table got.
const STACKS: usize = 64;
const FRAMES: usize = 512;
const BUCKETS: usize = 256;
const LIVE: usize = 256;
const DEPTH: usize = 16;
/// Count every allocation and free exactly too (bytes and objects in use, the peak):
/// a few relaxed atomics per call, small next to the linked-list allocator's own work.
const TOTALS: bool = true;

static mut HEAP_MEM: [MaybeUninit<u8>; HEAP_BYTES] = [MaybeUninit::uninit(); HEAP_BYTES];

/// The router: a static, so what it holds (the cache of `remember_message`) is held by
/// a name a leak check can show (`heapsnap_firmware::ROUTER`).
static mut ROUTER: Option<router::Router> = None;

/// Profiled from the first allocation on. `off()` keeps the static all-zero, so its
/// 17 KiB of tables land in .bss and cost no flash; `start()` at boot sets rate and seed.
#[global_allocator]
static HEAP: ProfiledAlloc<LlffHeap, RtStack, STACKS, FRAMES, BUCKETS, LIVE, DEPTH, TOTALS> =
    ProfiledAlloc::off(LlffHeap::empty(), RtStack);

/// The latest snapshot, for a debugger: `heapsnap pull --elf FW.elf --gdb HOST:PORT`
/// finds it by this name. All zero until the first publish (.bss, no flash); the demo's
/// snapshots take 0.5–1.2 KiB.
#[no_mangle]
static HEAPSNAP_MAILBOX: SnapshotMailbox<2048> = SnapshotMailbox::new();

/// The leak-check run's batch held by `main`'s stack frame: boxes and bytes each.
const HELD_BLOCKS: usize = 3;
const HELD_BYTES: usize = 40;

/// Cycles between two publishes of the live mode's idle loop (a few ms in QEMU).
const LIVE_REPUBLISH_CYCLES: u32 = 2_000_000;

#[entry]
fn main() -> ! {
    // SAFETY: called once, before any allocation; HEAP_MEM is used by nothing else.
    unsafe {
        HEAP.inner()
            .init(core::ptr::addr_of_mut!(HEAP_MEM) as usize, HEAP_BYTES)
    }
    let profiler = HEAP.profiler();
    let leak_check = host::cmdline_has(b"leaks");
    profiler.start(if leak_check { 1 } else { SAMPLE_RATE }, SAMPLER_SEED);
    // The serial stream and its clock (not in the leak-check run: no interrupt moves
    // RAM while its image is copied out).
    if !leak_check {
        serial::init_uart();
        if let Some(p) = cortex_m::Peripherals::take() {
            serial::start_clock(p.SYST);
        }
    }
    let (mut streamed, mut streamed_bytes) = (0u32, 0usize);

    // SAFETY: the only reference to ROUTER, taken once here.
    let router = unsafe { (*core::ptr::addr_of_mut!(ROUTER)).insert(router::Router::new(SEED)) };
    let mut written = 0u32;
    for n in 1..=MESSAGES {
        router.handle_message();
        // End of a main-loop turn: the message's temporaries are gone, the heap means
        // something here.
        profiler.advance_cycle();
        if n % STREAM_EVERY == 0 && !leak_check {
            match stream_snapshot() {
                Ok(len) => {
                    streamed += 1;
                    streamed_bytes += len;
                }
                Err(()) => exit(false),
            }
        }
        if n % DUMP_EVERY == 0 && !leak_check {
            match dump_snapshot(written) {
                Ok(len) => {
                    let c = profiler.counters();
                    let h = profiler.heap().unwrap_or_default();
                    hprintln!(
                        "snap-{:03}.bin after {} messages: {} bytes; heap used {} B, requested {} B in {} objects, peak {} B; {} samples, {} live; dropped: stacks {} buckets {} live-map {} reentrant {} truncated {}",
                        written,
                        n,
                        len,
                        HEAP.inner().used(),
                        h.in_use_bytes,
                        h.in_use_objects(),
                        h.peak_bytes,
                        c.samples,
                        profiler.live_objects(),
                        c.stack_table_full,
                        c.bucket_table_full,
                        c.live_map_full,
                        c.reentrant,
                        c.truncated_stacks
                    );
                }
                Err(()) => exit(false),
            }
            written += 1;
        }
    }
    hprintln!(
        "done: {} messages, {} forwarded, {} remembered (leaked), checksum {:08x}, heap used {} of {} B",
        MESSAGES,
        router.forwarded,
        router.leaked(),
        router.checksum,
        HEAP.inner().used(),
        HEAP_BYTES
    );
    if !leak_check {
        hprintln!(
            "uart: {} snapshot frames, {} bytes (COBS) at {} ticks of {} Hz",
            streamed,
            streamed_bytes,
            serial::now().ticks,
            serial::CORE_HZ
        );
    }
    hprintln!(
        "lost: {} blocks, {} bytes",
        router.lost_blocks,
        router.lost_bytes
    );
    if leak_check {
        // Held by this frame only (a local, in memory: `black_box` takes its address),
        // so the check finds it through the stack, named `…__cortex_m_rt_main::held`.
        let held = router::hold_batch(HELD_BLOCKS, HELD_BYTES);
        hprintln!(
            "held by main: {} blocks, {} bytes (the Vec's buffer and {} boxes of {} B)",
            HELD_BLOCKS + 1,
            HELD_BLOCKS * HELD_BYTES + HELD_BLOCKS * core::mem::size_of::<alloc::boxed::Box<[u8]>>(),
            HELD_BLOCKS,
            HELD_BYTES
        );
        if dump_leak_check().is_err() {
            exit(false)
        }
        core::hint::black_box(&held);
    }
    if host::cmdline_has(b"live") {
        live()
    }
    exit(true)
}

/// The live mode: stay a running target, publishing the final snapshot into the mailbox
/// again every few milliseconds (the tables no longer change, so the bytes stay those
/// of the last `snap-NNN.bin`; the mailbox's sequence counter keeps moving).
fn live() -> ! {
    hprintln!(
        "live: publishing into HEAPSNAP_MAILBOX at {:p} until stopped",
        &HEAPSNAP_MAILBOX
    );
    loop {
        if let Err(e) = HEAPSNAP_MAILBOX.publish(HEAP.profiler(), &[fw_mapping()]) {
            hprintln!("live: mailbox: {}", e);
            exit(false);
        }
        cortex_m::asm::delay(LIVE_REPUBLISH_CYCLES);
    }
}

/// Stream a snapshot over UART0 as one COBS frame, stamped with the SysTick clock;
/// returns the frame's bytes (delimiter included). Nothing is buffered: the encoder's
/// bytes go to the UART as they come, with the profiler's lock held (interrupts off).
fn stream_snapshot() -> Result<usize, ()> {
    let at = serial::now();
    let mut sent = 0usize;
    HEAP.profiler()
        .with_view(&[fw_mapping()], |v| {
            sampler_core::snapshot::encode_framed_stream(
                &v.at(at),
                sampler_core::snapshot::FnSink::new(|bytes: &[u8]| {
                    sent += bytes.len();
                    serial::uart_write(bytes)
                }),
            )
        })
        .map_err(|e| hprintln!("uart snapshot: {}", e))?
        .map_err(|e| hprintln!("uart snapshot: {}", e))?;
    Ok(sent)
}

/// Stream snapshot `n` to `snap-NNN.bin` on the host; returns its size in bytes.
/// Its mapping ([`fw_mapping`]) carries the build id; the host symbolizes at link addresses.
/// Failures are printed here (the cause types differ) and end the run.
fn dump_snapshot(n: u32) -> Result<usize, ()> {
    let name = snapshot_name(n);
    let file = SemihostingFile::create(&name).map_err(|e| hprintln!("snapshot {}: {}", n, e))?;
    let (len, file) = HEAP
        .profiler()
        .write_snapshot(&[fw_mapping()], SemihostingSink::new(file))
        .map_err(|e| hprintln!("snapshot {}: {}", n, e))?;
    file.close()
        .map_err(|e| hprintln!("snapshot {}: {}", n, e))?;
    let published = HEAPSNAP_MAILBOX
        .publish(HEAP.profiler(), &[fw_mapping()])
        .map_err(|e| hprintln!("snapshot {}: mailbox: {}", n, e))?;
    if published != len {
        hprintln!(
            "snapshot {}: the mailbox got {} bytes, the file {}",
            n,
            published,
            len
        );
        return Err(());
    }
    Ok(len)
}

/// The leak-check dump: the registers (`leaks-regs.txt`, captured first, so pc and sp
/// are this function's), a snapshot with the object table, then the RAM from the static
/// data to the stack's top (`.data`, `.bss`, `.uninit`, the heap arena in there, and the
/// live stack above the captured sp), none of it allocating, so all describe the same
/// moment for the frames above this one.
#[inline(never)]
fn dump_leak_check() -> Result<(), ()> {
    extern "C" {
        static __sdata: u8;
        static _stack_start: u8;
    }
    // r0-r12, sp, lr, pc: sp and pc at the `adr`, the others as the compiler left them.
    let mut regs = [0u32; 16];
    // SAFETY: stores into `regs` only (16 words); no stack or flag changes.
    unsafe {
        core::arch::asm!(
            "stmia {b}, {{r0-r12}}",
            "str sp, [{b}, #52]",
            "str lr, [{b}, #56]",
            "1:",
            "adr {t}, 1b",
            "str {t}, [{b}, #60]",
            b = in(reg) regs.as_mut_ptr(),
            t = out(reg) _,
            options(nostack, preserves_flags),
        );
    }
    let fail = |what: &str, e: &dyn core::fmt::Display| hprintln!("leak check {}: {}", what, e);
    let mut text = [0u8; 16 * 16];
    let len = regs_text(&regs, &mut text);
    let mut file =
        SemihostingFile::create(b"leaks-regs.txt\0").map_err(|e| fail("leaks-regs.txt", &e))?;
    file.write_all(&text[..len])
        .map_err(|e| fail("leaks-regs.txt", &e))?;
    file.close().map_err(|e| fail("leaks-regs.txt", &e))?;
    let file =
        SemihostingFile::create(b"leaks-snap.bin\0").map_err(|e| fail("leaks-snap.bin", &e))?;
    let (len, file) = HEAP
        .profiler()
        .write_snapshot_with_objects(&[fw_mapping()], SemihostingSink::new(file))
        .map_err(|e| fail("leaks-snap.bin", &e))?;
    file.close().map_err(|e| fail("leaks-snap.bin", &e))?;
    let start = core::ptr::addr_of!(__sdata);
    let end = core::ptr::addr_of!(_stack_start);
    let bytes = end as usize - start as usize;
    // SAFETY: `__sdata.._stack_start` is the RAM cortex-m-rt lays out (static data, then
    // the stack), readable; only the frames below this one change while the semihosting
    // call copies it out (no allocation, and SysTick is not started in the leak-check
    // run, so no interrupt handler runs).
    let ram = unsafe { core::slice::from_raw_parts(start, bytes) };
    let mut file =
        SemihostingFile::create(b"leaks-ram.bin\0").map_err(|e| fail("leaks-ram.bin", &e))?;
    file.write_all(ram).map_err(|e| fail("leaks-ram.bin", &e))?;
    file.close().map_err(|e| fail("leaks-ram.bin", &e))?;
    hprintln!("leaks-regs.txt: sp {:#010x} pc {:#010x}", regs[13], regs[15]);
    hprintln!(
        "leaks-snap.bin: {} bytes, {} live objects; leaks-ram.bin: {} bytes at {:#010x}",
        len,
        HEAP.profiler().live_objects(),
        bytes,
        start as usize
    );
    Ok(())
}

/// `r0=0x…` lines of the captured registers into `out` (no formatting machinery, no
/// allocation); returns the length written.
fn regs_text(regs: &[u32; 16], out: &mut [u8; 256]) -> usize {
    const NAMES: [&[u8]; 16] = [
        b"r0", b"r1", b"r2", b"r3", b"r4", b"r5", b"r6", b"r7", b"r8", b"r9", b"r10", b"r11",
        b"r12", b"sp", b"lr", b"pc",
    ];
    let mut at = 0;
    for (name, &v) in NAMES.iter().zip(regs) {
        for &b in name.iter().chain(b"=0x") {
            out[at] = b;
            at += 1;
        }
        for k in (0..8).rev() {
            out[at] = b"0123456789abcdef"[((v >> (k * 4)) & 0xf) as usize];
            at += 1;
        }
        out[at] = b'\n';
        at += 1;
    }
    at
}

/// This firmware as its snapshots' one mapping: `.text` with the ELF's build id (from
/// flash, see `memory.x`), so `heapsnap` refuses the ELF of another build.
fn fw_mapping() -> sampler_core::snapshot::MappingRef<'static> {
    sampler_core::cortex_m::firmware_mapping("heapsnap-firmware")
}

/// `snap-NNN.bin\0` for snapshot number `n` (0..=999), without formatting machinery.
fn snapshot_name(n: u32) -> [u8; 13] {
    let mut name = *b"snap-000.bin\0";
    name[5] = b'0' + (n / 100 % 10) as u8;
    name[6] = b'0' + (n / 10 % 10) as u8;
    name[7] = b'0' + (n % 10) as u8;
    name
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

#[exception]
unsafe fn HardFault(frame: &ExceptionFrame) -> ! {
    hprintln!("hard fault: {:?}", frame);
    exit(false)
}

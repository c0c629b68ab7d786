//! The board side of the serial stream: UART0 of the LM3S6965 as a snapshot sink, and
//! SysTick extended by its wraps as the clock that stamps each snapshot.
//!
//! Registers are written directly (no PAC: the two peripherals take six registers).
//! QEMU's `lm3s6965evb` models both: UART0 goes wherever `-serial` points (`cargo
//! xtask firmware` gives it `file:target/firmware-out/capture.cobs`), and SysTick
//! counts the core clock in QEMU's virtual time.

use core::sync::atomic::{AtomicU32, Ordering};
use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::{SCB, SYST};
use cortex_m_rt::exception;
use sampler_core::snapshot::Timestamp;

/// UART0's registers (LM3S6965 data sheet, §13.6).
const UART0: usize = 0x4000_c000;
const UARTDR: usize = UART0;
const UARTFR: usize = UART0 + 0x18;
const UARTCTL: usize = UART0 + 0x30;
/// UARTFR: the transmit FIFO is full.
const TXFF: u32 = 1 << 5;
/// UARTCTL: UART enabled, transmit enabled.
const UARTEN_TXE: u32 = 1 | (1 << 8);
/// RCGC1: run-mode clock gating; bit 0 clocks UART0.
const RCGC1: usize = 0x400f_e104;

/// The core clock the demo runs at: QEMU's lm3s6965evb after reset (RCC's reset value
/// divides the 200 MHz PLL by 16). What SysTick counts with the core clock source.
pub const CORE_HZ: u64 = 12_500_000;
/// SysTick's reload: the whole 24-bit counter, so it wraps (and interrupts) every
/// 1.34 s of core clock.
const RELOAD: u32 = 0x00ff_ffff;
/// SysTick wraps since [`start_clock`]: the high bits of [`now`].
static WRAPS: AtomicU32 = AtomicU32::new(0);

/// Clock UART0 and enable its transmitter.
pub fn init_uart() {
    // SAFETY: the LM3S6965's RCGC1 and UART0 control registers; nothing else in this
    // firmware touches them, and setting these bits has no other effect.
    unsafe {
        let rcgc1 = RCGC1 as *mut u32;
        rcgc1.write_volatile(rcgc1.read_volatile() | 1);
        (UARTCTL as *mut u32).write_volatile(UARTEN_TXE);
    }
}

/// Send `bytes` on UART0, waiting while its transmit FIFO is full. Never fails: the
/// postcard sink's error path stays unused.
pub fn uart_write(bytes: &[u8]) -> Result<(), ()> {
    for &b in bytes {
        // SAFETY: UART0's flag and data registers; a read of FR has no side effect, a
        // write of DR queues one byte.
        unsafe {
            while (UARTFR as *const u32).read_volatile() & TXFF != 0 {}
            (UARTDR as *mut u32).write_volatile(u32::from(b));
        }
    }
    Ok(())
}

/// Start SysTick on the core clock, interrupting at each wrap.
///
/// The counter starts at 0 (`clear_current`) and loads the reload value on its first
/// tick, which QEMU may take for a wrap and pend the interrupt: seen as a first stamp
/// of 1.34 s (one wrap) followed by 0.0046 s. So the start waits, interrupts off, for
/// that load and drops the pend it may have left: no real wrap can have happened yet.
pub fn start_clock(mut syst: SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(RELOAD);
    syst.clear_current();
    cortex_m::interrupt::free(|_| {
        syst.enable_interrupt();
        syst.enable_counter();
        // Bounded: the counter loads on its first tick, a few cycles from here.
        let mut spins = 0u32;
        while SYST::get_current() == 0 && spins < 100_000 {
            spins += 1;
        }
        SCB::clear_pendst();
    });
}

/// Core-clock ticks since [`start_clock`]: the wraps counted by the SysTick handler
/// above the 24 bits SysTick counts down. Read with interrupts off; a wrap that
/// happened since (its interrupt still pending) is counted here.
pub fn now() -> Timestamp {
    let ticks = cortex_m::interrupt::free(|_| {
        let mut wraps = WRAPS.load(Ordering::Relaxed);
        let mut current = SYST::get_current();
        if SCB::is_pendst_pending() {
            // Wrapped between the load and here, or before: read again after the wrap.
            current = SYST::get_current();
            wraps = wraps.wrapping_add(1);
        }
        (u64::from(wraps) << 24) | u64::from(RELOAD - current.min(RELOAD))
    });
    Timestamp {
        ticks,
        ticks_per_second: CORE_HZ,
    }
}

#[exception]
fn SysTick() {
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

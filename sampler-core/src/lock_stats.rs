//! Opt-in timing of the profiler's slow-path critical sections (feature `lock-stats`,
//! hosts only): how long a sampled allocation and a free of a possibly sampled object
//! waited for the lock and held it. On a host the lock is `critical-section`'s one
//! process-wide mutex, so a long hold stalls every other thread's slow path; this is
//! what `bench-peers --lock-stats` reports. Costs two clock reads per slow-path critical
//! section (none on the not-sampled paths); without the feature `with` is
//! `critical_section::with` itself.

#[cfg(feature = "lock-stats")]
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Which slow path entered the critical section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// A sampled allocation (`Profiler::record_alloc`'s slow path).
    Sampled = 0,
    /// A free whose address passed the filter (`Profiler::record_free`'s slow path).
    Free = 1,
}

/// Totals for one [`Path`] since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Critical sections entered.
    pub entries: u64,
    /// Nanoseconds spent waiting to enter, summed.
    pub wait_ns: u64,
    /// The longest wait.
    pub max_wait_ns: u64,
    /// Nanoseconds spent inside, summed.
    pub hold_ns: u64,
    /// The longest hold.
    pub max_hold_ns: u64,
}

#[cfg(feature = "lock-stats")]
struct Slot {
    entries: AtomicU64,
    wait_ns: AtomicU64,
    max_wait_ns: AtomicU64,
    hold_ns: AtomicU64,
    max_hold_ns: AtomicU64,
}

#[cfg(feature = "lock-stats")]
static SLOTS: [Slot; 2] = [const {
    Slot {
        entries: AtomicU64::new(0),
        wait_ns: AtomicU64::new(0),
        max_wait_ns: AtomicU64::new(0),
        hold_ns: AtomicU64::new(0),
        max_hold_ns: AtomicU64::new(0),
    }
}; 2];

/// The totals of both paths (`[Sampled, Free]`); all zero without the feature.
pub fn stats() -> [PathStats; 2] {
    #[cfg(feature = "lock-stats")]
    {
        SLOTS.each_ref().map(|s| PathStats {
            entries: s.entries.load(Relaxed),
            wait_ns: s.wait_ns.load(Relaxed),
            max_wait_ns: s.max_wait_ns.load(Relaxed),
            hold_ns: s.hold_ns.load(Relaxed),
            max_hold_ns: s.max_hold_ns.load(Relaxed),
        })
    }
    #[cfg(not(feature = "lock-stats"))]
    {
        [PathStats::default(); 2]
    }
}

/// `critical_section::with`, timed under the feature.
#[inline(always)]
pub(crate) fn with<R>(path: Path, f: impl FnOnce(critical_section::CriticalSection<'_>) -> R) -> R {
    #[cfg(feature = "lock-stats")]
    {
        let t0 = std::time::Instant::now();
        critical_section::with(|cs| {
            let t1 = std::time::Instant::now();
            let r = f(cs);
            let held = t1.elapsed().as_nanos() as u64;
            let waited = (t1 - t0).as_nanos() as u64;
            if let Some(s) = SLOTS.get(path as usize) {
                s.entries.fetch_add(1, Relaxed);
                s.wait_ns.fetch_add(waited, Relaxed);
                s.max_wait_ns.fetch_max(waited, Relaxed);
                s.hold_ns.fetch_add(held, Relaxed);
                s.max_hold_ns.fetch_max(held, Relaxed);
            }
            r
        })
    }
    #[cfg(not(feature = "lock-stats"))]
    {
        let _ = path;
        critical_section::with(f)
    }
}

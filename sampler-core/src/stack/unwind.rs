//! Host stack capture from DWARF call-frame information: works on code built without
//! frame pointers, which is how most host Rust is built.
//!
//! On x86_64 Linux the walk is this crate's own ([`cache`]): one rule per return
//! address (CFA = rsp or rbp + offset, return address and saved rbp at fixed offsets
//! from the CFA), evaluated once from the FDE libgcc finds for it (`_Unwind_Find_FDE`)
//! and kept in a fixed lock-free table, so a walk over known code reads the stack and
//! the table and nothing else (a program that `dlclose`s libraries calls
//! [`HostStack::forget_rules`] after it). libgcc's `_Unwind_Backtrace` instead looks up and
//! interprets the FDE of every frame on every walk (about 4 µs for 32 frames where
//! the cached walk takes under 1 µs). Any frame whose rule is not of that simple form
//! (signal trampolines, DWARF expressions, code without unwind tables, stack
//! realignment), and every other architecture, takes `_Unwind_Backtrace` (libgcc /
//! LLVM libunwind, which `std` already links) for the whole capture, so both paths
//! report the same frames.
//!
//! Neither allocates in the common case: the cached walk never does, and libgcc's FDE
//! lookup goes through `_dl_find_object` (glibc 2.35+) or `dl_iterate_phdr`
//! (jemalloc's heap profiler uses the same calls from inside `malloc`). If a platform's unwinder does allocate, the nested
//! allocation is counted as re-entrant, never recursed into.

use core::ffi::{c_int, c_void};

use super::{Captured, StackSource};

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod cache;

#[allow(non_camel_case_types)]
type _Unwind_Trace_Fn = extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> c_int;

extern "C" {
    fn _Unwind_Backtrace(trace: _Unwind_Trace_Fn, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
    fn _Unwind_GetCFA(ctx: *mut c_void) -> usize;
}

const URC_NO_REASON: c_int = 0;
const URC_END_OF_STACK: c_int = 5;

/// DWARF-unwinding [`StackSource`] for hosts with `std`.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostStack;

/// What both walkers feed, frame by frame, innermost first: which frames are the
/// profiler's (skipped) and where the recorded ones go.
struct Frames<'a> {
    boundary: usize,
    /// The profiler's outermost frame has been passed: record from the next frame on.
    above: bool,
    out: &'a mut [usize],
    len: usize,
    truncated: bool,
}

impl<'a> Frames<'a> {
    fn new(boundary: usize, out: &'a mut [usize]) -> Self {
        Frames {
            boundary,
            above: false,
            out,
            len: 0,
            truncated: false,
        }
    }

    /// One frame as `_Unwind_Backtrace` reports it: `ip` is the frame's return address
    /// (its current instruction for the innermost), `sp` its stack pointer at the call
    /// (what `_Unwind_GetCFA` answers: the CFA of the frame below). `false`: stop.
    fn frame(&mut self, ip: usize, sp: usize) -> bool {
        if self.above {
            if ip == 0 {
                return false;
            }
            match self.out.get_mut(self.len) {
                Some(slot) => {
                    *slot = ip;
                    self.len += 1;
                }
                None => {
                    self.truncated = true;
                    return false;
                }
            }
        } else if sp > self.boundary {
            // This frame holds the boundary (its IP is inside the profiler); its caller
            // is the first frame that is not ours.
            self.above = true;
        }
        true
    }

    fn captured(&self) -> Captured {
        Captured {
            len: self.len,
            truncated: self.truncated,
        }
    }
}

extern "C" fn on_frame(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Frames` passed to `_Unwind_Backtrace` below, alive for the
    // whole call; `ctx` is the unwinder's own context for this frame.
    let st = unsafe { &mut *(arg as *mut Frames<'_>) };
    let (ip, cfa) = unsafe { (_Unwind_GetIP(ctx), _Unwind_GetCFA(ctx)) };
    if st.frame(ip, cfa) {
        URC_NO_REASON
    } else {
        URC_END_OF_STACK
    }
}

/// The whole capture through the platform's `_Unwind_Backtrace`.
#[inline(never)]
fn backtrace(boundary: usize, out: &mut [usize]) -> Captured {
    let mut st = Frames::new(boundary, out);
    // SAFETY: the callback only touches `st` through the pointer it is given.
    unsafe {
        _Unwind_Backtrace(on_frame, core::ptr::addr_of_mut!(st).cast());
    }
    st.captured()
}

impl HostStack {
    /// Forget every cached unwind rule. A program that unloads a shared library
    /// (`dlclose`) and may later map other code at its addresses calls this after the
    /// unload, so no frame of the new code is walked with the old code's rules. Costs
    /// a pass over the 4,096-entry table; later captures evaluate their rules again.
    pub fn forget_rules() {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        cache::forget();
    }
}

impl StackSource for HostStack {
    #[inline(never)]
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
        if let Some(c) = cache::walk(&mut Frames::new(boundary, &mut *out)) {
            return c;
        }
        backtrace(boundary, out)
    }
}

#[cfg(all(test, target_arch = "x86_64", target_os = "linux"))]
#[allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]
mod tests {
    use super::*;
    use std::hint::black_box;

    /// `depth` real frames of this function (no tail calls: the result goes through
    /// `black_box`), then `f`.
    #[inline(never)]
    fn recurse<R>(depth: usize, f: &dyn Fn() -> R) -> R {
        if depth == 0 {
            black_box(f())
        } else {
            black_box(recurse(black_box(depth - 1), f))
        }
    }

    struct Both {
        cached: Option<Captured>,
        cached_frames: Vec<usize>,
        libgcc: Captured,
        libgcc_frames: Vec<usize>,
        misses: u64,
    }

    /// Both walkers from one capture point: a frame holding the boundary, as the
    /// profiler's `sampled` does, so both record from its return address on.
    #[inline(never)]
    fn probe(n: usize) -> Both {
        let marker = 0u8;
        let boundary = black_box(core::ptr::addr_of!(marker)) as usize;
        let (mut a, mut b) = (vec![0usize; n], vec![0usize; n]);
        let m0 = cache::misses();
        let cached = cache::walk(&mut Frames::new(boundary, &mut a));
        let misses = cache::misses() - m0;
        let libgcc = backtrace(boundary, &mut b);
        Both {
            cached_frames: a[..cached.map_or(0, |c| c.len)].to_vec(),
            cached,
            libgcc_frames: b[..libgcc.len].to_vec(),
            libgcc,
            misses,
        }
    }

    fn assert_same(got: &Both) {
        let cached = got
            .cached
            .expect("the cached walk fell back to _Unwind_Backtrace");
        assert_eq!(cached, got.libgcc);
        for (i, (c, l)) in got.cached_frames.iter().zip(&got.libgcc_frames).enumerate() {
            assert_eq!(c, l, "frame {i}: cached {c:#x}, _Unwind_Backtrace {l:#x}");
        }
    }

    #[test]
    fn the_cached_walk_reports_exactly_the_frames_of_unwind_backtrace() {
        let got = recurse(40, &|| probe(256));
        assert_same(&got);
        assert!(!got.libgcc.truncated);
        // 40 frames returning to the same call site in `recurse`, plus the test
        // harness and thread start below them.
        let mut counts = std::collections::HashMap::new();
        for f in &got.cached_frames {
            *counts.entry(*f).or_insert(0) += 1;
        }
        assert!(
            counts.values().any(|&n| n >= 40),
            "no return address seen 40 times: {:x?}",
            got.cached_frames
        );
        assert!(got.cached_frames.len() > 42, "{:x?}", got.cached_frames);
    }

    #[test]
    fn a_truncated_walk_is_the_same_prefix_and_says_so() {
        let got = recurse(40, &|| probe(8));
        assert_same(&got);
        assert_eq!(got.cached_frames.len(), 8);
        assert!(got.libgcc.truncated);
    }

    #[test]
    fn the_second_walk_over_the_same_code_evaluates_no_rule() {
        // One call site, walked twice: the same return addresses both times.
        let walks: Vec<Both> = (0..2).map(|_| recurse(40, &|| probe(256))).collect();
        assert_same(&walks[0]);
        assert_same(&walks[1]);
        assert_eq!(walks[0].cached_frames, walks[1].cached_frames);
        assert!(
            walks[0].misses > 0,
            "the first walk found every rule cached"
        );
        assert_eq!(
            walks[1].misses, 0,
            "rules evaluated again on the second walk"
        );
        // Forgotten rules are evaluated again, once, and the walk stays exact.
        HostStack::forget_rules();
        let again: Vec<Both> = (0..2).map(|_| recurse(40, &|| probe(256))).collect();
        assert_same(&again[0]);
        assert!(again[0].misses > 0, "forgotten rules were still cached");
        assert_eq!(again[1].misses, 0);
    }

    /// What the signal handler below saw: the cached walk's verdict, then
    /// `HostStack`'s frames and `_Unwind_Backtrace`'s from one capture point.
    type InSignal = (
        Option<Captured>,
        Captured,
        [usize; 128],
        Captured,
        [usize; 128],
    );
    static IN_SIGNAL: std::sync::Mutex<Option<InSignal>> = std::sync::Mutex::new(None);

    #[inline(never)]
    fn probe_in_signal() {
        let marker = 0u8;
        let boundary = black_box(core::ptr::addr_of!(marker)) as usize;
        let (mut scratch, mut a, mut b) = ([0usize; 128], [0usize; 128], [0usize; 128]);
        let cached = cache::walk(&mut Frames::new(boundary, &mut scratch));
        let host = HostStack.capture(boundary, &mut a);
        let libgcc = backtrace(boundary, &mut b);
        if let Ok(mut r) = IN_SIGNAL.lock() {
            *r = Some((cached, host, a, libgcc, b));
        }
    }

    extern "C" fn on_sigusr1(_: c_int) {
        probe_in_signal();
    }

    #[test]
    fn a_signal_frame_falls_back_to_unwind_backtrace_and_gets_through_it() {
        // SAFETY: a handler for SIGUSR1, which nothing else in this process uses, raised
        // synchronously on this thread.
        unsafe {
            let mut act: libc::sigaction = core::mem::zeroed();
            act.sa_sigaction = on_sigusr1 as extern "C" fn(c_int) as usize;
            assert_eq!(
                libc::sigaction(libc::SIGUSR1, &act, core::ptr::null_mut()),
                0
            );
        }
        recurse(20, &|| unsafe { libc::raise(libc::SIGUSR1) });
        let (cached, host, a, libgcc, b) = IN_SIGNAL.lock().unwrap().take().unwrap();
        assert_eq!(
            cached, None,
            "the cached walk went through the signal trampoline"
        );
        assert_eq!(host, libgcc);
        assert_eq!(&a[..host.len], &b[..libgcc.len]);
        // Past the trampoline: the 20 frames of `recurse` that raised the signal.
        let mut counts = std::collections::HashMap::new();
        for f in &a[..host.len] {
            *counts.entry(*f).or_insert(0) += 1;
        }
        assert!(counts.values().any(|&n| n >= 20), "{:x?}", &a[..host.len]);
    }

    #[test]
    fn threads_walking_at_once_share_the_table_and_stay_exact() {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..50 {
                        assert_same(&recurse(10 + (t * 7 + i) % 30, &|| probe(256)));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("walker thread panicked");
        }
    }
}

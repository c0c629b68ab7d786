//! Host stack capture through the platform unwinder (`_Unwind_Backtrace` from libgcc /
//! LLVM libunwind, which `std` already links): works on code built without frame
//! pointers, which is how most host Rust is built.
//!
//! It does not allocate in the common case (the FDE lookup goes through
//! `dl_iterate_phdr`); jemalloc's heap profiler uses the same call from inside
//! `malloc`. If a platform's unwinder does allocate, the nested allocation is counted
//! as re-entrant, never recursed into.

use core::ffi::{c_int, c_void};

use super::{Captured, StackSource};

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

struct State<'a> {
    boundary: usize,
    /// The profiler's outermost frame has been passed: record from the next frame on.
    above: bool,
    out: &'a mut [usize],
    len: usize,
    truncated: bool,
}

extern "C" fn on_frame(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `State` passed to `_Unwind_Backtrace` below, alive for the
    // whole call; `ctx` is the unwinder's own context for this frame.
    let st = unsafe { &mut *(arg as *mut State<'_>) };
    let (ip, cfa) = unsafe { (_Unwind_GetIP(ctx), _Unwind_GetCFA(ctx)) };
    if st.above {
        if ip == 0 {
            return URC_END_OF_STACK;
        }
        match st.out.get_mut(st.len) {
            Some(slot) => {
                *slot = ip;
                st.len += 1;
            }
            None => {
                st.truncated = true;
                return URC_END_OF_STACK;
            }
        }
    } else if cfa > st.boundary {
        // This frame holds the boundary (its IP is inside the profiler); its caller is
        // the first frame that is not ours.
        st.above = true;
    }
    URC_NO_REASON
}

impl StackSource for HostStack {
    #[inline(never)]
    fn capture(&self, boundary: usize, out: &mut [usize]) -> Captured {
        let mut st = State {
            boundary,
            above: false,
            out,
            len: 0,
            truncated: false,
        };
        // SAFETY: the callback only touches `st` through the pointer it is given.
        unsafe {
            _Unwind_Backtrace(on_frame, core::ptr::addr_of_mut!(st).cast());
        }
        Captured {
            len: st.len,
            truncated: st.truncated,
        }
    }
}

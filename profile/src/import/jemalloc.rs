//! jemalloc heap profile dumps (`prof.dump` through `mallctl`, `prof_prefix` files),
//! which only jemalloc's `jeprof` reads (`go tool pprof` refuses them):
//!
//! ```text
//! heap_v2/524288
//!   t*: 115: 4321984 [127: 4363024]
//!   t0: 115: 4321984 [127: 4363024]
//! @ 0x7f9e67ea2630 0x7f9e67ea2d21 … 0x557fe3e16212 0x557fe3e16285 …
//!   t*: 10: 40960 [20: 81920]
//!   t0: 10: 40960 [20: 81920]
//!
//! MAPPED_LIBRARIES:
//! 557fe3e16000-557fe3e17000 r-xp 00001000 fe:00 10575894   /tmp/leaky
//! ```
//!
//! The header gives the mean sampling interval (2^`lg_prof_sample` bytes); the lines
//! before the first `@` are the totals; each `@ stack` is followed by its `t*:` line
//! (all threads: in use, then allocated in brackets, which jemalloc keeps only with
//! `prof_accum:true` and writes as `[0: 0]` otherwise) and one `tN:` line per thread,
//! which jeprof, like this reader, leaves out. Values are unsampled with jemalloc's
//! formula, the one jeprof's `AdjustSamples` applies (`1 / (1 - exp(-avg/rate))` per
//! record: the same Poisson formula as Go's, so one function serves both).
//!
//! jemalloc's stacks start inside jemalloc (its backtrace, profiling and `malloc`
//! frames); frames at the innermost end that lie in a mapping of a `libjemalloc`
//! library are dropped, as jeprof drops everything up to `malloc`, so the allocating
//! function is the leaf. (A jemalloc linked into the program itself, as
//! tikv-jemallocator does, cannot be told apart by mapping and keeps its frames.)

use super::gperftools::{addresses, bad, counts, header, trim_start, Records};
use super::{Format, Input, InputError};
use crate::limits::Limits;

/// `heap_v2/RATE` at the start of the file (a gperftools `heap profile:` header is
/// another format).
pub const JEMALLOC_HEAP: Format = Format {
    name: "jemalloc heap profile",
    sniff: |b| trim_start(b).starts_with(b"heap_v2/"),
    read,
};

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    const F: &str = JEMALLOC_HEAP.name;
    let ((n, header), mut lines) = header(F, bytes)?;
    let rate = header
        .trim()
        .strip_prefix("heap_v2/")
        .and_then(|r| r.parse::<u64>().ok())
        .ok_or_else(|| {
            bad(
                F,
                n,
                "expected `heap_v2/RATE` (the sampling interval in bytes)",
            )
        })?;
    let mut r = Records::new(F, limits, bytes.len(), rate);
    // The stack of the record being read: (its line, its addresses, counts seen).
    let mut stack: Option<(usize, Vec<u64>, bool)> = None;
    let finish_stack = |s: Option<(usize, Vec<u64>, bool)>| match s {
        Some((n, _, false)) => Err(bad(F, n, "stack without a `t*: N: N [N: N]` line")),
        _ => Ok(()),
    };
    while let Some((n, l)) = lines.next() {
        let t = l.trim();
        if t.is_empty() {
            continue;
        }
        if t == "MAPPED_LIBRARIES:" {
            finish_stack(stack.take())?;
            r.maps(n + 1, lines.map(|(_, l)| l))?;
            break;
        }
        if let Some(a) = t.strip_prefix('@') {
            finish_stack(stack.take())?;
            stack = Some((n, addresses(F, n, a)?, false));
        } else if let Some(c) = t.strip_prefix("t*:") {
            let c = counts(F, n, c)?;
            match &mut stack {
                // The totals before the first stack.
                None => {}
                Some((_, _, true)) => {
                    return Err(bad(F, n, "a second `t*:` line for one stack"));
                }
                Some((_, frames, seen)) => {
                    *seen = true;
                    r.record(n, c, std::mem::take(frames))?;
                }
            }
        } else if t
            .strip_prefix('t')
            .and_then(|x| x.split_once(':'))
            .is_some_and(|(id, _)| !id.is_empty() && id.bytes().all(|c| c.is_ascii_digit()))
        {
            // One thread's share: in the `t*:` line already.
        } else {
            return Err(bad(
                F,
                n,
                "expected `@ 0xADDR …`, `t*: N: N [N: N]`, `tTHREAD: …` or `MAPPED_LIBRARIES:`",
            ));
        }
    }
    finish_stack(stack)?;
    r.trim_leading_frames(|name| {
        let file = name.rsplit('/').next().unwrap_or(name);
        file.starts_with("libjemalloc")
    });
    Ok(r.finish(&super::gperftools::LEGACY[0]))
}

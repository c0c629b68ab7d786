//! Contention profiles, read as pprof's `parseContention` reads them: Go's `block` and
//! `mutex` profiles at `debug=1` (the runtime's `writeProfileInternal`) and the C++
//! `--- contentionz` text:
//!
//! ```text
//! --- mutex:
//! cycles/second=1996258390
//! sampling period=1
//! 1699435140 799 @ 0x4d49bf 0x4d49a6 0x462b21
//! #   0x4d49be    sync.(*Mutex).Unlock+0xbe   /usr/lib/go/src/sync/mutex.go:223
//! ```
//!
//! `key=value` attribute lines, then one record per line, `delay count @ stack`: the
//! delay in CPU cycles, the stack as return addresses (pprof takes one off each). With
//! a sampling period the values are unsampled as pprof does: the delay becomes
//! nanoseconds (`cycles × period / GHz`), the count is multiplied by the period. Two
//! sample types, `contentions` (`count`) and `delay` (`nanoseconds`). A `---` line
//! ends the records; a maps section may follow.

use super::go_count::is_space_or_comment;
use super::gperftools::{bad, origin_of, Kind, Records};
use super::{Format, Input, InputError};
use crate::limits::Limits;

/// The first line pprof accepts (exactly the first: no blank lines before it).
const HEADERS: [&[u8]; 3] = [b"--- contentionz ", b"--- mutex:", b"--- contention:"];

/// `--- contention:`, `--- mutex:` or `--- contentionz ` as the first line, but for a
/// Java contention profile (its own reader's, as in pprof).
pub const CONTENTION: Format = Format {
    name: "contention profile (Go block, mutex; debug=1)",
    sniff: |b| HEADERS.iter().any(|h| b.starts_with(h)) && !(super::java::JAVA.sniff)(b),
    read,
};

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    const F: &str = CONTENTION.name;
    let text = super::gperftools::text(F, bytes)?;
    let mut lines = text.lines().enumerate().map(|(n, l)| (n + 1, l)).peekable();
    lines.next();
    let (mut cpu_hz, mut period) = (0i64, 1i64);
    // The attribute lines, up to the first that is not one (the first record).
    while let Some(&(n, l)) = lines.peek() {
        let l = l.trim();
        if l.starts_with("---") {
            break;
        }
        if is_space_or_comment(l) {
            lines.next();
            continue;
        }
        let Some((key, value)) = l.split_once('=') else {
            break;
        };
        let (key, value) = (key.trim(), value.trim());
        let int = || {
            go_int(value).ok_or_else(|| bad(F, n, format!("{key}: `{value}` is not an integer")))
        };
        match key {
            "cycles/second" => cpu_hz = int()?,
            "sampling period" => period = int()?,
            "ms since reset" => {
                int()?;
            }
            "discarded samples" => {}
            _ => {
                return Err(bad(
                    F,
                    n,
                    format!("unknown attribute `{key}` (expected cycles/second, sampling period, ms since reset or discarded samples)"),
                ))
            }
        }
        lines.next();
    }
    let mut r = Records::new(F, limits, bytes.len(), period.max(0) as u64);
    while let Some((n, l)) = lines.next() {
        let l = l.trim();
        if l.starts_with("---") {
            // pprof's parseAdditionalSections looks at this line too.
            if l.contains("MAPPED_LIBRARIES:") || l.contains("--- Memory map: ---") {
                r.maps(n + 1, lines.by_ref().map(|(_, l)| l))?;
            }
            break;
        }
        if is_space_or_comment(l) {
            continue;
        }
        let at = || format!("line {n} of the {F}");
        let (cycles, count, stack) = sample(l).ok_or_else(|| {
            bad(
                F,
                n,
                format!("expected `DELAY COUNT @ 0xADDR …`, found `{l}`"),
            )
        })?;
        let num = |s: &str| {
            s.parse::<i64>()
                .map_err(|_| bad(F, n, format!("`{s}` is not a 64-bit count")))
        };
        let (mut delay, mut count) = (num(cycles)?, num(count)?);
        // pprof's parseContentionSample, to the same float arithmetic.
        if period > 0 {
            if cpu_hz > 0 {
                let ghz = cpu_hz as f64 / 1e9;
                delay = (delay as f64 * period as f64 / ghz) as i64;
            }
            count = count.wrapping_mul(period);
        }
        let u = |x: i64| u64::try_from(x).unwrap_or(0);
        r.values(&at, [u(count), u(delay)], hex_numbers(F, n, stack)?)?;
    }
    r.additional_sections(&mut lines)?;
    Ok(r.finish(origin_of(Kind::Contention)))
}

/// An integer as Go's `strconv.ParseInt(s, 0, 64)` reads it (a `0x` prefix is hex).
pub(super) fn go_int(s: &str) -> Option<i64> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => i64::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// pprof's `contentionSampleRE`, `(\d+) *(\d+) @([ x0-9a-f]*)`, found anywhere in the
/// line with Go's leftmost-first semantics (so `799 @ 0x10` is 79 cycles and 9
/// contentions, as pprof reads it): (cycles, count, the addresses' text).
fn sample(l: &str) -> Option<(&str, &str, &str)> {
    let b = l.as_bytes();
    let digits_from = |i: usize| i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let mut s = 0;
    while s < b.len() {
        if !b[s].is_ascii_digit() {
            s += 1;
            continue;
        }
        let j = digits_from(s);
        // The first group greedy (the whole run), spaces, the second group's run.
        let m = j + b[j..].iter().take_while(|&&c| c == b' ').count();
        if m < b.len() && b[m].is_ascii_digit() {
            let e = digits_from(m);
            if b[e..].starts_with(b" @") {
                return Some((&l[s..j], &l[m..e], addresses_text(&l[e + 2..])));
            }
        }
        // Backtracking: the run split, its last digit the second group.
        if j - s >= 2 && b[j..].starts_with(b" @") {
            return Some((&l[s..j - 1], &l[j - 1..j], addresses_text(&l[j + 2..])));
        }
        s = j;
    }
    None
}

/// The `[ x0-9a-f]*` after the `@`.
pub(super) fn addresses_text(t: &str) -> &str {
    let n = t
        .bytes()
        .take_while(|c| matches!(c, b' ' | b'x' | b'0'..=b'9' | b'a'..=b'f'))
        .count();
    &t[..n]
}

/// pprof's `parseHexAddresses`: every `0x[0-9a-f]+` in the text.
pub(super) fn hex_numbers(
    format: &'static str,
    line: usize,
    t: &str,
) -> Result<Vec<u64>, InputError> {
    let mut out = Vec::new();
    let mut rest = t;
    while let Some(i) = rest.find("0x") {
        let h = &rest[i + 2..];
        let n = h
            .bytes()
            .take_while(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
            .count();
        if n == 0 {
            rest = &rest[i + 1..];
            continue;
        }
        out.push(u64::from_str_radix(&h[..n], 16).map_err(|_| {
            bad(
                format,
                line,
                format!("`0x{}` is not a 64-bit address", &h[..n]),
            )
        })?);
        rest = &h[n..];
    }
    Ok(out)
}

//! Go's `debug=1` count profiles, what `/debug/pprof/goroutine?debug=1` and
//! `/debug/pprof/threadcreate?debug=1` serve (the runtime's `printCountProfile`), read
//! as pprof's `parseGoCount` reads them:
//!
//! ```text
//! goroutine profile: total 6
//! 5 @ 0x437fb6 0x40619b 0x405cd8 0x4d4a7b 0x462b21
//! #   0x4d4a7a    main.parked+0x1a    /tmp/profiles/main.go:109
//! ```
//!
//! Each record is `count @ stack`, the stack as return addresses (pprof takes one off
//! each, the leaf's too: a parked goroutine's leaf is a return address); `#` lines (the
//! frames symbolized, labels) are skipped, a `---` line ends the records and a maps
//! section may follow. One sample type, `goroutine`, `threadcreate` or the name of a
//! program's own profile (`pprof.NewProfile("example.com/conns")`), unit `count`.
//! pprof refuses a record without addresses (`threadcreate` at `debug=1` writes
//! `N @` for threads created before profiling started), and so does this reader.

use super::gperftools::{addresses, bad, origin_of, trim_start, Kind, Records, OWN_COUNT};
use super::{Format, Input, InputError};
use crate::limits::Limits;

/// `NAME profile: total N` as the first line that is not blank or a comment.
pub const GO_COUNT: Format = Format {
    name: "Go count profile (goroutine, threadcreate, a program's own; debug=1)",
    sniff: |b| header_line(b).and_then(kind_of).is_some(),
    read,
};

/// The first line that is not blank or a `#` comment, as bytes (pprof skips them).
fn header_line(b: &[u8]) -> Option<&[u8]> {
    b.split(|&c| c == b'\n')
        .map(trim_start)
        .find(|l| !l.is_empty() && !l.starts_with(b"#"))
}

/// The profile type of a `NAME profile: total N` header, if it is one.
fn kind_of(line: &[u8]) -> Option<&[u8]> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let at = line.windows(16).position(|w| w == b" profile: total ")?;
    let (name, total) = (&line[..at], &line[at + 16..]);
    let ok = !name.is_empty()
        && !name.iter().any(u8::is_ascii_whitespace)
        && !total.is_empty()
        && total.iter().all(u8::is_ascii_digit);
    ok.then_some(name)
}

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    const F: &str = GO_COUNT.name;
    let text = super::gperftools::text(F, bytes)?;
    let mut lines = text.lines().enumerate().map(|(n, l)| (n + 1, l));
    let (n, header) = lines
        .by_ref()
        .find(|(_, l)| !is_space_or_comment(l))
        .ok_or_else(|| bad(F, 1, "empty"))?;
    let name =
        kind_of(header.as_bytes()).ok_or_else(|| bad(F, n, "expected `NAME profile: total N`"))?;
    // Go names its own two; any other is a program's `pprof.NewProfile(NAME)`, whose
    // type pprof shows as NAME (its `countStartRE` takes any `\S+`).
    let (kind, own) = match name {
        b"goroutine" => (Kind::Count("goroutine"), None),
        b"threadcreate" => (Kind::Count("threadcreate"), None),
        // UTF-8: `text` above checked the whole file.
        other => (OWN_COUNT, Some(String::from_utf8_lossy(other).into_owned())),
    };
    let mut r = Records::new(F, limits, bytes.len(), 1);
    for (n, l) in lines.by_ref() {
        if is_space_or_comment(l) {
            continue;
        }
        if l.starts_with("---") {
            break;
        }
        let at = || format!("line {n} of the {F}");
        let (count, stack) = record(l).ok_or_else(|| {
            bad(
                F,
                n,
                format!("expected `COUNT @ 0xADDR …` (at least one address), found `{l}`"),
            )
        })?;
        let count =
            go_uint(count).ok_or_else(|| bad(F, n, format!("`{count}` is not a 64-bit count")))?;
        r.values(&at, [count, 0], addresses(F, n, stack)?)?;
    }
    r.additional_sections(&mut lines)?;
    r.count_type(own);
    Ok(r.finish(origin_of(kind)))
}

/// pprof's `isSpaceOrComment`.
pub(super) fn is_space_or_comment(l: &str) -> bool {
    let t = l.trim();
    t.is_empty() || t.starts_with('#')
}

/// pprof's `countRE`, `\A(\d+) @(( 0x[0-9a-f]+)+)\z`: (count, addresses).
fn record(l: &str) -> Option<(&str, &str)> {
    let (count, stack) = l.split_once(" @")?;
    let hex = |t: &str| !t.is_empty() && t.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let ok = !count.is_empty()
        && count.bytes().all(|c| c.is_ascii_digit())
        && stack.starts_with(" 0x")
        && stack[1..]
            .split(' ')
            .all(|a| a.strip_prefix("0x").is_some_and(hex));
    ok.then_some((count, stack))
}

/// Digits as Go's `strconv.ParseInt(s, 0, 64)` reads them: a leading 0 is octal.
pub(super) fn go_uint(s: &str) -> Option<u64> {
    let v = match s.strip_prefix('0').filter(|r| !r.is_empty()) {
        Some(octal) => u64::from_str_radix(octal, 8).ok()?,
        None => s.parse().ok()?,
    };
    (v <= i64::MAX as u64).then_some(v)
}

//! Java's legacy heap and contention profiles (Google's Java agent: `heapz`,
//! `contentionz`), read as pprof's `legacy_java_profile.go` (`parseJavaProfile`) reads
//! them:
//!
//! ```text
//! --- heapz 1 ---
//! format = java
//! resolution = bytes
//!  6291456 12 @ 0x1 0x2 0x3
//!  0x1 java.util.Arrays.copyOf (Arrays.java:3512)
//!  0x2 com.example.Cache.put (Cache.java:42)
//! ```
//!
//! `key = value` attributes, then one record per line, `VALUE COUNT @ addresses` (the
//! two numbers the other way round from the C++ formats: bytes and objects for a heap,
//! delay and contentions for contention), then one line per address naming its frame,
//! `0xADDR function (file:line)`, which the file carries itself: nothing to symbolize.
//! A heap record is unsampled at Java's fixed 512 KiB interval (pprof's
//! `javaHeapzSamplingRate`), with its object size as the `bytes` label; a contention
//! record is multiplied by the `sampling period`. The sample types' units are the
//! `resolution` attribute; a file without one has no sample types, and pprof refuses
//! its records, as heapsnap does.
//!
//! No program on this machine writes these files (the agent is Google's own); the
//! tests compare with `go tool pprof` reading the same text.

use super::contention::{addresses_text, go_int, hex_numbers};
use super::go_count::go_uint;
use super::gperftools::{bad, Kind};
use super::{Format, Input, InputError};
use crate::limits::{Budget, Limits};
use crate::profile::{Builder, Line};
use rustc_hash::FxHashMap as HashMap;

/// pprof's `javaHeapzSamplingRate`: the mean bytes between two sampled allocations.
const HEAPZ_SAMPLING_RATE: i64 = 524_288;

/// `--- heapz 1 ---`, or `--- contentionz 1 ---` with Java's attributes.
pub const JAVA: Format = Format {
    name: "Java profile (heapz, contentionz)",
    sniff,
    read,
};

/// Which Java profile a header line starts, if it starts one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Type {
    Heap,
    Contention,
}

fn header_type(line: &str) -> Option<Type> {
    match line.trim() {
        "--- heapz 1 ---" => Some(Type::Heap),
        "--- contentionz 1 ---" => Some(Type::Contention),
        _ => None,
    }
}

/// A heapz header; a contentionz header only with a `format` or `resolution`
/// attribute, which pprof's C++ contention parser refuses (its `parseJavaProfile` then
/// reads the file): without them it is the C++ `--- contentionz` text.
fn sniff(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    let mut lines = text.split_inclusive('\n');
    match lines
        .next()
        .filter(|l| l.ends_with('\n'))
        .and_then(header_type)
    {
        Some(Type::Heap) => true,
        Some(Type::Contention) => lines
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map_while(attribute)
            .any(|(k, _)| k == "format" || k == "resolution"),
        None => false,
    }
}

/// pprof's `attributeRx`, `([\w ]+)=([\w ]+)`, found anywhere in the line (leftmost
/// first): (key, value), both trimmed.
fn attribute(line: &str) -> Option<(&str, &str)> {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b' ';
    let b = line.as_bytes();
    let eq = (0..b.len()).find(|&i| {
        b[i] == b'=' && i > 0 && word(b[i - 1]) && b.get(i + 1).is_some_and(|&c| word(c))
    })?;
    let start = eq - b[..eq].iter().rev().take_while(|&&c| word(c)).count();
    let end = eq + 1 + b[eq + 1..].iter().take_while(|&&c| word(c)).count();
    Some((line[start..eq].trim(), line[eq + 1..end].trim()))
}

/// pprof's `javaSampleRx`, ` *(\d+) +(\d+) +@ +([ x0-9a-f]*)`, found anywhere in the
/// line (leftmost first): (first number, second number, the addresses' text).
fn sample(l: &str) -> Option<(&str, &str, &str)> {
    let b = l.as_bytes();
    let digits = |i: usize| b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let spaces = |i: usize| b[i..].iter().take_while(|&&c| c == b' ').count();
    let mut s = 0;
    while s < b.len() {
        if !b[s].is_ascii_digit() {
            s += 1;
            continue;
        }
        // Greedy runs that cannot give back: a digit run must end in a space.
        let j = s + digits(s);
        let m = j + spaces(j);
        let e = m + digits(m);
        let at = e + spaces(e);
        if m > j && e > m && at > e && b.get(at) == Some(&b'@') {
            let after = at + 1 + spaces(at + 1);
            if after > at + 1 {
                return Some((&l[s..j], &l[m..e], addresses_text(&l[after..])));
            }
        }
        s = j;
    }
    None
}

/// pprof's `javaLocationRx`, `^\s*0x([[:xdigit:]]+)\s+(.*)\s*$`: (hex digits, the
/// frame's text).
fn location(l: &str) -> Option<(&str, &str)> {
    let rest = l.trim_start().strip_prefix("0x")?;
    let n = rest.bytes().take_while(u8::is_ascii_hexdigit).count();
    let after = &rest[n..];
    let text = after.trim_start();
    (n > 0 && text.len() < after.len()).then(|| (&rest[..n], text.trim_end()))
}

/// The last `\s(` of `text` whose part before the final `)` satisfies `inner`, as
/// pprof's greedy `^(.*)\s+\((…)\)$` splits a frame: (function, inside).
fn split_paren(text: &str, inner: impl Fn(&str) -> bool) -> Option<(&str, &str)> {
    let body = text.strip_suffix(')')?;
    let b = body.as_bytes();
    (1..b.len())
        .rev()
        .filter(|&p| b[p] == b'(' && b[p - 1].is_ascii_whitespace())
        .map(|p| (&body[..p - 1], &body[p + 1..]))
        .find(|(_, inside)| inner(inside))
}

/// A frame's text as pprof reads it: `function (file:line)`, `function (path)` (a
/// shared library: its file name), a JIT stub, or the whole text as the function (the
/// agent's `GC`, `VM`): (function, file, line).
fn frame(text: &str) -> (&str, &str, i64) {
    let file_line = |inside: &str| {
        inside.rsplit_once(':').is_some_and(|(file, n)| {
            let digits = n.strip_prefix('-').unwrap_or(n);
            !file.is_empty() && !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
        })
    };
    if let Some((function, inside)) = split_paren(text, file_line) {
        let (file, n) = inside.rsplit_once(':').unwrap_or((inside, ""));
        let line = n.parse::<i64>().ok().filter(|&n| n > 0).unwrap_or(0);
        return (function, file, line);
    }
    if let Some((function, path)) = split_paren(text, |_| true) {
        return (function, base_name(path), 0);
    }
    if text.contains("generated stub/JIT") {
        return ("STUB", "", 0);
    }
    (text, "", 0)
}

/// Go's `filepath.Base`: the last element, trailing slashes dropped; `.` for "".
fn base_name(path: &str) -> &str {
    if path.is_empty() {
        return ".";
    }
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "/";
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

fn read(bytes: &[u8], limits: &Limits) -> Result<Input, InputError> {
    const F: &str = JAVA.name;
    let text = super::gperftools::text(F, bytes)?;
    // pprof reads the header, attribute and record sections a whole line at a time
    // (a last line without its line end is left to the frame section).
    let mut lines = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(n, l)| (n + 1, l))
        .peekable();
    let ty = lines
        .next()
        .filter(|(_, l)| l.ends_with('\n'))
        .and_then(|(_, l)| header_type(l))
        .ok_or_else(|| {
            bad(
                F,
                1,
                "expected `--- heapz 1 ---` or `--- contentionz 1 ---`",
            )
        })?;
    let mut b = Builder::new();
    // The last `resolution` (pprof sets the sample types anew at each one).
    let mut resolution: Option<&str> = None;
    let mut period = 0i64;
    while let Some(&(n, l)) = lines.peek().filter(|(_, l)| l.ends_with('\n')) {
        let l = l.trim();
        if l.is_empty() {
            lines.next();
            continue;
        }
        let Some((key, value)) = attribute(l) else {
            break;
        };
        let int = || {
            go_int(value).ok_or_else(|| bad(F, n, format!("{key}: `{value}` is not an integer")))
        };
        match (ty, key) {
            (_, "format") if value != "java" => {
                return Err(bad(F, n, format!("format `{value}`: expected `java`")))
            }
            (_, "format") => {}
            (_, "resolution") => resolution = Some(value),
            (Type::Contention, "sampling period") => {
                period = int()?;
                b.period("contentions", "count", period);
            }
            (Type::Contention, "ms since reset") => {
                b.header_mut().duration_nanos = int()?.wrapping_mul(1_000_000);
            }
            _ => {
                return Err(bad(
                    F,
                    n,
                    format!(
                        "unknown attribute `{key}` (expected format, resolution{})",
                        if ty == Type::Contention {
                            ", sampling period or ms since reset"
                        } else {
                            ""
                        }
                    ),
                ))
            }
        }
        lines.next();
    }

    let types = resolution.is_some();
    if let Some(unit) = resolution {
        let (count, value) = match ty {
            Type::Heap => ("inuse_objects", "inuse_space"),
            Type::Contention => ("contentions", "delay"),
        };
        b.sample_type(count, "count");
        b.sample_type(value, unit);
    }

    // The records, with the addresses in the order first seen.
    let mut budget = Budget::new(limits, bytes.len() as u64);
    let mut records: Vec<(Vec<u64>, [i64; 2], Option<i64>)> = Vec::new();
    let mut frames: HashMap<u64, Option<(&str, &str, i64)>> = HashMap::default();
    while let Some(&(n, l)) = lines.peek().filter(|(_, l)| l.ends_with('\n')) {
        let l = l.trim();
        if l.is_empty() {
            lines.next();
            continue;
        }
        let Some((first, second, stack)) = sample(l) else {
            break;
        };
        let at = || format!("line {n} of the {F}");
        if !types {
            return Err(bad(
                F,
                n,
                "a record before any `resolution` attribute: the sample types are unknown",
            ));
        }
        let int = |s: &str| {
            go_uint(s)
                .map(|v| v as i64)
                .ok_or_else(|| bad(F, n, format!("`{s}` is not a 64-bit integer")))
        };
        // Java writes the value first and the count second.
        let (mut count, mut value) = (int(second)?, int(first)?);
        let mut size = None;
        match ty {
            Type::Heap => {
                if count == 0 {
                    return Err(bad(F, n, "the second value (objects) must be non-zero"));
                }
                size = Some(value / count);
                (count, value) =
                    crate::import::scale_heap_sample(count, value, HEAPZ_SAMPLING_RATE);
            }
            Type::Contention if period != 0 => {
                count = count.wrapping_mul(period);
                value = value.wrapping_mul(period);
            }
            Type::Contention => {}
        }
        let stack = hex_numbers(F, n, stack)?;
        budget.charge(2 + stack.len() as u64, at)?;
        budget.cap(
            "table-entries",
            records.len() as u64 + 1,
            || "samples".into(),
            at,
        )?;
        budget.cap(
            "stack-depth",
            stack.len() as u64,
            || "frames in one stack".into(),
            at,
        )?;
        for &a in &stack {
            if !frames.contains_key(&a) {
                budget.charge(4, at)?;
                budget.cap(
                    "table-entries",
                    frames.len() as u64 + 1,
                    || "locations".into(),
                    at,
                )?;
                frames.insert(a, None);
            }
        }
        records.push((stack, [count, value], size));
        lines.next();
    }

    // The frames: a line for an address no record has is skipped, a later line for
    // an address replaces an earlier one (as pprof does).
    for (n, l) in lines {
        let Some((hex, text)) = location(l) else {
            continue;
        };
        let a = u64::from_str_radix(hex, 16)
            .map_err(|_| bad(F, n, format!("`0x{hex}` is not a 64-bit address")))?;
        if let Some(slot) = frames.get_mut(&a) {
            *slot = Some(frame(text));
        }
    }

    // The profile: one function per name (its first file, as pprof keeps it); the
    // builder keeps one location per frame (named) or per address (unnamed).
    let mut functions: HashMap<&str, u64> = HashMap::default();
    for (stack, values, size) in records {
        let mut ids = Vec::with_capacity(stack.len());
        for a in stack {
            let id = match frames.get(&a).copied().flatten() {
                Some((name, file, line)) => {
                    let f = *functions
                        .entry(name)
                        .or_insert_with(|| b.function(name, name, file, 0));
                    let line = Line {
                        function_id: f,
                        line,
                        column: 0,
                    };
                    b.location(0, 0, vec![line], false)
                }
                // No frame line: the address, for want of a name (pprof keeps such a
                // location without one).
                None => b.location(0, a, vec![], false),
            };
            ids.push(id);
        }
        let labels = size
            .map(|s| vec![b.num_label("bytes", s, "")])
            .unwrap_or_default();
        b.sample(ids, crate::profile::values(&values), labels);
    }
    // pprof's addLegacyFrameInfo, by the sample types.
    let (drop, keep) = super::snapshot::legacy_frames(match ty {
        Type::Heap => Kind::Heap,
        Type::Contention => Kind::Contention,
    });
    let (drop, keep) = (b.string(drop), b.string(keep));
    let h = b.header_mut();
    h.drop_frames = drop;
    h.keep_frames = keep;
    Ok(Input::Profile(b.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_as_pprofs_regular_expressions() {
        assert_eq!(
            frame("com.example.Cache.put (Cache.java:42)"),
            ("com.example.Cache.put", "Cache.java", 42)
        );
        // A line number that is not positive is none; a `(x)` inside the name stays.
        assert_eq!(frame("a.b(c) (F.java:-1)"), ("a.b(c)", "F.java", 0));
        assert_eq!(
            frame("memcpy (/lib/x86_64/libc.so.6)"),
            ("memcpy", "libc.so.6", 0)
        );
        assert_eq!(
            frame("Interpreter (generated stub/JIT)"),
            ("Interpreter", "JIT", 0)
        );
        assert_eq!(frame("[generated stub/JIT]"), ("STUB", "", 0));
        assert_eq!(frame("GC"), ("GC", "", 0));
        assert_eq!(
            location("  0x1aB  f (F.java:3) "),
            Some(("1aB", "f (F.java:3)"))
        );
        assert_eq!(location("0x12"), None);
    }

    /// A second `resolution` replaces the first, as in pprof: two sample types, not
    /// four (found by the `import_guess` fuzz target).
    #[test]
    fn a_repeated_resolution_gives_two_sample_types() {
        let text =
            "--- heapz 1 ---\nresolution = bytes\nresolution = kilobytes\n 64 1 @ 0x1\n 0x1 f\n";
        let Input::Profile(p) = read(text.as_bytes(), &Limits::default()).unwrap() else {
            panic!("not a profile");
        };
        p.check_valid().unwrap();
        assert_eq!(
            p.sample_types(),
            vec![("inuse_objects", "count"), ("inuse_space", "kilobytes")]
        );
    }

    #[test]
    fn records_and_attributes_match_anywhere_in_the_line() {
        assert_eq!(sample("10 2 @ 0x1 0x2"), Some(("10", "2", "0x1 0x2")));
        assert_eq!(sample("x 10  2  @  0x1"), Some(("10", "2", "0x1")));
        assert_eq!(sample("10 2 @0x1"), None);
        assert_eq!(sample("102 @ 0x1"), None);
        assert_eq!(
            attribute("sampling period = 100"),
            Some(("sampling period", "100"))
        );
        assert_eq!(attribute("format=java"), Some(("format", "java")));
        assert_eq!(attribute("10 2 @ 0x1"), None);
        assert_eq!(base_name("/usr/lib/"), "lib");
        assert_eq!(base_name(""), ".");
    }
}

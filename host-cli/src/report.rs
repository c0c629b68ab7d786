//! Text reports as `go tool pprof` prints them: its unit scaling (`measurement.Scale`,
//! one output unit per report chosen like `selectOutputUnit`), its percentages, and the
//! `-top` table layout, so `heapsnap top` can be compared with pprof line by line.
//! The numbers come from [`heapsnap_profile::analysis::top`]; this module only formats.

use heapsnap_profile::analysis::{Inline, TopTable};
use std::borrow::Cow;

/// Text from a file (names, types, units, comments, paths), made safe for a terminal:
/// every control character (C0 including ESC, BEL, CR, LF and TAB; DEL; C1 U+0080 to
/// U+009F) shown as a visible escape (`\x1b`, `\n`, `\u{9b}`), as `ls` and
/// `go tool pprof` show them, so a profile cannot clear the screen, set the title or
/// the clipboard, or split a table row. The Unicode bidirectional controls (U+061C,
/// U+200E/F, U+202A to U+202E, U+2066 to U+2069) are escaped too: they reorder what
/// follows them on the line ("Trojan Source"), so a name could make a row read as
/// another. Other characters, any Unicode, are kept; so is the backslash (Windows
/// paths, and pprof prints it as is, which `top` must match), at the price that a name
/// spelled with a literal `\x1b` reads like an escaped one.
pub fn printable(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// [`printable`] for multi-line text made here (a data format shown on a terminal):
/// newlines are kept, every other control character is escaped.
pub fn printable_lines(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_newlines: bool) -> Cow<'_, str> {
    let bidi = |c: char| matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let bad = |c: char| (c.is_control() || bidi(c)) && !(keep_newlines && c == '\n');
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            _ if !bad(c) => o.push(c),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x80 => o.push_str(&format!("\\x{:02x}", c as u32)),
            c => o.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(o)
}

/// An error and its causes as one line (`what: why: deeper why`), each text once: a
/// cause whose text the line already ends with (a wrapper whose message includes its
/// source's) is not repeated.
pub fn error_line<'a>(
    chain: impl IntoIterator<Item = &'a (dyn std::error::Error + 'static)>,
) -> String {
    let mut line = String::new();
    for e in chain {
        let t = e.to_string();
        if line.ends_with(&t) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&t);
    }
    line
}

/// pprof's memory units: canonical name and factor.
const MEMORY: [(&str, f64); 6] = [
    ("B", 1.0),
    ("kB", 1024.0),
    ("MB", 1048576.0),
    ("GB", 1073741824.0),
    ("TB", 1099511627776.0),
    ("PB", 1125899906842624.0),
];

fn is_bytes(unit: &str) -> bool {
    let u = unit.to_ascii_lowercase();
    let u = u.strip_suffix('s').unwrap_or(&u);
    matches!(u, "b" | "byte")
}

/// pprof's `measurement.Scale(v, unit, "minimum")`: the unit a value would be shown in
/// on its own ("" for counts and unknown units).
pub fn auto_unit(v: i64, unit: &str) -> &'static str {
    if !is_bytes(unit) {
        return "";
    }
    let a = v.unsigned_abs() as f64;
    MEMORY
        .iter()
        .rev()
        .find(|&&(_, f)| a / f >= 1.0)
        .map_or("B", |&(n, _)| n)
}

/// pprof's `selectOutputUnit`: one unit for the whole report, from the smallest
/// non-zero row value and the total (the smallest may drop to 0.01 of the unit).
pub fn output_unit(rows: &[(i64, i64)], total: i64, unit: &str) -> &'static str {
    let mut min = 0i64;
    for &(flat, cum) in rows {
        let m = if flat != 0 {
            flat.wrapping_abs()
        } else {
            cum.wrapping_abs()
        };
        if m > 0 && (min == 0 || m < min) {
            min = m;
        }
    }
    let max = total;
    if min == 0 {
        min = max;
    }
    let (lo, hi) = (auto_unit(min, unit), auto_unit(max, unit));
    if lo != hi && min.saturating_mul(100) < max {
        auto_unit(min.saturating_mul(100), unit)
    } else {
        lo
    }
}

/// pprof's `measurement.ScaledLabel(v, unit, out)`: `%.2f` without a trailing `.00`,
/// then the unit; a zero is plain `0`.
pub fn scaled_label(v: i64, unit: &str, out: &str) -> String {
    let (x, u) = if is_bytes(unit) {
        let f = MEMORY.iter().find(|(n, _)| *n == out).map_or(1.0, |m| m.1);
        (v as f64 / f, if out.is_empty() { "B" } else { out })
    } else {
        (v as f64, "")
    };
    let s = format!("{x:.2}");
    let s = s.strip_suffix(".00").unwrap_or(&s);
    if s == "0" || s == "-0" {
        return "0".into();
    }
    format!("{s}{u}")
}

/// pprof's `measurement.Percentage`: `  100%`, `%5.2f%%` from 1 %, else `%5.2g%%`.
pub fn percentage(v: i64, total: i64) -> String {
    let r = if total != 0 {
        (v as f64 / total as f64).abs() * 100.0
    } else {
        0.0
    };
    if (99.95..=100.05).contains(&r) {
        "  100%".into()
    } else if r >= 1.0 {
        format!("{r:5.2}%")
    } else {
        format!("{:>5}%", go_g2(r))
    }
}

/// Go's `%.2g`: two significant digits, exponent form below 1e-4.
fn go_g2(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let e = format!("{x:.1e}"); // d.de±x
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..2).contains(&exp) {
        let mant = mant.trim_end_matches('0').trim_end_matches('.');
        return format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    }
    let decimals = (1 - exp).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// The `-top` body as pprof prints it: the "Showing nodes…" line, the column header and
/// one row per function (`n` = at most that many rows; pprof's `-nodecount`). `signed`
/// marks positive flat and cum values with `+` (diffs: what grew).
pub fn top_text(t: &TopTable, unit: &str, n: Option<usize>, signed: bool) -> String {
    let rows = match n {
        Some(n) => &t.rows[..n.min(t.rows.len())],
        None => &t.rows[..],
    };
    let vals: Vec<(i64, i64)> = t.rows.iter().map(|r| (r.flat, r.cum)).collect();
    let out = output_unit(&vals, t.total, unit);
    let f = |v: i64| scaled_label(v, unit, out);
    let g = |v: i64| {
        if signed && v > 0 {
            format!("+{}", f(v))
        } else {
            f(v)
        }
    };
    let shown: i64 = rows.iter().map(|r| r.flat).sum();
    let mut s = format!(
        "Showing nodes accounting for {}, {} of {} total\n",
        f(shown),
        percentage(shown, t.total).trim(),
        f(t.total)
    );
    if rows.len() < t.rows.len() {
        s.push_str(&format!(
            "Showing top {} nodes out of {}\n",
            rows.len(),
            t.rows.len()
        ));
    }
    s.push_str(&format!(
        "{:>10} {:>5}% {:>5}% {:>10} {:>5}%\n",
        "flat", "flat", "sum", "cum", "cum"
    ));
    let mut sum = 0i64;
    for r in rows {
        sum += r.flat;
        let inl = match r.inline {
            Inline::No => "",
            Inline::Full => " (inline)",
            Inline::Partial => " (partial-inline)",
        };
        s.push_str(&format!(
            "{:>10} {} {} {:>10} {}  {}{}\n",
            g(r.flat),
            percentage(r.flat, t.total),
            percentage(sum, t.total),
            g(r.cum),
            percentage(r.cum, t.total),
            printable(&r.name),
            inl
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pprof_units_and_percentages() {
        assert_eq!(scaled_label(524308, "bytes", "kB"), "512.02kB");
        assert_eq!(scaled_label(1024, "bytes", "kB"), "1kB");
        assert_eq!(scaled_label(0, "bytes", "MB"), "0");
        assert_eq!(scaled_label(-2048, "bytes", "kB"), "-2kB");
        assert_eq!(scaled_label(12345, "count", ""), "12345");
        assert_eq!(auto_unit(1023, "bytes"), "B");
        assert_eq!(auto_unit(3 << 20, "bytes"), "MB");
        // Smallest 1 kB, total 10 MB: min*100 < max, so 100 kB → still kB.
        assert_eq!(output_unit(&[(1024, 1024)], 10 << 20, "bytes"), "kB");
        assert_eq!(output_unit(&[(2 << 20, 2 << 20)], 10 << 20, "bytes"), "MB");
        assert_eq!(percentage(1, 1), "  100%");
        assert_eq!(percentage(1, 3), "33.33%");
        assert_eq!(percentage(1, 200), "  0.5%");
        assert_eq!(percentage(1, 813), " 0.12%");
        assert_eq!(percentage(0, 813), "    0%");
        assert_eq!(percentage(1, 10_000_000), "1e-05%");
        assert_eq!(go_g2(0.0123), "0.012");
        assert_eq!(go_g2(0.99), "0.99");
        assert_eq!(go_g2(0.995), "0.99");
    }

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(printable("plain ünïcode → ok"), "plain ünïcode → ok");
        assert_eq!(
            printable("a\x1b]0;title\x07b\r\n\t\x7f\u{9b}2J\u{85}"),
            "a\\x1b]0;title\\x07b\\r\\n\\t\\x7f\\u{9b}2J\\u{85}"
        );
        assert_eq!(printable_lines("a;b 1\nc\x1bd 2\n"), "a;b 1\nc\\x1bd 2\n");
        // Bidirectional overrides and isolates are shown, not obeyed.
        assert_eq!(
            printable("main\u{202e}cod\u{2066}x\u{2069}\u{200f}"),
            "main\\u{202e}cod\\u{2066}x\\u{2069}\\u{200f}"
        );
    }
}

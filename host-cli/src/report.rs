//! Text reports as `go tool pprof` prints them: its unit scaling (`measurement.Scale`,
//! one output unit per report chosen like `selectOutputUnit`), its percentages, and the
//! `-top` table layout, so `heapsnap top` can be compared with pprof line by line.
//! The numbers come from [`heapsnap_profile::analysis::top`]; this module only formats.

use heapsnap_profile::analysis::{output_unit, percentage, scaled_label, Inline, TopTable};

pub use heapsnap_profile::text::{printable, printable_lines};

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

/// The `-top` body as pprof prints it: the "Showing nodes…" line, the column header and
/// one row per function (`n` = at most that many rows; pprof's `-nodecount`). A diff's
/// values are signed as pprof prints them (`-4096kB`, `37.69kB`).
pub fn top_text(t: &TopTable, unit: &str, n: Option<usize>) -> String {
    let rows = match n {
        Some(n) => &t.rows[..n.min(t.rows.len())],
        None => &t.rows[..],
    };
    // pprof picks the unit over the nodes it shows (after `-nodecount`).
    let out = output_unit(rows.iter().map(|r| (r.flat, r.cum)), t.total, unit);
    let f = |v: i64| scaled_label(v, unit, out);
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
            f(r.flat),
            percentage(r.flat, t.total),
            percentage(sum, t.total),
            f(r.cum),
            percentage(r.cum, t.total),
            printable(&r.name),
            inl
        ));
    }
    s
}

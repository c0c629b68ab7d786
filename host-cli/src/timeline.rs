//! `heapsnap timeline`: the heap over a series of snapshots, as a compact table or CSV.
//! The figures come from [`heapsnap_profile::import::series`] (per point) and
//! [`heapsnap_profile::analysis::growth`] (what grew); this module only formats.

use crate::report::printable;
use heapsnap_profile::analysis::{scaled_label, TopRow};
use heapsnap_profile::import::series::{Item, Point, Series};
use std::fmt::Write;

/// What grew from the first good point to the last: rows of the diff's top table and
/// the unit of their values.
pub struct Growth {
    /// The rows, most grown first.
    pub rows: Vec<TopRow>,
    /// Their unit (`bytes`).
    pub unit: String,
}

/// One row of the timeline per point of the series.
fn points(s: &Series) -> Vec<(&Item, Point)> {
    s.items
        .iter()
        .map(|i| (i, heapsnap_profile::import::series::point(&i.input)))
        .collect()
}

/// Where the in-use figures come from, for the header: the same for every row, or
/// mixed (then the rows say).
fn source_of(points: &[(&Item, Point)]) -> &'static str {
    let exact = points
        .iter()
        .filter(|(_, p)| p.in_use.is_some_and(|u| u.exact))
        .count();
    let estimated = points
        .iter()
        .filter(|(_, p)| p.in_use.is_some_and(|u| !u.exact))
        .count();
    match (exact, estimated) {
        (_, 0) => "exact heap totals (the device counted every allocation and free)",
        (0, _) => "sampled estimate (the device did not count exact totals: in use unsampled from the samples, as `heapsnap top` totals it)",
        _ => "exact heap totals where the device counted them, else the sampled estimate (column `in use from`)",
    }
}

fn source_word(p: &Point) -> &'static str {
    match p.in_use {
        Some(u) if u.exact => "exact",
        Some(_) => "sampled",
        None => "none",
    }
}

fn drops_text(p: &Point, sep: &str) -> String {
    p.drops
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(sep)
}

fn opt(v: Option<impl ToString>) -> String {
    v.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// The compact table: a header saying what was read and where in-use figures come
/// from, one row per good point, the bad frames with their offsets, then the
/// functions that grew most (exact values and pprof's scaled label).
pub fn table(s: &Series, growth: Option<&Growth>) -> String {
    let pts = points(s);
    let mut o = String::new();
    let good = s.items.len();
    if s.frames > 0 {
        let _ = writeln!(
            o,
            "{} snapshot(s): {} frame(s) in the capture, {good} good, {} bad",
            good,
            s.frames,
            s.bad.len()
        );
    } else {
        let _ = writeln!(o, "{good} snapshot(s)");
    }
    let _ = writeln!(o, "in use: {}", source_of(&pts));
    let mixed = pts.iter().any(|(_, p)| p.in_use.is_some_and(|u| u.exact))
        && pts.iter().any(|(_, p)| !p.in_use.is_some_and(|u| u.exact));
    let _ = write!(
        o,
        "{:>5} {:>10} {:>14} {:>13} {:>10}",
        "index", "cycle", "inuse_bytes", "inuse_objects", "offset"
    );
    if mixed {
        let _ = write!(o, " {:>11}", "in use from");
    }
    let names = s.frames == 0 || s.items.iter().any(|i| i.offset.is_none());
    let _ = writeln!(o, "  drops{}", if names { "  name" } else { "" });
    for (i, (item, p)) in pts.iter().enumerate() {
        let _ = write!(
            o,
            "{i:>5} {:>10} {:>14} {:>13} {:>10}",
            opt(p.cycle),
            opt(p.in_use.map(|u| u.bytes)),
            opt(p.in_use.map(|u| u.objects)),
            opt(item.offset),
        );
        if mixed {
            let _ = write!(o, " {:>11}", source_word(p));
        }
        let drops = drops_text(p, " ");
        let _ = write!(o, "  {}", if drops.is_empty() { "-" } else { &drops });
        if names {
            let _ = write!(o, "  {}", printable(&item.name));
        }
        o.push('\n');
    }
    if !s.bad.is_empty() {
        let _ = writeln!(o, "bad frames ({}):", s.bad.len());
        for b in &s.bad {
            let _ = writeln!(
                o,
                "  {} offset {} ({} bytes): {}",
                printable(&b.name),
                b.offset,
                b.len,
                printable(&b.error)
            );
        }
    }
    if let Some(g) = growth {
        let (first, last) = (&pts[0], &pts[pts.len() - 1]);
        let _ = writeln!(
            o,
            "top {} growing functions by inuse_space, first to last snapshot ({} -> {}):",
            g.rows.len(),
            printable(&first.0.name),
            printable(&last.0.name)
        );
        if g.rows.is_empty() {
            let _ = writeln!(o, "  (none grew)");
        }
        let _ = writeln!(o, "{:>12} {:>10} {:>12}  function", "flat", "", "cum");
        for r in &g.rows {
            let _ = writeln!(
                o,
                "{:>+12} {:>10} {:>+12}  {}",
                r.flat,
                format!("({})", scaled_label(r.flat, &g.unit, "auto")),
                r.cum,
                printable(&r.name)
            );
        }
    }
    o
}

/// CSV for scripts (RFC 4180): one header row, one row per good point; in-use figures
/// as exact integers, `in_use_from` = `exact`|`sampled`, drops as `name=value` joined
/// by `;`. Bad frames and growth are not rows: the table shows them.
pub fn csv(s: &Series) -> String {
    let mut o =
        String::from("index,name,offset,cycle,inuse_bytes,inuse_objects,in_use_from,drops\n");
    for (i, (item, p)) in points(s).iter().enumerate() {
        let blank = |v: Option<String>| v.unwrap_or_default();
        let _ = writeln!(
            o,
            "{i},{},{},{},{},{},{},{}",
            csv_field(&item.name),
            blank(item.offset.map(|v| v.to_string())),
            blank(p.cycle.map(|v| v.to_string())),
            blank(p.in_use.map(|u| u.bytes.to_string())),
            blank(p.in_use.map(|u| u.objects.to_string())),
            source_word(p),
            csv_field(&drops_text(p, ";")),
        );
    }
    o
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

//! `heapsnap timeline`: the heap over a series of snapshots, as a compact table or CSV.
//! The figures come from [`heapsnap_profile::import::series`] (per point) and
//! [`heapsnap_profile::analysis::growth`] (what grew); this module only formats.
//! A point with a device timestamp shows it in seconds (`time_s`, the table shows the
//! column when any point has one; the CSV always has the columns, empty when absent).

use crate::report::printable;
use heapsnap_profile::analysis::{scaled_label, TopRow};
use heapsnap_profile::import::series::{Points, Row};
use std::fmt::Write;

/// What grew from the first good point to the last: rows of the diff's top table and
/// the unit of their values.
pub struct Growth {
    /// The rows, most grown first.
    pub rows: Vec<TopRow>,
    /// Their unit (`bytes`).
    pub unit: String,
}

/// Where the in-use figures come from, for the header: the same for every row, or
/// mixed (then the rows say).
fn in_use_from(rows: &[Row]) -> &'static str {
    let exact = rows
        .iter()
        .filter(|r| r.point.in_use.is_some_and(|u| u.exact))
        .count();
    let estimated = rows
        .iter()
        .filter(|r| r.point.in_use.is_some_and(|u| !u.exact))
        .count();
    match (exact, estimated) {
        (_, 0) => "exact heap totals (the device counted every allocation and free)",
        (0, _) => "sampled estimate (the device did not count exact totals: in use unsampled from the samples, as `heapsnap top` totals it)",
        _ => "exact heap totals where the device counted them, else the sampled estimate (column `in use from`)",
    }
}

fn in_use_from_word(p: &heapsnap_profile::import::series::Point) -> &'static str {
    match p.in_use {
        Some(u) if u.exact => "exact",
        Some(_) => "sampled",
        None => "none",
    }
}

fn drops_text(p: &heapsnap_profile::import::series::Point, sep: &str) -> String {
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
pub fn table(s: &Points, growth: Option<&Growth>) -> String {
    let pts = &s.rows;
    let mut o = String::new();
    let good = pts.len();
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
    let _ = writeln!(o, "in use: {}", in_use_from(pts));
    let mixed = pts.iter().any(|r| r.point.in_use.is_some_and(|u| u.exact))
        && pts.iter().any(|r| !r.point.in_use.is_some_and(|u| u.exact));
    let timed = pts.iter().any(|r| r.point.timestamp.is_some());
    if timed {
        let _ = writeln!(
            o,
            "time: the device's clock (time_s = ticks / ticks per second; - where a snapshot has none)"
        );
    }
    let _ = write!(o, "{:>5} {:>10}", "index", "cycle");
    if timed {
        let _ = write!(o, " {:>14}", "time_s");
    }
    let _ = write!(
        o,
        " {:>14} {:>13} {:>10}",
        "inuse_bytes", "inuse_objects", "offset"
    );
    if mixed {
        let _ = write!(o, " {:>11}", "in use from");
    }
    let names = s.frames == 0 || pts.iter().any(|r| r.offset.is_none());
    let _ = writeln!(o, "  drops{}", if names { "  name" } else { "" });
    for (i, item) in pts.iter().enumerate() {
        let p = &item.point;
        let _ = write!(o, "{i:>5} {:>10}", opt(p.cycle));
        if timed {
            let _ = write!(o, " {:>14}", opt(p.timestamp.map(|t| seconds(&t))));
        }
        let _ = write!(
            o,
            " {:>14} {:>13} {:>10}",
            opt(p.in_use.map(|u| u.bytes)),
            opt(p.in_use.map(|u| u.objects)),
            opt(item.offset),
        );
        if mixed {
            let _ = write!(o, " {:>11}", in_use_from_word(p));
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
    if let (Some(g), Some(first), Some(last)) = (growth, pts.first(), pts.last()) {
        let _ = writeln!(
            o,
            "top {} growing functions by inuse_space, first to last snapshot ({} -> {}):",
            g.rows.len(),
            printable(&first.name),
            printable(&last.name)
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
/// by `;`, the device timestamp as its exact ticks and rate (empty when absent). With
/// a growth (two points or more), a blank line and a second table follow: the
/// functions that grew most from the first to the last point, as the table lists them
/// (`flat` and `cum` in `unit`). Bad frames are not rows: the table shows them.
pub fn csv(s: &Points, growth: Option<&Growth>) -> String {
    let mut o = String::from(
        "index,name,offset,cycle,inuse_bytes,inuse_objects,in_use_from,drops,timestamp_ticks,ticks_per_second\n",
    );
    for (i, item) in s.rows.iter().enumerate() {
        let p = &item.point;
        let blank = |v: Option<String>| v.unwrap_or_default();
        let _ = writeln!(
            o,
            "{i},{},{},{},{},{},{},{},{},{}",
            csv_field(&item.name),
            blank(item.offset.map(|v| v.to_string())),
            blank(p.cycle.map(|v| v.to_string())),
            blank(p.in_use.map(|u| u.bytes.to_string())),
            blank(p.in_use.map(|u| u.objects.to_string())),
            in_use_from_word(p),
            csv_field(&drops_text(p, ";")),
            blank(p.timestamp.map(|t| t.ticks.to_string())),
            blank(p.timestamp.map(|t| t.ticks_per_second.to_string())),
        );
    }
    if let Some(g) = growth {
        let _ = writeln!(o, "\nrank,flat,cum,unit,function");
        for (i, r) in g.rows.iter().enumerate() {
            let _ = writeln!(
                o,
                "{},{},{},{},{}",
                i + 1,
                r.flat,
                r.cum,
                csv_field(&g.unit),
                csv_field(&r.name)
            );
        }
    }
    o
}

/// Seconds of a device timestamp, to the microsecond.
fn seconds(t: &sampler_core::snapshot::Timestamp) -> String {
    format!("{:.6}", t.seconds())
}

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

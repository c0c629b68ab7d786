//! Units for values: pprof's `measurement` package as `go tool pprof` 1.19 ships it
//! (`scale`, `scaled_label`, `output_unit`, `percentage`: what `heapsnap top` prints,
//! line for line with `go tool pprof -top`); the viewer labels values with the same
//! scaling (`format_value`) and has its own short percentages (`format_percent`).

/// A value for people as `go tool pprof -top` would print it alone ([`output_unit`]
/// of the value, then [`scaled_label`]: `1.50MB`, `312B`, `4.20ms`, `1.28s`, `12345`,
/// `7widgets`): the viewer's one value format (top, flame tooltips, source, status),
/// the same scaling `heapsnap top` prints with.
pub fn format_value(v: i64, unit: &str) -> String {
    // `output_unit` of one value (smallest = total): its own unit, else `unit`.
    let (_, u) = scale(v.wrapping_abs(), unit, "minimum");
    scaled_label(v, unit, if u.is_empty() { unit } else { u })
}

/// A percentage for the viewer: `100%` within rounding of it, two decimals from 1 %
/// up, two significant digits below (`0.0026%`, `0.5%`), `0%` for zero.
pub fn format_percent(p: f64) -> String {
    let a = p.abs();
    let mut s = String::from(if p < 0.0 { "-" } else { "" });
    if (99.95..=100.05).contains(&a) {
        s.push_str("100");
    } else if a >= 1.0 {
        push_hundredths(&mut s, round_hundredths(a), false);
    } else if a == 0.0 || !a.is_finite() {
        return "0%".into();
    } else {
        // Two significant digits: x in [9.95, 99.5) at 10^-k.
        let (mut x, mut k) = (a * 100.0, 2);
        while x < 9.95 && k < 18 {
            x *= 10.0;
            k += 1;
        }
        s.push_str("0.");
        for _ in 2..k {
            s.push('0');
        }
        let d = (x.round() as u64).min(99);
        // As %g: 0.5, not 0.50.
        s.push_str(&if d % 10 == 0 { d / 10 } else { d }.to_string());
    }
    s.push('%');
    s
}

/// Appends `h` hundredths as `int.ff` (`int` alone for `.00` when `trim`).
/// In u64 (u128 arithmetic is kilobytes of wasm): exact up to 1.8e17 in the unit
/// shown, far beyond any i64 shown in its own best unit; larger values saturate.
fn push_hundredths(s: &mut String, h: u64, trim: bool) {
    s.push_str(&(h / 100).to_string());
    let f = (h % 100) as u8;
    if !(trim && f == 0) {
        s.extend(['.', char::from(b'0' + f / 10), char::from(b'0' + f % 10)]);
    }
}

/// One unit of a pprof unit family: canonical name, lower-case aliases (matched after
/// pprof's `sniffUnit` simplification; `|` between them, a smaller table in the
/// viewer), factor to the family's base unit.
struct MUnit {
    name: &'static str,
    aliases: &'static str,
    factor: f64,
}

/// A family (memory, time, GCU): its units and the default unit a value falls back to.
struct Family {
    units: &'static [MUnit],
    default: (&'static str, f64),
}

const fn u(name: &'static str, aliases: &'static str, factor: f64) -> MUnit {
    MUnit {
        name,
        aliases,
        factor,
    }
}

/// pprof's `unitTypes`, in its order (the first family that knows a unit wins).
const FAMILIES: [Family; 3] = [
    Family {
        units: &[
            u("B", "b|byte", 1.0),
            u("kB", "kb|kbyte|kilobyte", 1024.0),
            u("MB", "mb|mbyte|megabyte", 1048576.0),
            u("GB", "gb|gbyte|gigabyte", 1073741824.0),
            u("TB", "tb|tbyte|terabyte", 1099511627776.0),
            u("PB", "pb|pbyte|petabyte", 1125899906842624.0),
        ],
        default: ("B", 1.0),
    },
    Family {
        units: &[
            u("ns", "ns|nanosecond", 1.0),
            u("us", "μs|us|microsecond", 1e3),
            u("ms", "ms|millisecond", 1e6),
            u("s", "s|sec|second", 1e9),
            u("hrs", "hour|hr", 3.6e12),
        ],
        default: ("s", 1e9),
    },
    Family {
        units: &[
            u("n*GCU", "nanogcu", 1e-9),
            u("u*GCU", "microgcu", 1e-6),
            u("m*GCU", "milligcu", 1e-3),
            u("GCU", "gcu", 1.0),
            u("k*GCU", "kilogcu", 1e3),
            u("M*GCU", "megagcu", 1e6),
            u("G*GCU", "gigagcu", 1e9),
            u("T*GCU", "teragcu", 1e12),
            u("P*GCU", "petagcu", 1e15),
        ],
        default: ("GCU", 1.0),
    },
];

impl Family {
    /// pprof's `sniffUnit`: lower case, one trailing `s` off when longer than two
    /// bytes (so `seconds`, `hours`, `MBs` match; `μs`, three bytes, loses its `s`
    /// and matches nothing, as in pprof), then an alias.
    fn sniff(&self, unit: &str) -> Option<&MUnit> {
        // Go lowers with Unicode `ToLower`, and measures the lowered bytes. Only
        // letters that lower into an alias matter: ASCII, the KELVIN SIGN (3 bytes,
        // lowers to `k`) and capital mu (to the `μ` of `μs`); any other letter matches
        // no alias either way. No Unicode tables in the viewer.
        let mut lower: String = unit
            .chars()
            .map(|c| match c {
                '\u{212A}' => 'k',
                '\u{39C}' => '\u{3BC}',
                c => c.to_ascii_lowercase(),
            })
            .collect();
        if lower.len() > 2 && lower.ends_with('s') {
            lower.pop();
        }
        self.units
            .iter()
            .find(|m| m.aliases.split('|').any(|a| a == lower))
    }

    /// pprof's `autoScale`: the largest unit the value is at least 1 of.
    fn auto_scale(&self, v: f64) -> Option<(f64, &'static str)> {
        let mut best: Option<&MUnit> = None;
        for m in self.units {
            if m.factor >= best.map_or(0.0, |b| b.factor) && v / m.factor >= 1.0 {
                best = Some(m);
            }
        }
        best.map(|m| (v / m.factor, m.name))
    }

    /// pprof's `convertUnit`; `None` when `from` is not of this family.
    fn convert<'a>(&self, value: i64, from: &str, to: &'a str) -> Option<(f64, &'a str)> {
        let f = self.sniff(from)?;
        let v = value as f64 * f.factor;
        let (name, factor) = self.default;
        if to == "minimum" || to == "auto" {
            return Some(self.auto_scale(v).unwrap_or((v / factor, name)));
        }
        Some(match self.sniff(to) {
            Some(t) => (v / t.factor, t.name),
            None => (v / factor, name),
        })
    }
}

/// pprof's `measurement.Scale`: `value` in unit `from` expressed in unit `to`, and
/// the unit to print after it. `to` may be `"minimum"`/`"auto"` (the largest unit of
/// the family the value is at least 1 of). Units pprof does not know keep their value
/// and print `to` as the suffix, except the uninteresting `count`, `sample`, `unit`,
/// `minimum`, `auto` (no suffix).
pub fn scale<'a>(value: i64, from: &str, to: &'a str) -> (f64, &'a str) {
    // As pprof: the magnitude scaled, the sign kept (i64::MIN stays as it is).
    if value < 0 && value != i64::MIN {
        let (v, u) = scale(-value, from, to);
        return (-v, u);
    }
    for fam in &FAMILIES {
        if let Some(r) = fam.convert(value, from, to) {
            return r;
        }
    }
    match to {
        "count" | "sample" | "unit" | "minimum" | "auto" => (value as f64, ""),
        _ => (value as f64, to),
    }
}

/// pprof's `measurement.ScaledLabel`: [`scale`]d, `%.2f` without a trailing `.00`,
/// then the unit; a value that rounds to zero is plain `0`. `to = "auto"` is pprof's
/// `measurement.Label` (each value in its own best unit). Exact (Go's correctly
/// rounded `%.2f`) with integer arithmetic only, so the viewer can call it.
pub fn scaled_label(value: i64, from: &str, to: &str) -> String {
    let (v, u) = scale(value, from, to);
    let hundredths = round_hundredths(v.abs());
    if hundredths == 0 {
        return "0".into();
    }
    let mut s = String::from(if v < 0.0 { "-" } else { "" });
    push_hundredths(&mut s, hundredths, true);
    s.push_str(u);
    s
}

/// `x × 100` rounded to the nearest integer, ties to even, computed exactly from the
/// float's bits (what Go's `%.2f` prints, without float formatting code).
fn round_hundredths(x: f64) -> u64 {
    // Below 0.005 (subnormals included) is 0; so is NaN. Infinity saturates below.
    if x.is_nan() || x < 0.005 {
        return 0;
    }
    let bits = x.to_bits();
    // x = m × 2^e exactly (a normal number); m × 100 < 2^60.
    let (m, e) = (
        (bits & ((1 << 52) - 1)) | 1 << 52,
        (bits >> 52) as i32 - 1075,
    );
    let m = m * 100;
    if e >= 0 {
        // Past u64 (x over 1.8e17): saturated, see `push_hundredths`.
        return 1u64
            .checked_shl(e as u32)
            .and_then(|p| m.checked_mul(p))
            .unwrap_or(u64::MAX);
    }
    let sh = (-e) as u32;
    // x ≥ 0.005 makes e ≥ -60: the shifts below are in range.
    let (q, r) = (m >> sh, m & ((1u64 << sh) - 1));
    let half = 1u64 << (sh - 1);
    if r > half || (r == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

/// pprof's `selectOutputUnit` (report.go): one output unit for a whole report, from
/// the smallest non-zero node value (flat, or cum when flat is 0) and the total; when
/// they differ in unit and the smallest is under 1 % of the total, the unit of 100×
/// the smallest (values may then show as 0.01). Unknown units and counts: `unit`.
pub fn output_unit(nodes: impl IntoIterator<Item = (i64, i64)>, total: i64, unit: &str) -> &str {
    let mut min = 0i64;
    for (flat, cum) in nodes {
        let mut m = flat.wrapping_abs();
        if m == 0 {
            m = cum.wrapping_abs();
        }
        if m > 0 && (min == 0 || m < min) {
            min = m;
        }
    }
    if min == 0 {
        min = total;
    }
    let (_, lo) = scale(min, unit, "minimum");
    let (_, hi) = scale(total, unit, "minimum");
    let mut out = lo;
    if lo != hi && min.wrapping_mul(100) < total {
        out = scale(min.wrapping_mul(100), unit, "minimum").1;
    }
    if out.is_empty() {
        unit
    } else {
        out
    }
}

/// pprof's `measurement.Percentage`: `  100%` within 0.05 of it, `%5.2f%%` from 1 %,
/// else `%5.2g%%` (Go's `%g`: `0.12`, `2.3e-05`).
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

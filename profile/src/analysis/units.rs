//! Human units for values: bytes in B/KiB/MiB/GiB, times in ns…s, counts with k/M.

/// The kind of a sample type's unit, from its pprof unit string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// "bytes" (heap profiles).
    Bytes,
    /// "nanoseconds" (CPU, delay profiles).
    Nanoseconds,
    /// "count" and anything else: plain numbers.
    Count,
}

impl Unit {
    /// Classifies a pprof unit string.
    pub fn of(unit: &str) -> Self {
        match unit {
            "bytes" | "byte" | "B" => Unit::Bytes,
            "nanoseconds" | "ns" => Unit::Nanoseconds,
            _ => Unit::Count,
        }
    }
}

/// Formats `v` in `unit` for people: `1.50 MiB`, `312 B`, `4.20 ms`, `12.3k`.
pub fn format_value(v: i64, unit: &str) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs() as f64;
    let (scaled, suffix) = match Unit::of(unit) {
        Unit::Bytes => {
            const S: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
            let mut x = a;
            let mut i = 0;
            while x >= 1024.0 && i + 1 < S.len() {
                x /= 1024.0;
                i += 1;
            }
            if i == 0 {
                return format!("{sign}{} B", v.unsigned_abs());
            }
            (x, S[i])
        }
        Unit::Nanoseconds => {
            const S: [(f64, &str); 4] = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")];
            let (d, s) = S
                .iter()
                .copied()
                .find(|&(d, _)| a >= d)
                .unwrap_or((1.0, "ns"));
            (a / d, s)
        }
        Unit::Count => {
            if a < 1e5 {
                return format!("{v}");
            }
            let (d, s) = if a >= 1e9 {
                (1e9, "G")
            } else if a >= 1e6 {
                (1e6, "M")
            } else {
                (1e3, "k")
            };
            return format!("{sign}{}{s}", three_digits(a / d));
        }
    };
    format!("{sign}{} {suffix}", three_digits(scaled))
}

/// Three significant digits: 1.23, 12.3, 123. Integer arithmetic only (size: see the
/// crate docs).
fn three_digits(x: f64) -> String {
    if x >= 99.95 {
        format!("{}", x.round() as u64)
    } else if x >= 9.995 {
        fixed(x, 1)
    } else {
        fixed(x, 2)
    }
}

/// `x` with `decimals` (1 or 2) digits after the point, rounded half up.
fn fixed(x: f64, decimals: u32) -> String {
    let scale = 10u64.pow(decimals);
    let n = (x.abs() * scale as f64).round() as u64;
    let sign = if x < 0.0 && n != 0 { "-" } else { "" };
    format!(
        "{sign}{}.{:0width$}",
        n / scale,
        n % scale,
        width = decimals as usize
    )
}

/// A percentage as pprof prints it: `100%` within rounding of it, two decimals from
/// 1% up, two significant digits below (`0.0026%`), `0%` for zero.
pub fn format_percent(p: f64) -> String {
    let a = p.abs();
    let sign = if p < 0.0 { "-" } else { "" };
    if (99.95..=100.05).contains(&a) {
        return format!("{sign}100%");
    }
    if a >= 1.0 {
        return format!("{}%", fixed(p, 2));
    }
    if a == 0.0 || !a.is_finite() {
        return "0%".into();
    }
    // Scale to two significant digits: x in [10, 100) at 10^-k.
    let (mut x, mut k) = (a * 100.0, 2usize);
    while x < 9.95 && k < 18 {
        x *= 10.0;
        k += 1;
    }
    let digits = (x.round() as u64).min(99).to_string();
    let digits = digits.trim_end_matches('0'); // as %g: 0.5, not 0.50
    format!("{sign}0.{}{digits}%", "0".repeat(k - 2))
}

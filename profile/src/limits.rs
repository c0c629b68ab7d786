//! The resource policy (docs/resource-limits.md): how large an input may be and how
//! much every decoder may materialize from it, so that no file, however built, makes
//! memory grow faster than a stated multiple of its own size.
//!
//! One [`Limits`] value is passed to every decoder (pprof, the streaming compact
//! decoder, folded stacks, snapshot conversion); each counts what it builds in a
//! [`Budget`] as it goes and stops with a [`LimitError`] naming the limit, the count,
//! where in the input, and the `--limit NAME=N` that raises it.

use std::fmt;

/// Every limit, with its default. Raise one with [`Limits::set`] (the CLI's
/// `--limit NAME=N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest input file read, in bytes (`input-size`).
    pub input_size: u64,
    /// Largest ELF file read for symbols, in bytes (`elf-size`).
    pub elf_size: u64,
    /// Largest size a gzipped profile may inflate to, in bytes (`inflated-size`).
    pub inflated_size: u64,
    /// Decoded entries allowed regardless of the input's size (`entries-base`).
    pub entries_base: u64,
    /// Decoded entries allowed per byte of input, on top of `entries_base`
    /// (`entries-per-byte`).
    pub entries_per_byte: u64,
    /// Deepest stack (location ids of one sample, frames of one snapshot stack or
    /// folded line) (`stack-depth`).
    pub stack_depth: u64,
    /// Most entries of one table: samples, locations, functions, mappings, strings,
    /// comments (`table-entries`).
    pub table_entries: u64,
    /// Most lines (inlined frames) of one location (`lines-per-location`).
    pub lines_per_location: u64,
    /// Most labels of one sample (`labels-per-sample`).
    pub labels_per_sample: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            input_size: 256 << 20,
            elf_size: 1 << 30,
            inflated_size: crate::profile::DEFAULT_MAX_INFLATED as u64,
            entries_base: 1 << 20,
            entries_per_byte: 8,
            stack_depth: 1 << 16,
            table_entries: 1 << 24,
            lines_per_location: 1 << 10,
            labels_per_sample: 1 << 10,
        }
    }
}

/// The names [`Limits::set`] takes, with what each bounds (for `--help` and errors).
pub const LIMIT_NAMES: &[(&str, &str)] = &[
    ("input-size", "bytes of an input file"),
    ("elf-size", "bytes of an ELF file read for symbols"),
    ("inflated-size", "bytes a gzipped profile inflates to"),
    (
        "entries-base",
        "decoded entries allowed whatever the input size",
    ),
    ("entries-per-byte", "decoded entries allowed per input byte"),
    ("stack-depth", "frames of one stack"),
    (
        "table-entries",
        "entries of one table (samples, locations, …)",
    ),
    (
        "lines-per-location",
        "lines (inlined frames) of one location",
    ),
    ("labels-per-sample", "labels of one sample"),
];

impl Limits {
    /// No limit at all (tests of the decoders' own behaviour, trusted inputs).
    pub const fn unlimited() -> Self {
        Limits {
            input_size: u64::MAX,
            elf_size: u64::MAX,
            inflated_size: u64::MAX,
            entries_base: u64::MAX,
            entries_per_byte: u64::MAX,
            stack_depth: u64::MAX,
            table_entries: u64::MAX,
            lines_per_location: u64::MAX,
            labels_per_sample: u64::MAX,
        }
    }

    /// The slot of a named limit.
    fn slot(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "input-size" => &mut self.input_size,
            "elf-size" => &mut self.elf_size,
            "inflated-size" => &mut self.inflated_size,
            "entries-base" => &mut self.entries_base,
            "entries-per-byte" => &mut self.entries_per_byte,
            "stack-depth" => &mut self.stack_depth,
            "table-entries" => &mut self.table_entries,
            "lines-per-location" => &mut self.lines_per_location,
            "labels-per-sample" => &mut self.labels_per_sample,
            _ => return None,
        })
    }

    /// Sets a limit from `NAME=N`, where N may end in `K`, `M`, `G` (powers of 1024)
    /// or be `none` (no limit).
    pub fn set(&mut self, assignment: &str) -> Result<(), String> {
        let names = || {
            LIMIT_NAMES
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let (name, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("`{assignment}`: expected NAME=N (names: {})", names()))?;
        let value = parse_size(value.trim()).ok_or_else(|| {
            format!("`{value}` is not a number (e.g. 100000, 64K, 512M, 2G, none)")
        })?;
        let slot = self
            .slot(name.trim())
            .ok_or_else(|| format!("unknown limit `{name}` (names: {})", names()))?;
        *slot = value;
        Ok(())
    }

    /// The most entries a decoder may build from `input_len` bytes of input.
    pub fn entry_budget(&self, input_len: u64) -> u64 {
        self.entries_base
            .saturating_add(self.entries_per_byte.saturating_mul(input_len))
    }

    /// The inflated-size cap as a `usize` (saturating on 32-bit targets).
    pub fn inflated_cap(&self) -> usize {
        usize::try_from(self.inflated_size).unwrap_or(usize::MAX)
    }
}

fn parse_size(s: &str) -> Option<u64> {
    if s.eq_ignore_ascii_case("none") {
        return Some(u64::MAX);
    }
    let (digits, shift) = match s.as_bytes().last()? {
        b'k' | b'K' => (&s[..s.len() - 1], 10),
        b'm' | b'M' => (&s[..s.len() - 1], 20),
        b'g' | b'G' => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// A limit was passed: which, by how much, and where in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitError {
    /// The limit's name (`--limit NAME=N`).
    pub name: &'static str,
    /// Its value.
    pub limit: u64,
    /// What was counted, e.g. "frames in one stack".
    pub what: String,
    /// How the limit applies, when it is not just the number (the entry budget).
    pub detail: String,
    /// The count reached (more than `limit`).
    pub count: u64,
    /// Where in the input, e.g. `byte 1234 (sample[3].location_id)`.
    pub at: String,
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "too many {} ({}, over the limit {}={}{}) at {}; raise it with --limit {}=N \
             if the input is trusted",
            self.what, self.count, self.name, self.limit, self.detail, self.at, self.name
        )
    }
}

impl std::error::Error for LimitError {}

/// What a decoder counts as it builds: every entry of every repeated field against the
/// input's entry budget ([`Limits::entry_budget`]), plus the per-table and per-item caps.
#[derive(Clone, Debug)]
pub struct Budget {
    /// The limits counted against.
    pub limits: Limits,
    input_len: u64,
    max: u64,
    used: u64,
}

impl Budget {
    /// A budget for a decoder reading `input_len` bytes (the file as given: gzipped
    /// size for a gzipped profile).
    pub fn new(limits: &Limits, input_len: u64) -> Self {
        Budget {
            limits: *limits,
            input_len,
            max: limits.entry_budget(input_len),
            used: 0,
        }
    }

    /// Entries counted so far.
    pub fn used(&self) -> u64 {
        self.used
    }

    /// Counts `n` more entries; past the budget, an error at `at()`.
    #[inline]
    pub fn charge(&mut self, n: u64, at: impl FnOnce() -> String) -> Result<(), LimitError> {
        self.used = self.used.saturating_add(n);
        if self.used <= self.max {
            return Ok(());
        }
        Err(self.over_budget(at()))
    }

    /// Entries left to charge.
    #[cfg(test)]
    pub(crate) fn left(&self) -> u64 {
        self.max - self.used.min(self.max)
    }

    /// Charges `n` entries when they fit, and says so: nothing is charged when they do
    /// not (the caller then charges them piecemeal, with [`Self::charge`]'s error).
    pub(crate) fn charge_within(&mut self, n: u64) -> bool {
        let used = self.used.saturating_add(n);
        let fits = used <= self.max;
        if fits {
            self.used = used;
        }
        fits
    }

    /// The error of [`Self::charge`], built in one place (not once per caller).
    #[cold]
    #[inline(never)]
    fn over_budget(&self, at: String) -> LimitError {
        let l = &self.limits;
        LimitError {
            name: "entries-per-byte",
            limit: l.entries_per_byte,
            what: "decoded entries".into(),
            detail: format!(
                ": entries-base {} + {} per byte of the {}-byte input allows {}",
                l.entries_base, l.entries_per_byte, self.input_len, self.max
            ),
            count: self.used,
            at,
        }
    }

    /// Checks a count against one of the per-item caps (`stack-depth`, `table-entries`,
    /// `lines-per-location`, `labels-per-sample`).
    #[inline]
    pub fn cap(
        &self,
        name: &'static str,
        count: u64,
        what: impl FnOnce() -> String,
        at: impl FnOnce() -> String,
    ) -> Result<(), LimitError> {
        let limit = self.cap_of(name);
        if count <= limit {
            return Ok(());
        }
        Err(over_cap(name, limit, count, what(), at()))
    }

    /// The value of a per-item cap by name (`u64::MAX` for any other name).
    pub(crate) fn cap_of(&self, name: &str) -> u64 {
        match name {
            "stack-depth" => self.limits.stack_depth,
            "table-entries" => self.limits.table_entries,
            "lines-per-location" => self.limits.lines_per_location,
            "labels-per-sample" => self.limits.labels_per_sample,
            _ => u64::MAX,
        }
    }
}

/// The error of [`Budget::cap`], built in one place (not once per caller).
#[cold]
#[inline(never)]
pub(crate) fn over_cap(
    name: &'static str,
    limit: u64,
    count: u64,
    what: String,
    at: String,
) -> LimitError {
    LimitError {
        name,
        limit,
        what,
        detail: String::new(),
        count,
        at,
    }
}

//! The host-side profile model (pprof's `profile.proto`), shared by `heapsnap` and the
//! browser viewer. Split as google/pprof's `profile/` package: model (`proto`), codec
//! (`codec`), validation (`validate`), and operations (`builder`, `merge`: diff).

mod builder;
mod codec;
mod error;
mod ids;
mod merge;
pub mod proto;
mod prune;
mod read;
mod scan;
mod validate;

pub use builder::{Builder, MappingFlags};
#[cfg(feature = "gzip")]
pub(crate) use codec::inflate_beside;
#[cfg(not(feature = "gzip"))]
pub(crate) use codec::inflate_each;
pub(crate) use codec::lossy_strings;
pub(crate) use codec::scanned_as;
pub use codec::{
    decode, decode_limited, decode_with_limit, inflate, is_gzip, DEFAULT_MAX_INFLATED,
};
#[cfg(feature = "gzip")]
pub use codec::{encode, encode_to};
pub use error::{Invalid, ProfileError};
pub(crate) use ids::{IdIndex, IdProblem};
pub use merge::{diff, merge, Merger, DIFF_BASE_LABEL};
pub use proto::*;
pub(crate) use proto::{push_varint, varints_in};
pub(crate) use read::{merge_field, read_whole, SampleReader, SAMPLE};
pub(crate) use scan::Scan;

/// Prefix of the comment in which a heapsnap conversion carries the snapshot's exact
/// heap totals (`heap (exact): 1200 bytes in use in 7 objects, …`), so `top` and the
/// viewer can show them from the profile alone ([`Profile::heap_totals`]).
pub const HEAP_COMMENT: &str = "heap (exact): ";

/// The start of [`RETENTION_COMMENT`], what [`is_retention_comment`] looks for (one
/// literal for both: `concat!` takes no `const`).
macro_rules! retention_mark {
    () => {
        "Retention profile (heapsnap retain): "
    };
}

/// The start of the comment that marks a retention profile.
pub const RETENTION_MARK: &str = retention_mark!();

/// The comment that marks a retention profile (`heapsnap retain`), so the viewer (and a
/// reader of `go tool pprof -comments`) knows the frames are references, not calls; the
/// viewer shows it as a label. Here rather than in `leaks`, so the viewer, built
/// without the snapshot code, reads the same marker the CLI writes.
pub const RETENTION_COMMENT: &str = concat!(
    retention_mark!(),
    "each stack is a reference path, root -> field -> object, not a call stack: the root \
     static, then the fields and elements of the holders ([alloc: SITE] for an untyped \
     one), then the object's allocation site"
);

/// Whether comment `c` marks a retention profile ([`RETENTION_COMMENT`]): by its
/// start, so the viewer carries only the mark.
pub fn is_retention_comment(c: &str) -> bool {
    c.starts_with(RETENTION_MARK)
}

impl Profile {
    /// The string at a string-table index; "" when out of range (a validated profile
    /// has none of those), so display code never panics.
    pub fn str(&self, index: i64) -> &str {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.string_table.get(i))
            .map_or("", String::as_str)
    }

    /// `(type, unit)` of every sample type, e.g. `("inuse_space", "bytes")`.
    pub fn sample_types(&self) -> Vec<(&str, &str)> {
        self.sample_type
            .iter()
            .map(|t| (self.str(t.r#type), self.str(t.unit)))
            .collect()
    }

    /// The sample index pprof shows when none is asked for: `default_sample_type` if it
    /// names one of the sample types, else the last one (pprof's rule). 0 for a profile
    /// without sample types.
    pub fn default_sample_index(&self) -> usize {
        let dst = self.str(self.default_sample_type);
        if !dst.is_empty() {
            if let Some(i) = self
                .sample_type
                .iter()
                .position(|t| self.str(t.r#type) == dst)
            {
                return i;
            }
        }
        self.sample_type.len().saturating_sub(1)
    }

    /// Resolves a sample type asked for (a `-sample_index` value) as pprof does: a number
    /// = that index, else a sample type name (an `inuse_` prefix may be left off or added
    /// for legacy profiles with types `space`/`objects`). When none is asked for (pprof's
    /// empty `-sample_index`), the caller takes
    /// [`default_sample_index`](Self::default_sample_index): an empty name is no type.
    pub fn sample_index(&self, name: &str) -> Result<usize, String> {
        let names: Vec<&str> = self
            .sample_type
            .iter()
            .map(|t| self.str(t.r#type))
            .collect();
        if let Ok(i) = name.parse::<i64>() {
            return if i >= 0 && (i as u64) < names.len() as u64 {
                Ok(i as usize)
            } else {
                Err(format!(
                    "sample index {name} is outside the range [0..{}]",
                    names.len() as i64 - 1
                ))
            };
        }
        let no_inuse = name.strip_prefix("inuse_").unwrap_or(name);
        names
            .iter()
            .position(|&t| t == name || t == no_inuse)
            .ok_or_else(|| {
                // (Joined by hand: `[&str]::join` is a second copy of `join` in the
                // viewer's wasm beside the `[String]` one, ~0.9 KiB.)
                let mut list = String::new();
                for (i, t) in names.iter().enumerate() {
                    if i > 0 {
                        list.push_str(", ");
                    }
                    list.push_str(t);
                }
                format!("sample index \"{name}\" must be one of: {list}")
            })
    }

    /// The warnings a heapsnap conversion left in the comments (`warning: …`), for
    /// every reader to show: the one warning set of [`crate::import::warnings`] and
    /// the symbolizer's.
    pub fn warnings(&self) -> Vec<&str> {
        self.comment
            .iter()
            .filter_map(|&c| self.str(c).strip_prefix("warning: "))
            .collect()
    }

    /// Adds a warning for every reader to show (see [`Profile::warnings`]): what a
    /// reader found about the input that the profile itself cannot say (a serial
    /// capture's bad frames, an ELF that was given and not used).
    pub fn add_warning(&mut self, w: &str) {
        self.string_table.push(format!("warning: {w}"));
        self.comment.push(self.string_table.len() as i64 - 1);
    }

    /// The exact heap totals a heapsnap conversion left in the comments (the line
    /// after [`HEAP_COMMENT`]), `None` when the snapshot did not count them.
    pub fn heap_totals(&self) -> Option<&str> {
        self.comment
            .iter()
            .find_map(|&c| self.str(c).strip_prefix(HEAP_COMMENT))
    }

    /// The comments (pprof `comment` strings), in order.
    pub fn comments(&self) -> Vec<&str> {
        self.comment.iter().map(|&c| self.str(c)).collect()
    }
}

//! The drop/overflow counters, listed once.
//!
//! The [`counters!`] table below is the one list of counters: it generates the
//! [`Counters`] struct, its wire order, names and descriptions, which the encoder, the
//! decoder and `heapsnap inspect` iterate. Adding a counter is an entry at the end of
//! `appended`, plus what the checks ask for: a row in `docs/snapshot-format.md` §2.1
//! (`tests/counters_spec.rs`) and a warning in host-cli's `inspect::warnings` (a struct
//! pattern that names every field, so it does not compile until then).
#![deny(
    clippy::panic,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing
)]

/// Name and meaning of one counter, as listed in [`Counters::LIST`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    /// Field name, also the name in the spec, `inspect` and profile comments.
    pub name: &'static str,
    /// The field's doc comment: what it counts.
    pub meaning: &'static str,
}

/// Generates [`Counters`] and its list from one table; entries are in wire order.
///
/// `v1` are the counters every version-1 snapshot carries (a decoder rejects fewer);
/// `appended` are counters added later without a version change (spec §2.1: a decoder
/// keeps the ones it knows and ignores the rest, an older snapshot lacks them: zero).
macro_rules! counters {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            v1: [$( $(#[doc = $vdoc:literal])+ $v:ident, )+],
            appended: [$( $(#[doc = $adoc:literal])+ $a:ident, )*],
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[doc = $vdoc])+ pub $v: u64, )+
            $( $(#[doc = $adoc])+ pub $a: u64, )*
        }

        impl $name {
            /// Number of counters an encoder writes: the whole list.
            pub const LEN: usize = [$(stringify!($v),)+ $(stringify!($a),)*].len();

            /// Number of counters a version-1 snapshot must carry (fewer is corrupt);
            /// counters appended later may be absent from it.
            pub const V1: usize = [$(stringify!($v),)+].len();

            /// Every counter's name and meaning, in wire order: what printers iterate and
            /// the spec's §2.1 table is checked against.
            pub const LIST: [CounterInfo; $name::LEN] = [
                $(CounterInfo {
                    name: stringify!($v),
                    meaning: concat!($($vdoc),+).trim_ascii(),
                },)+
                $(CounterInfo {
                    name: stringify!($a),
                    meaning: concat!($($adoc),+).trim_ascii(),
                },)*
            ];

            /// All counters at zero, usable in a `const` (a `static` profiler).
            pub const ZERO: Self = Self {
                $($v: 0,)+
                $($a: 0,)*
            };

            /// Values in wire order.
            pub const fn to_array(&self) -> [u64; $name::LEN] {
                [$(self.$v,)+ $(self.$a,)*]
            }

            /// Counters from values in wire order (what a decoder read; absent ones 0).
            pub const fn from_array(values: [u64; $name::LEN]) -> Self {
                let [$($v,)+ $($a,)*] = values;
                Self { $($v,)+ $($a,)* }
            }

            /// `(name, value)` of every counter in wire order, for printing.
            pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'static str, u64)> {
                Self::LIST.into_iter().map(|c| c.name).zip(self.to_array())
            }
        }
    };
}

counters! {
    /// Everything the sampler had to drop or skip, so nothing is lost silently.
    /// Travels in every snapshot, fields in wire order; [`Counters::LIST`] names them.
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Counters {
        v1: [
            /// Allocations that were sampled (whether or not they could be recorded).
            samples,
            /// Samples dropped because the stack table was full.
            stack_table_full,
            /// Samples dropped because the bucket table was full.
            bucket_table_full,
            /// Sampled objects not tracked because the live-object map was full
            /// (their frees cannot be credited).
            live_map_full,
            /// Recordings skipped because the profiler was re-entered (e.g. an interrupt
            /// allocated while the profiler was recording).
            reentrant,
            /// Frees of sampled-looking addresses the live map did not know.
            unknown_frees,
            /// Stacks cut at the maximum depth.
            truncated_stacks,
        ],
        // Append new counters here (and to the spec's §2.1 table): old snapshots still
        // decode, with the new counter at zero.
        appended: [],
    }
}

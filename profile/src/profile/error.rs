//! Typed errors of the pprof reader: each names what is wrong and where, so a user
//! handed a bad file learns which sample / location / id to look at.

/// Why a byte string is not a usable pprof profile.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProfileError {
    /// Zero bytes: most often a failed download or a truncated capture.
    #[error("empty input: a pprof profile has at least one byte")]
    Empty,
    /// The gzip container is damaged or truncated.
    #[error("corrupt gzip stream: {0}")]
    Gzip(String),
    /// A gzipped profile given to a build without the Rust inflater (feature `gzip`).
    #[error("this build cannot inflate gzip; gunzip the profile first")]
    GzipUnsupported,
    /// The gzip stream inflates past the cap (a gzip bomb, or a profile far beyond
    /// anything a heap profile needs).
    #[error("profile inflates to more than {limit} bytes (the limit inflated-size); refusing to read it (gzip bomb?); raise it with --limit inflated-size=N if the input is trusted")]
    TooLarge {
        /// The cap in bytes.
        limit: usize,
    },
    /// The (inflated) bytes break protobuf's wire format or `profile.proto`'s field
    /// types, found by the scan before decoding: where, in which field, and what.
    #[error("not a pprof protobuf: at byte {offset}{} ({path}): {what}", if *.inflated { " of the inflated data" } else { "" })]
    Wire {
        /// Byte offset of the field (of the inflated data for a gzipped profile).
        offset: usize,
        /// The offset counts inflated bytes.
        inflated: bool,
        /// Field path, e.g. `sample[3].location_id`.
        path: String,
        /// What is wrong.
        what: String,
    },
    /// The profile is over a resource limit (see [`crate::limits`]).
    #[error(transparent)]
    Limit(Box<crate::limits::LimitError>),
    /// The (inflated) bytes are not a `profile.proto` message.
    #[error("not a pprof protobuf: {0}")]
    Protobuf(#[from] prost::DecodeError),
    /// The protobuf decoded but breaks a pprof invariant.
    #[error("invalid profile: {0}")]
    Invalid(#[from] Invalid),
    /// Profiles that cannot be combined (diff/merge).
    #[error("incompatible profiles: {0}")]
    Incompatible(String),
}

/// A broken pprof invariant (the checks of pprof's `Profile.CheckValid` plus the
/// string-table checks its decoder makes).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalid {
    /// `string_table[0]` must be the empty string.
    #[error("string_table[0] must be \"\" but is \"{}\"", .0.escape_default())]
    StringTableStart(String),
    /// The profile has content but no string table at all.
    #[error("the string table is missing (it must at least hold \"\" at index 0)")]
    NoStringTable,
    /// There are samples but no sample types.
    #[error("{samples} samples but no sample types")]
    NoSampleTypes {
        /// Number of samples.
        samples: usize,
    },
    /// A sample does not carry one value per sample type.
    #[error("sample {sample} has {got} values but the profile has {want} sample types")]
    ValueCount {
        /// Index of the sample.
        sample: usize,
        /// Values it has.
        got: usize,
        /// Sample types in the profile.
        want: usize,
    },
    /// A mapping, location or function with the reserved id 0.
    #[error("{kind} at index {index} has the reserved id 0")]
    ZeroId {
        /// "mapping", "location" or "function".
        kind: &'static str,
        /// Its index in the profile's table.
        index: usize,
    },
    /// Two entries of one table share an id.
    #[error("two {kind}s have id {id}")]
    DuplicateId {
        /// "mapping", "location" or "function".
        kind: &'static str,
        /// The shared id.
        id: u64,
    },
    /// A sample refers to a location id that is not in the profile.
    #[error("sample {sample} refers to location {location}, which does not exist")]
    DanglingLocation {
        /// Index of the sample.
        sample: usize,
        /// The missing location id.
        location: u64,
    },
    /// A location's line refers to a function id that is not in the profile.
    #[error("location {location} refers to function {function}, which does not exist")]
    DanglingFunction {
        /// Id of the location.
        location: u64,
        /// The missing function id.
        function: u64,
    },
    /// A location refers to a mapping id (other than 0) that is not in the profile.
    #[error("location {location} refers to mapping {mapping}, which does not exist")]
    DanglingMapping {
        /// Id of the location.
        location: u64,
        /// The missing mapping id.
        mapping: u64,
    },
    /// A string-table index outside the table.
    #[error("{what} is string index {index}, outside the string table (length {len})")]
    StringIndex {
        /// Which field, e.g. "function 3 name".
        what: String,
        /// The bad index.
        index: i64,
        /// Length of the string table.
        len: usize,
    },
}

impl From<crate::limits::LimitError> for ProfileError {
    fn from(e: crate::limits::LimitError) -> Self {
        ProfileError::Limit(Box::new(e))
    }
}

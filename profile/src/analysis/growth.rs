//! What grew across a series: the functions whose in-use bytes rose most from its
//! first point to its last, as the top table of their difference shows them.

use super::{top, Filter, TopRow, ValueOverflow};
use crate::profile::{self, Profile, ProfileError};

/// Why the growth of two profiles cannot be computed.
#[derive(Debug, thiserror::Error)]
pub enum GrowthError {
    /// The two cannot be compared (other sample types).
    #[error(transparent)]
    Diff(#[from] ProfileError),
    /// The difference has no such sample type.
    #[error("{0}")]
    SampleType(String),
    /// Values too large to sum.
    #[error(transparent)]
    Overflow(#[from] ValueOverflow),
}

/// The functions that grew from `first` to `last` for `sample_type` (`inuse_space`
/// for the heap), most first, at most `n`: the rows of the top table of
/// [`profile::diff`]`(first, last)` whose flat value rose, so each figure is what
/// `heapsnap diff first last` prints for that function. Also returns the unit.
pub fn growth(
    first: &Profile,
    last: &Profile,
    sample_type: &str,
    n: usize,
) -> Result<(Vec<TopRow>, String), GrowthError> {
    let d = profile::diff(first, last)?;
    let i = d
        .sample_index(sample_type)
        .map_err(GrowthError::SampleType)?;
    let unit = d.sample_types().get(i).map_or("", |t| t.1).to_owned();
    let mut rows: Vec<TopRow> = top(&d, i, &Filter::none())?
        .rows
        .into_iter()
        .filter(|r| r.flat > 0)
        .collect();
    // The table is by |flat|; growth is by the rise.
    rows.sort_by(|a, b| b.flat.cmp(&a.flat).then_with(|| a.name.cmp(&b.name)));
    rows.truncate(n);
    Ok((rows, unit))
}

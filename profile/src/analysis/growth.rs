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

/// The flat value of each of `names` in `p` for `sample_type`, as its row of the top
/// table shows it (0 for a function without a row): what one point of a series puts
/// under each growing function, so a chart's stacked areas add up to the rows
/// `heapsnap top` prints for that point.
pub fn flat_of(p: &Profile, sample_type: &str, names: &[String]) -> Result<Vec<i64>, GrowthError> {
    let i = p
        .sample_index(sample_type)
        .map_err(GrowthError::SampleType)?;
    let rows = top(p, i, &Filter::none())?.rows;
    Ok(names
        .iter()
        .map(|n| rows.iter().find(|r| &r.name == n).map_or(0, |r| r.flat))
        .collect())
}

#[cfg(all(test, feature = "snapshot"))]
mod tests {
    use super::*;
    use crate::import::{to_profile, Resolved, SymFrame, Symbols};
    use crate::profile::Mapping;
    use sampler_core::decoded::{Bucket, Snapshot, Stack};

    /// Every address its own function, `f<address>`.
    struct Named;
    impl Symbols for Named {
        fn mappings(&self) -> Vec<(Mapping, String, String)> {
            Vec::new()
        }
        fn resolve(&mut self, a: u64) -> Resolved {
            Resolved {
                frames: vec![SymFrame {
                    function: format!("f{a:x}"),
                    ..SymFrame::default()
                }],
                ..Resolved::default()
            }
        }
    }

    /// A snapshot with one bucket of `n` 16-byte objects in use per stack.
    fn snap(in_use: &[(u32, u64)]) -> Profile {
        let mut s = Snapshot {
            version: 1,
            word_size: 4,
            sample_rate: 1,
            cycle: 1,
            ..Snapshot::default()
        };
        for &(id, n) in in_use {
            s.stacks.push(Stack {
                id,
                frames: vec![0x1000 * u64::from(id), 0x100],
            });
            let mut b = Bucket {
                stack_id: id,
                size: 16,
                ..Bucket::default()
            };
            b.active.allocs = n;
            b.active.alloc_bytes = n * 16;
            s.buckets.push(b);
        }
        to_profile(&s, &mut Named, &mut |_, _| {})
    }

    #[test]
    fn only_what_grew_most_first_as_the_diff_says() {
        let first = snap(&[(1, 1), (2, 10), (3, 5)]);
        let last = snap(&[(1, 4), (2, 2), (3, 9)]);
        let (rows, unit) = growth(&first, &last, "inuse_space", 10).unwrap();
        assert_eq!(unit, "bytes");
        let flat: Vec<(&str, i64)> = rows.iter().map(|r| (r.name.as_str(), r.flat)).collect();
        // Stack 3 grew 64 bytes, stack 1 48; stack 2 shrank and is left out.
        assert_eq!(flat, [("f3000", 64), ("f1000", 48)]);
        let d = profile::diff(&first, &last).unwrap();
        let i = d.sample_index("inuse_space").unwrap();
        let table = top(&d, i, &Filter::none()).unwrap();
        for r in &rows {
            assert!(table.rows.contains(r), "{r:?} is a row of the diff's table");
        }
        assert_eq!(growth(&first, &last, "inuse_space", 1).unwrap().0.len(), 1);
        assert!(matches!(
            growth(&first, &last, "nope", 1),
            Err(GrowthError::SampleType(_))
        ));
    }

    #[test]
    fn flat_of_is_each_functions_row_and_zero_without_one() {
        let p = snap(&[(1, 3), (2, 10)]);
        let names = ["f2000".to_owned(), "f1000".to_owned(), "absent".to_owned()];
        assert_eq!(flat_of(&p, "inuse_space", &names).unwrap(), [160, 48, 0]);
        assert_eq!(flat_of(&p, "inuse_objects", &names).unwrap(), [10, 3, 0]);
        assert!(flat_of(&p, "nope", &names).is_err());
    }
}

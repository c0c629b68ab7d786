//! Id → position in its table (`mapping`, `function`, `location`): the one lookup
//! validation and analysis both use. A direct table when ids are dense (1..=n, as in
//! every producer we know), a hash map otherwise; this runs per frame of every
//! profile the viewer opens (SipHash maps were ~130 ms of a 50k-stack file).

use super::Stack;

/// Id → position. Zero ids and repeats are reported by [`IdIndex::new`]; the index
/// keeps the first occurrence.
pub(crate) enum IdIndex {
    Dense(Vec<u32>),
    Sparse(rustc_hash::FxHashMap<u64, u64>),
}

/// The first problem [`IdIndex::new`] found in a table's ids.
pub(crate) enum IdProblem {
    /// Position of a zero id.
    Zero(usize),
    /// An id that occurs twice.
    Duplicate(u64),
}

impl IdIndex {
    /// Indexes the ids of one table (in table order).
    pub(crate) fn new(ids: &[u64]) -> (Self, Option<IdProblem>) {
        let max = ids.iter().copied().max().unwrap_or(0);
        let mut problem = None;
        let mut note = |p: IdProblem| {
            problem.get_or_insert(p);
        };
        let index = if max <= 4 * ids.len() as u64 + 16 {
            let mut t = vec![u32::MAX; max as usize + 1];
            for (i, &id) in ids.iter().enumerate() {
                if id == 0 {
                    note(IdProblem::Zero(i));
                } else if t[id as usize] != u32::MAX {
                    note(IdProblem::Duplicate(id));
                } else {
                    t[id as usize] = i as u32;
                }
            }
            IdIndex::Dense(t)
        } else {
            let mut m = rustc_hash::FxHashMap::default();
            m.reserve(ids.len());
            for (i, &id) in ids.iter().enumerate() {
                if id == 0 {
                    note(IdProblem::Zero(i));
                } else if let Some(first) = m.insert(id, i as u64) {
                    note(IdProblem::Duplicate(id));
                    m.insert(id, first); // keep the first
                }
            }
            IdIndex::Sparse(m)
        };
        (index, problem)
    }

    /// For analysis and merging, where problems are validation's business (an
    /// unvalidated profile's unknown ids are skipped, repeated ones resolve to the
    /// first).
    pub(crate) fn lenient(ids: &[u64]) -> Self {
        IdIndex::new(ids).0
    }

    /// The position of `id` in its table, if present (never for id 0).
    pub(crate) fn get(&self, id: u64) -> Option<u32> {
        match self {
            IdIndex::Dense(t) => usize::try_from(id)
                .ok()
                .and_then(|i| t.get(i))
                .copied()
                .filter(|&i| i != u32::MAX),
            IdIndex::Sparse(m) => m.get(&id).map(|&i| i as u32),
        }
    }

    /// Appends the positions of `ids`, skipping unknown ones. Not inlined: called per
    /// sample (see the crate docs on size and speed in wasm).
    #[inline(never)]
    pub(crate) fn extend(&self, out: &mut Vec<u32>, ids: &Stack) {
        match self {
            IdIndex::Dense(t) => pprof_scan::positions(t, ids.varints(), out),
            IdIndex::Sparse(_) => {
                for id in ids {
                    if let Some(i) = self.get(id) {
                        out.push(i);
                    }
                }
            }
        }
    }

    /// The first of `ids` not in the table. Not inlined, as [`IdIndex::extend`].
    #[inline(never)]
    pub(crate) fn first_missing(&self, ids: &Stack) -> Option<u64> {
        match self {
            IdIndex::Dense(t) => pprof_scan::first_missing(t, ids.varints()),
            IdIndex::Sparse(_) => ids.iter().find(|&id| self.get(id).is_none()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(ids: &[u64]) -> Option<String> {
        IdIndex::new(ids).1.map(|p| match p {
            IdProblem::Zero(i) => format!("zero at {i}"),
            IdProblem::Duplicate(id) => format!("duplicate {id}"),
        })
    }

    #[test]
    fn dense_and_sparse_agree() {
        for ids in [vec![3u64, 1, 2], vec![3, 1 << 40, 7]] {
            let (ix, p) = IdIndex::new(&ids);
            assert!(p.is_none());
            assert_eq!(matches!(ix, IdIndex::Dense(_)), ids[1] == 1);
            for (i, &id) in ids.iter().enumerate() {
                assert_eq!(ix.get(id), Some(i as u32));
            }
            assert_eq!(ix.get(0), None);
            assert_eq!(ix.get(5), None);
            assert_eq!(ix.get(u64::MAX), None);
            let mut out = Vec::new();
            ix.extend(&mut out, &Stack::from([ids[2], 5, ids[0]]));
            assert_eq!(out, [2, 0]);
            assert_eq!(ix.first_missing(&Stack::from([ids[1], 5])), Some(5));
        }
    }

    #[test]
    fn problems_are_reported_and_the_first_occurrence_kept() {
        assert_eq!(problem(&[1, 0, 2]).as_deref(), Some("zero at 1"));
        assert_eq!(problem(&[1, 2, 1]).as_deref(), Some("duplicate 1"));
        assert_eq!(
            problem(&[1 << 40, 5, 1 << 40]).as_deref(),
            Some("duplicate 1099511627776")
        );
        assert_eq!(IdIndex::new(&[1, 2, 1]).0.get(1), Some(0));
        assert_eq!(IdIndex::new(&[1 << 40, 5, 1 << 40]).0.get(1 << 40), Some(0));
    }
}

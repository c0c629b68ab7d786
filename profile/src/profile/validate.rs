//! The one validation of a profile (pprof's `CheckValid`), run by the decoder and before
//! writing, so operations can index ids and strings without re-checking.

use super::{IdIndex, IdProblem, Invalid, Profile, Sample};

impl Profile {
    /// Checks the invariants pprof's `CheckValid` and decoder check: one value per
    /// sample type, non-zero unique ids, no dangling location/function/mapping ids
    /// (mapping 0 = none is allowed), string indices inside the table,
    /// `string_table[0] == ""`.
    pub fn check_valid(&self) -> Result<(), Invalid> {
        self.check_valid_with(true)
    }

    /// [`Profile::check_valid`], with the per-sample checks (label strings, value
    /// counts, location ids) only when `samples`: for a decoder that knows its samples
    /// are valid (the merging decoder, from its groups' id and value-count ranges),
    /// which is a pass over every frame less.
    #[inline(never)]
    pub(crate) fn check_valid_with(&self, samples: bool) -> Result<(), Invalid> {
        match self.string_table.first() {
            Some(s) if s.is_empty() => {}
            Some(s) => return Err(Invalid::StringTableStart(s.clone())),
            // An absent table is only fine for an entirely empty profile.
            None if self.is_empty_profile() => return Ok(()),
            None => return Err(Invalid::NoStringTable),
        }
        self.check_strings(samples)?;
        let want = self.sample_type.len();
        if want == 0 && !self.sample.is_empty() {
            return Err(Invalid::NoSampleTypes {
                samples: self.sample.len(),
            });
        }
        let mappings = ids("mapping", self.mapping.iter().map(|m| m.id))?;
        let functions = ids("function", self.function.iter().map(|f| f.id))?;
        let locations = ids("location", self.location.iter().map(|l| l.id))?;
        let (mappings, functions) = (&mappings, &functions);
        for l in &self.location {
            if l.mapping_id != 0 && mappings.get(l.mapping_id).is_none() {
                return Err(Invalid::DanglingMapping {
                    location: l.id,
                    mapping: l.mapping_id,
                });
            }
            for line in &l.line {
                if functions.get(line.function_id).is_none() {
                    return Err(Invalid::DanglingFunction {
                        location: l.id,
                        function: line.function_id,
                    });
                }
            }
        }
        if !samples {
            return Ok(());
        }
        // The first bad sample of `half` (whose first is sample `from`).
        let locations = &locations;
        let first_bad = |half: &[Sample], from: usize| -> Option<Invalid> {
            for (i, s) in half.iter().enumerate() {
                if s.value.len() != want {
                    return Some(Invalid::ValueCount {
                        sample: from + i,
                        got: s.value.len(),
                        want,
                    });
                }
                if let Some(bad) = locations.first_missing(&s.location_id) {
                    return Some(Invalid::DanglingLocation {
                        sample: from + i,
                        location: bad,
                    });
                }
            }
            None
        };
        // Natively by halves on two threads (the first half's problem first).
        #[cfg(not(target_arch = "wasm32"))]
        let bad = {
            let (a, b) = self.sample.split_at(self.sample.len() / 2);
            let (bad_a, bad_b) = crate::beside::beside(
                self.sample.len(),
                || first_bad(a, 0),
                || first_bad(b, a.len()),
            );
            bad_a.or(bad_b)
        };
        #[cfg(target_arch = "wasm32")]
        let bad = first_bad(&self.sample, 0);
        match bad {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    fn is_empty_profile(&self) -> bool {
        self.sample_type.is_empty()
            && self.sample.is_empty()
            && self.mapping.is_empty()
            && self.location.is_empty()
            && self.function.is_empty()
            && self.comment.is_empty()
            && self.period_type.is_none()
            && [
                self.drop_frames,
                self.keep_frames,
                self.default_sample_type,
                self.doc_url,
            ]
            .iter()
            .all(|&i| i == 0)
    }

    fn check_strings(&self, samples: bool) -> Result<(), Invalid> {
        let len = self.string_table.len();
        let check = |index: i64, what: &dyn Fn() -> String| {
            if index < 0 || index as u64 >= len as u64 {
                Err(Invalid::StringIndex {
                    what: what(),
                    index,
                    len,
                })
            } else {
                Ok(())
            }
        };
        for (i, t) in self.sample_type.iter().enumerate() {
            check(t.r#type, &|| format!("sample_type {i} type"))?;
            check(t.unit, &|| format!("sample_type {i} unit"))?;
        }
        let labelled = if samples { &self.sample[..] } else { &[] };
        for (i, s) in labelled.iter().enumerate() {
            for l in &s.label {
                check(l.key, &|| format!("sample {i} label key"))?;
                check(l.str, &|| format!("sample {i} label value"))?;
                check(l.num_unit, &|| format!("sample {i} label unit"))?;
            }
        }
        for m in &self.mapping {
            check(m.filename, &|| format!("mapping {} filename", m.id))?;
            check(m.build_id, &|| format!("mapping {} build_id", m.id))?;
        }
        for f in &self.function {
            check(f.name, &|| format!("function {} name", f.id))?;
            check(f.system_name, &|| format!("function {} system_name", f.id))?;
            check(f.filename, &|| format!("function {} filename", f.id))?;
        }
        for (i, &c) in self.comment.iter().enumerate() {
            check(c, &|| format!("comment {i}"))?;
        }
        if let Some(pt) = &self.period_type {
            check(pt.r#type, &|| "period_type type".into())?;
            check(pt.unit, &|| "period_type unit".into())?;
        }
        check(self.drop_frames, &|| "drop_frames".into())?;
        check(self.keep_frames, &|| "keep_frames".into())?;
        check(self.default_sample_type, &|| "default_sample_type".into())?;
        check(self.doc_url, &|| "doc_url".into())?;
        Ok(())
    }
}

/// The ids of one table, checked non-zero and unique.
fn ids(kind: &'static str, it: impl Iterator<Item = u64>) -> Result<IdIndex, Invalid> {
    let ids: Vec<u64> = it.collect();
    match IdIndex::new(&ids) {
        (index, None) => Ok(index),
        (_, Some(IdProblem::Zero(index))) => Err(Invalid::ZeroId { kind, index }),
        (_, Some(IdProblem::Duplicate(id))) => Err(Invalid::DuplicateId { kind, id }),
    }
}

//! Combining profiles: pprof's `Merge`, and `diff` = pprof's `-diff_base`.

use super::{Builder, Line, Profile, ProfileError};

/// The label pprof puts on the (negated) base samples of a diff; `go tool pprof` then
/// computes percentages against the base total.
pub const DIFF_BASE_LABEL: (&str, &str) = ("pprof::base", "true");

/// NEW − BASE per stack, exactly as `go tool pprof -diff_base BASE NEW` builds it: the
/// base's values are negated and labelled `pprof::base=true`, then merged with NEW.
/// `go tool pprof -top diff.pb.gz` prints what `-diff_base` would, and the viewer reads
/// it like any profile (positive = grew, negative = shrank).
pub fn diff(base: &Profile, new: &Profile) -> Result<Profile, ProfileError> {
    // Checked here too (merge checks again) so the message says which is which.
    compatible(("base", base), ("new", new))?;
    let mut b = base.clone();
    let key = push_str(&mut b, DIFF_BASE_LABEL.0);
    let val = push_str(&mut b, DIFF_BASE_LABEL.1);
    for (i, s) in b.sample.iter_mut().enumerate() {
        for v in &mut s.value {
            // −i64::MIN does not exist: wrapping would keep the base's value as it is.
            *v = v.checked_neg().ok_or_else(|| {
                ProfileError::Incompatible(format!(
                    "base sample {i} has the value {v}, whose negation does not fit in 64 bits"
                ))
            })?;
        }
        s.label.retain(|l| l.key != key);
        s.label.push(super::Label {
            key,
            str: val,
            num: 0,
            num_unit: 0,
        });
    }
    merge(&[new, &b])
}

fn push_str(p: &mut Profile, s: &str) -> i64 {
    if let Some(i) = p.string_table.iter().position(|x| x == s) {
        return i as i64;
    }
    p.string_table.push(s.to_owned());
    p.string_table.len() as i64 - 1
}

/// Merges profiles with the same sample types and period type into one (pprof's
/// `profile.Merge`): functions, mappings and locations are deduplicated, samples with
/// the same stack and labels are summed, all-zero samples are dropped; header fields
/// combine as pprof does (earliest time, summed duration, largest period, unique
/// comments in order, the first default sample type).
pub fn merge(srcs: &[&Profile]) -> Result<Profile, ProfileError> {
    let Some(first) = srcs.first() else {
        return Err(ProfileError::Incompatible("no profiles to merge".into()));
    };
    for (i, p) in srcs.iter().enumerate().skip(1) {
        compatible(("profile 1", first), (&format!("profile {}", i + 1), p))?;
    }
    let mut b = Builder::new();
    for t in &first.sample_type {
        b.sample_type(first.str(t.r#type), first.str(t.unit));
    }
    let (mut time, mut duration, mut period) = (0i64, 0i64, 0i64);
    for p in srcs {
        if time == 0 || p.time_nanos < time {
            time = p.time_nanos;
        }
        duration = duration.saturating_add(p.duration_nanos);
        period = period.max(p.period);
        for c in p.comments() {
            b.comment(c);
        }
    }
    if let Some(pt) = &first.period_type {
        b.period(first.str(pt.r#type), first.str(pt.unit), period);
    } else {
        b.header_mut().period = period;
    }
    if let Some(p) = srcs
        .iter()
        .find(|p| !p.str(p.default_sample_type).is_empty())
    {
        b.default_sample_type(p.str(p.default_sample_type));
    }
    {
        let drop = b.string(first.str(first.drop_frames));
        let keep = b.string(first.str(first.keep_frames));
        let doc = srcs
            .iter()
            .map(|p| p.str(p.doc_url))
            .find(|s| !s.is_empty())
            .unwrap_or("");
        let doc = b.string(doc);
        let h = b.header_mut();
        h.drop_frames = drop;
        h.keep_frames = keep;
        h.doc_url = doc;
        h.time_nanos = time;
        h.duration_nanos = duration;
    }

    for p in srcs {
        add(&mut b, p);
    }
    Ok(b.finish())
}

/// Adds every non-zero sample of `p` (with what it refers to) to the builder.
fn add(b: &mut Builder, p: &Profile) {
    // New ids by position in `p`'s tables, looked up through the same id index the
    // validation and analysis use.
    let positions = |ids: Vec<u64>| super::IdIndex::lenient(&ids);
    let new_id =
        |index: &super::IdIndex, ids: &[u64], id: u64| index.get(id).map_or(0, |i| ids[i as usize]);
    let mapping_pos = positions(p.mapping.iter().map(|m| m.id).collect());
    let mut mappings = Vec::with_capacity(p.mapping.len());
    let mut offsets = Vec::with_capacity(p.mapping.len());
    for m in &p.mapping {
        let (id, start) = b.mapping(m, p.str(m.filename), p.str(m.build_id));
        mappings.push(id);
        offsets.push(start.wrapping_sub(m.memory_start));
    }
    let function_pos = positions(p.function.iter().map(|f| f.id).collect());
    let functions: Vec<u64> = p
        .function
        .iter()
        .map(|f| {
            b.function(
                p.str(f.name),
                p.str(f.system_name),
                p.str(f.filename),
                f.start_line,
            )
        })
        .collect();
    let location_pos = positions(p.location.iter().map(|l| l.id).collect());
    let mut locations = Vec::with_capacity(p.location.len());
    for l in &p.location {
        let lines = l
            .line
            .iter()
            .map(|ln| Line {
                function_id: new_id(&function_pos, &functions, ln.function_id),
                ..*ln
            })
            .collect();
        let offset = new_id(&mapping_pos, &offsets, l.mapping_id);
        let id = b.location(
            new_id(&mapping_pos, &mappings, l.mapping_id),
            l.address.wrapping_add(offset),
            lines,
            l.is_folded,
        );
        locations.push(id);
    }
    for s in &p.sample {
        if s.value.iter().all(|&v| v == 0) {
            continue;
        }
        let locs = s
            .location_id
            .iter()
            .map(|&id| new_id(&location_pos, &locations, id))
            .collect();
        let labels = s
            .label
            .iter()
            .map(|l| super::Label {
                key: b.string(p.str(l.key)),
                str: b.string(p.str(l.str)),
                num: l.num,
                num_unit: b.string(p.str(l.num_unit)),
            })
            .collect();
        b.sample(locs, s.value.clone(), labels);
    }
}

/// Same period type and sample types; the message names both sides (`"base"`/`"new"`).
fn compatible((na, a): (&str, &Profile), (nb, b): (&str, &Profile)) -> Result<(), ProfileError> {
    // Spelled out rather than `{:?}`: the viewer's release build compiles `Debug` out.
    let types = |t: &[(&str, &str)]| -> String {
        let list: Vec<String> = t.iter().map(|(ty, unit)| format!("{ty}/{unit}")).collect();
        format!("[{}]", list.join(", "))
    };
    fn period(p: &Profile) -> Option<(&str, &str)> {
        let t = p.period_type.as_ref()?;
        Some((p.str(t.r#type), p.str(t.unit)))
    }
    let (pa, pb) = (period(a), period(b));
    if pa != pb {
        let show = |t: Option<(&str, &str)>| t.map_or("none".to_owned(), |t| types(&[t]));
        return Err(ProfileError::Incompatible(format!(
            "period types differ: {na} has {}, {nb} has {}",
            show(pa),
            show(pb)
        )));
    }
    let (sa, sb) = (a.sample_types(), b.sample_types());
    if sa != sb {
        return Err(ProfileError::Incompatible(format!(
            "sample types differ: {na} has {}, {nb} has {}",
            types(&sa),
            types(&sb)
        )));
    }
    Ok(())
}

//! What a leak check prints (valgrind's summary and loss records) and the retention
//! profile (goref's shape: reference paths as stacks).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::{thousands, Category, Leaks, PathFrame};
use crate::import::SiteStacks;
use crate::profile::{Line, Profile, RETENTION_COMMENT};

/// The leak summary in valgrind's words and layout, then one loss record per
/// (category, allocation site) of the lost and possibly lost objects, largest first,
/// each with its allocation stack and the objects' addresses. `notes` (partial-answer
/// warnings, excluded roots) come first.
pub fn summary(leaks: &Leaks, stacks: &mut SiteStacks<'_>, notes: &[String]) -> String {
    let mut out = String::new();
    for n in notes {
        let _ = writeln!(out, "{n}");
    }
    if !notes.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(out, "LEAK SUMMARY:");
    for c in Category::ALL {
        let (bytes, blocks) = leaks.totals(c);
        let _ = writeln!(
            out,
            "   {:>15}: {} bytes in {} blocks",
            c.name(),
            thousands(bytes),
            thousands(blocks)
        );
    }
    // Loss records: objects grouped by (category, stack).
    let mut records: BTreeMap<(Category, u32), Vec<usize>> = BTreeMap::new();
    for (i, (o, &c)) in leaks.objects.iter().zip(&leaks.category).enumerate() {
        if c != Category::StillReachable {
            records.entry((c, o.stack_id)).or_default().push(i);
        }
    }
    let mut records: Vec<((Category, u32), Vec<usize>, u64)> = records
        .into_iter()
        .map(|(k, v)| {
            let bytes = v.iter().map(|&i| leaks.objects[i].size).sum();
            (k, v, bytes)
        })
        .collect();
    records.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let total = records.len();
    for (n, ((c, stack), objs, bytes)) in records.into_iter().enumerate() {
        let _ = writeln!(
            out,
            "\n{} bytes in {} blocks are {c} in loss record {} of {total}",
            thousands(bytes),
            thousands(objs.len() as u64),
            n + 1
        );
        for (k, f) in stacks.frames(stack).iter().enumerate() {
            let at = if k == 0 { "at" } else { "by" };
            let place = match (f.file.as_str(), f.line) {
                ("", _) => String::new(),
                (file, 0) => format!(" ({file})"),
                (file, line) => format!(" ({file}:{line})"),
            };
            let _ = writeln!(out, "   {at} {}{place}", f.function);
        }
        let mut objs = objs;
        objs.sort_by(|&a, &b| {
            leaks.objects[b]
                .size
                .cmp(&leaks.objects[a].size)
                .then(a.cmp(&b))
        });
        const SHOWN: usize = 8;
        let addrs: Vec<String> = objs
            .iter()
            .take(SHOWN)
            .map(|&i| format!("{:#x} ({} B)", leaks.objects[i].addr, leaks.objects[i].size))
            .collect();
        let more = objs.len().saturating_sub(SHOWN);
        let _ = writeln!(
            out,
            "   objects: {}{}",
            addrs.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        );
    }
    out
}

/// The retention profile: one sample per object, values `inuse_objects/count` and
/// `inuse_space/bytes`, whose stack is the object's allocation stack under the
/// reference path that holds it (root first: the static, then the fields and elements
/// of typed holders, `seen`, `[10+]`, `Message.body`, and each untyped holding object
/// as `[alloc: SITE]`). Lost objects sit under one root frame named for their category
/// (`[definitely lost]`, …); an indirectly lost one under its group's leader, a
/// possibly lost one under the path with the interior pointer. Carries
/// [`RETENTION_COMMENT`] (first) and `notes` as comments.
pub fn retention_profile(leaks: &Leaks, mut stacks: SiteStacks<'_>, notes: &[String]) -> Profile {
    stacks.builder().comment(RETENTION_COMMENT);
    for n in notes {
        stacks.builder().comment(n);
    }
    stacks.builder().default_sample_type("inuse_space");
    let frame = |stacks: &mut SiteStacks<'_>, name: &str| -> u64 {
        let b = stacks.builder();
        let f = b.function(name, name, "", 0);
        b.location(
            0,
            0,
            vec![Line {
                function_id: f,
                line: 0,
                column: 0,
            }],
            false,
        )
    };
    // The leaf function of each holding object's allocation site, once per stack.
    let mut site_names: BTreeMap<u32, String> = BTreeMap::new();
    for i in 0..leaks.objects.len() {
        let o = leaks.objects[i];
        let mut locs = stacks.locations(o.stack_id);
        let path = leaks.reference_path(i);
        for f in path.iter().rev() {
            let name = match *f {
                PathFrame::Root(r) => r.name.clone(),
                PathFrame::Field(s) => s.to_owned(),
                PathFrame::Object(o) => {
                    let sid = o.stack_id;
                    let site = site_names.entry(sid).or_insert_with(|| {
                        stacks
                            .frames(sid)
                            .first()
                            .map_or_else(|| "?".into(), |f| f.function.clone())
                    });
                    format!("[alloc: {site}]")
                }
            };
            locs.push(frame(&mut stacks, &name));
        }
        let c = leaks.category[i];
        if c != Category::StillReachable {
            locs.push(frame(&mut stacks, &format!("[{}]", c.name())));
        }
        let size = i64::try_from(o.size).unwrap_or(i64::MAX);
        stacks.builder().sample(locs, vec![1, size], vec![]);
    }
    let mut p = stacks.finish();
    // The mark first, before the snapshot's comments: the viewer shows it as the
    // profile's label, and `go tool pprof -comments` prints it on top.
    if let Some(k) = p
        .comment
        .iter()
        .position(|&c| p.str(c) == RETENTION_COMMENT)
    {
        p.comment[..=k].rotate_right(1);
    }
    p
}

/// What makes a leak check of this snapshot a partial answer, as `warning:` lines:
/// a sample rate above 1 (only sampled objects are known: how much of the heap they
/// cover, when the snapshot has the exact totals), sampled objects the live map could
/// not track, samples the full tables dropped. Empty when the object table is the
/// whole heap.
pub fn partial_answer_warnings(snap: &sampler_core::decoded::Snapshot) -> Vec<String> {
    let mut w = Vec::new();
    let objects = snap.objects.as_deref().unwrap_or(&[]);
    let bytes: u64 = objects.iter().map(|o| o.size).sum();
    let c = &snap.counters;
    let heap = c.heap();
    if snap.sample_rate != 1 {
        let cover = match heap {
            Some(h) if h.in_use_bytes > 0 => format!(
                ", {:.1}% of the {} bytes in use",
                100.0 * bytes as f64 / h.in_use_bytes as f64,
                thousands(h.in_use_bytes)
            ),
            _ => String::new(),
        };
        w.push(format!(
            "warning: PARTIAL ANSWER: the snapshot samples about one allocation per {} bytes (sample rate {}), so only its {} sampled objects ({} bytes{cover}) are known. Unsampled objects are not checked, and pointers held only by them are not followed: what they keep may show as lost. Take the snapshot at sample rate 1 for a complete leak check.",
            thousands(snap.sample_rate),
            snap.sample_rate,
            thousands(objects.len() as u64),
            thousands(bytes),
        ));
    } else if let Some(h) = heap {
        let in_use = h.in_use_objects();
        if in_use != objects.len() as u64 || h.in_use_bytes != bytes {
            w.push(format!(
                "warning: PARTIAL ANSWER: the heap holds {} objects ({} bytes) but the object table lists {} ({} bytes): objects allocated before the profiler started, or not recorded, are not checked",
                thousands(in_use),
                thousands(h.in_use_bytes),
                thousands(objects.len() as u64),
                thousands(bytes)
            ));
        }
    }
    if c.live_map_full > 0 {
        w.push(format!(
            "warning: PARTIAL ANSWER: {} sampled objects were not tracked (the live-object map was full; give it a larger capacity): they are missing from the check",
            thousands(c.live_map_full)
        ));
    }
    let dropped = c.stack_table_full + c.bucket_table_full;
    if dropped > 0 {
        w.push(format!(
            "warning: PARTIAL ANSWER: {} samples were dropped (the stack or bucket table was full): their objects are missing from the check",
            thousands(dropped)
        ));
    }
    w
}

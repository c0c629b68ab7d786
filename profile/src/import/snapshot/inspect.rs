//! What a snapshot says about itself: header, table sizes, every drop counter, and
//! plain-language warnings, so nothing the sampler had to drop goes unnoticed.

use crate::profile::HEAP_COMMENT;
use sampler_core::decoded::Snapshot;
use sampler_core::Counters;
use std::fmt::Write;

/// Plain-language warnings for every non-zero drop/overflow counter, a sampler that
/// was off, and samples never published (no cycle closed), each with what to do about
/// it. The one warning set: `inspect` prints it, and converted profiles carry it as
/// `warning:` comments that `top`, `diff`, `convert` and the viewer show.
pub fn warnings(s: &Snapshot) -> Vec<String> {
    // Every counter by name, no `..`: a counter added to the table does not compile
    // here until it has a warning or is bound to `_` (`samples` is not a drop).
    let Counters {
        samples: _,
        stack_table_full,
        bucket_table_full,
        live_map_full,
        reentrant,
        unknown_frees,
        truncated_stacks,
        // The exact heap totals are not drops: `heap_line` shows them.
        heap_totals: _,
        heap_allocs: _,
        heap_frees: _,
        heap_in_use_bytes: _,
        heap_peak_bytes: _,
        // Not a drop: `heapsnap` checks the `--elf`'s architecture against it.
        elf_machine: _,
    } = s.counters;
    let mut w = Vec::new();
    let mut add = |n: u64, text: &str| {
        if n != 0 {
            w.push(text.replace("{n}", &n.to_string()));
        }
    };
    add(
        stack_table_full,
        "stack table full: {n} samples dropped; raise STACKS (the profiler's `S` stacks or `F` frame-arena capacity)",
    );
    add(
        bucket_table_full,
        "bucket table full: {n} samples dropped; raise BUCKETS (the profiler's `B` capacity)",
    );
    add(live_map_full, "live-object map full: {n} sampled objects untracked, their frees are not credited (in use is overstated); raise LIVE (the profiler's `L` capacity)");
    add(
        reentrant,
        "re-entered: {n} allocations made while the profiler was recording were skipped",
    );
    add(unknown_frees, "{n} frees of addresses the live-object map did not know (freed before profiling started, or evicted)");
    add(
        truncated_stacks,
        "{n} stacks cut at the maximum depth: callers beyond it are missing; raise DEPTH (the profiler's `D`)",
    );
    if s.sample_rate == 0 {
        w.push("sampling was off (rate 0): the snapshot records nothing".to_owned());
    } else if s.cycle == 0 && s.counters.samples > 0 {
        w.push(format!(
            "no record cycle was ever closed: {} samples taken, none published (in use and allocated show nothing); call advance_cycle() where the heap means something, e.g. at the end of each main-loop turn",
            s.counters.samples
        ));
    }
    w
}

/// The exact heap totals in one line (`inspect`, and the [`HEAP_COMMENT`] that `top`
/// and the viewer show), `None` when the snapshot's profiler did not count them: an
/// absent total is never printed as a zero.
pub fn heap_line(s: &Snapshot) -> Option<String> {
    s.counters.heap().map(|h| {
        format!(
            "{} bytes in use in {} objects, peak {} bytes; {} allocs, {} frees",
            h.in_use_bytes,
            h.in_use_objects(),
            h.peak_bytes,
            h.allocs,
            h.frees
        )
    })
}

/// The drop counters by name: the counter table without the exact heap totals
/// (`heap_*`, shown by [`heap_line`] when they were counted) and the architecture
/// (`elf_machine`, shown by [`machine_name`] in the header).
pub(super) fn drop_counters(s: &Snapshot) -> impl Iterator<Item = (&'static str, u64)> {
    s.counters
        .iter()
        .filter(|(name, _)| !name.starts_with("heap_") && *name != "elf_machine")
}

/// A human name for an ELF `e_machine` (a snapshot's `elf_machine`, an ELF header's
/// field): the architectures firmware and hosts run on, else the number.
pub fn machine_name(machine: u64) -> String {
    let name = match machine {
        3 => "x86",
        8 => "MIPS",
        20 => "PowerPC",
        40 => "Arm",
        62 => "x86-64",
        83 => "AVR",
        94 => "Xtensa",
        105 => "MSP430",
        183 => "AArch64",
        243 => "RISC-V",
        _ => return format!("e_machine {machine}"),
    };
    format!("{name} (e_machine {machine})")
}

/// The snapshot's architecture for the header lines: its `elf_machine`, or unknown.
fn architecture(s: &Snapshot) -> String {
    match s.counters.elf_machine {
        0 if crate::import::legacy(s.version)
            .is_some_and(|l| l.kind == crate::import::Kind::Cpu) =>
        {
            "unknown (a gperftools CPU profile does not record it)".to_owned()
        }
        0 if crate::import::legacy(s.version).is_some() => {
            "unknown (a text profile does not record it)".to_owned()
        }
        0 => "unknown (the encoder predates elf_machine)".to_owned(),
        m => machine_name(m),
    }
}

/// The comments a converted profile carries: producer, header fields, counters, the
/// exact heap totals when counted, and warnings (pprof shows them with `-comments`).
/// A legacy text profile's producer and counters lines start with `#`, which pprof's
/// reports leave out of their header: pprof reading the same file prints none.
pub fn comments(s: &Snapshot) -> Vec<String> {
    let counters: Vec<String> = drop_counters(s)
        .map(|(name, v)| format!("{name}={v}"))
        .collect();
    if let Some(l) = crate::import::legacy(s.version) {
        let rate = match l.kind {
            crate::import::Kind::Heap => format!("sample rate {} bytes", s.sample_rate),
            _ => format!("period {}", s.sample_rate),
        };
        let mut v = vec![
            format!(
                "# read from a legacy {} profile ({}): word size {} (from the addresses), {rate}",
                l.kind.describe(),
                l.program,
                s.word_size
            ),
            format!("# counters: {}", counters.join(" ")),
        ];
        v.extend(warnings(s).into_iter().map(|w| format!("warning: {w}")));
        return v;
    }
    let mut head = format!(
        "heapsnap snapshot v{}: word size {}, sample rate {} bytes, cycle {}",
        s.version, s.word_size, s.sample_rate, s.cycle
    );
    if let Some(t) = s.timestamp {
        head += &format!(", timestamp {}", timestamp_text(&t));
    }
    let mut v = vec![head, format!("counters: {}", counters.join(" "))];
    v.extend(heap_line(s).map(|h| format!("{HEAP_COMMENT}{h}")));
    v.extend(warnings(s).into_iter().map(|w| format!("warning: {w}")));
    v
}

/// A device timestamp as `inspect` and the profile comments show it: the exact ticks,
/// the clock's rate and the seconds they make.
pub fn timestamp_text(t: &sampler_core::snapshot::Timestamp) -> String {
    format!(
        "{} ticks at {} Hz ({:.6} s)",
        t.ticks,
        t.ticks_per_second,
        t.seconds()
    )
}

/// The `heapsnap inspect` report. `name` shows a text from the snapshot (mapping
/// names): the CLI escapes control characters in it for the terminal.
pub fn report(s: &Snapshot, name: &dyn Fn(&str) -> std::borrow::Cow<'_, str>) -> String {
    let mut o = String::new();
    if let Some(l) = crate::import::legacy(s.version) {
        let _ = writeln!(
            o,
            "format           legacy {} profile ({})",
            l.kind.describe(),
            l.program
        );
    } else {
        let _ = writeln!(o, "format version   {}", s.version);
    }
    let _ = writeln!(o, "word size        {} bytes", s.word_size);
    let _ = writeln!(o, "architecture     {}", architecture(s));
    let kind = crate::import::kind_of(s);
    if kind != crate::import::Kind::Heap {
        return o + &other_kind_report(s, kind, name);
    }
    let _ = writeln!(
        o,
        "sample rate      {} bytes{}",
        s.sample_rate,
        match s.sample_rate {
            0 => " (off)",
            1 => " (every allocation)",
            _ => "",
        }
    );
    let _ = writeln!(o, "cycle            {}", s.cycle);
    if let Some(t) = s.timestamp {
        let _ = writeln!(o, "timestamp        {}", timestamp_text(&t));
    }
    o += &mappings_and_stacks(s, name);
    // u128: sums of any number of 64-bit counters, exact (no wrap, no panic).
    let (mut allocs, mut frees, mut ab, mut fb) = (0u128, 0u128, 0u128, 0u128);
    for b in &s.buckets {
        allocs += u128::from(b.active.allocs);
        frees += u128::from(b.active.frees);
        ab += u128::from(b.active.alloc_bytes);
        fb += u128::from(b.active.free_bytes);
    }
    let _ = writeln!(o, "sampled allocs   {allocs} ({ab} bytes)");
    let _ = writeln!(o, "sampled frees    {frees} ({fb} bytes)");
    let _ = writeln!(
        o,
        "sampled in use   {} ({} bytes)",
        allocs.saturating_sub(frees),
        ab.saturating_sub(fb)
    );
    let _ = writeln!(
        o,
        "heap (exact)     {}",
        heap_line(s).unwrap_or_else(|| "not counted (the profiler was built without TOTALS, or its encoder predates the heap totals)".to_owned())
    );
    let _ = writeln!(o, "counters");
    let width = drop_counters(s)
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    for (name, v) in drop_counters(s) {
        let _ = writeln!(o, "  {name:<width$} {v}");
    }
    let w = warnings(s);
    if w.is_empty() {
        let _ = writeln!(o, "warnings         none");
    } else {
        let _ = writeln!(o, "warnings");
        for w in w {
            let _ = writeln!(o, "  {w}");
        }
    }
    o
}

/// The mappings, stacks and bucket count lines of a report.
fn mappings_and_stacks(s: &Snapshot, name: &dyn Fn(&str) -> std::borrow::Cow<'_, str>) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "mappings         {}", s.mappings.len());
    for m in &s.mappings {
        let id = if m.build_id.is_empty() {
            "no build id".to_owned()
        } else {
            format!("build id {}", super::hex(&m.build_id))
        };
        let _ = writeln!(
            o,
            "  {:#x}-{:#x} @{:#x} {} ({id})",
            m.start,
            m.end,
            m.offset,
            name(&m.name)
        );
    }
    let frames: usize = s.stacks.iter().map(|st| st.frames.len()).sum();
    let _ = writeln!(
        o,
        "stacks           {} ({} frames, deepest {})",
        s.stacks.len(),
        frames,
        s.stacks.iter().map(|st| st.frames.len()).max().unwrap_or(0)
    );
    let _ = writeln!(o, "buckets          {}", s.buckets.len());
    o
}

/// The rest of the report of a legacy profile that is not a heap's: its period and
/// the totals of its sample types, where a heap's report has allocations and frees.
fn other_kind_report(
    s: &Snapshot,
    kind: crate::import::Kind<'_>,
    name: &dyn Fn(&str) -> std::borrow::Cow<'_, str>,
) -> String {
    let (pt, pu) = kind.period_type();
    let mut o = format!("period           {} ({pt}, {pu})\n", s.sample_rate);
    o += &mappings_and_stacks(s, name);
    let (mut first, mut second) = (0u128, 0u128);
    for b in &s.buckets {
        first += u128::from(b.active.allocs);
        second += u128::from(b.active.alloc_bytes);
    }
    let types = kind.sample_types();
    for ((t, u), total) in types.iter().zip([first, second]) {
        let _ = writeln!(o, "total {t:<10} {total} ({u})");
    }
    o
}

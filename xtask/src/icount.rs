//! What `ProfiledAlloc` adds to the not-sampled path on the device, in instructions
//! really executed: the link test's `icount` bin (`sampler-core/link-test/src/bin/
//! icount.rs`) built for thumbv7m and run on QEMU's Cortex-M3 (`lm3s6965evb`) with one
//! guest instruction per translation block (`-singlestep`) and every executed block
//! logged with its PC (`-d exec,nochain`): one log line per executed instruction. The
//! lines between each call of `heapsnap_icount_begin` and the next
//! `heapsnap_icount_end` are one measured segment.

use std::path::Path;

use object::{Object, ObjectSymbol};

use crate::firmware::{self, Machine};
use crate::tools::Res;

/// The `icount` bin's allocation/free pairs per allocator (its `ITERS`).
const ITERS: usize = 8;

/// Budget of the instructions `ProfiledAlloc` adds to a 16-byte allocation that is not
/// sampled (measured 7 on thumbv7m at opt-level "s" + LTO, rustc 1.95, 2026-11-25,
/// 10 before the countdown's store became unconditional; +2).
pub const ALLOC_BUDGET: i64 = 9;
/// Budget of the instructions it adds to the free of an object that was not sampled
/// (measured 7, 8 before the filter hash lost its shift; +2).
pub const FREE_BUDGET: i64 = 9;

/// The executed-PC log, in the run's folder.
const EXEC_LOG: &str = "exec.log";

/// The Cortex-M3 machine, one instruction per translation block, each executed block
/// (chaining off, so none is skipped) logged to [`EXEC_LOG`].
const LM3S6965_ICOUNT: Machine = Machine {
    args: firmware::lm3s6965_args!("-singlestep", "-d", "exec,nochain", "-D", EXEC_LOG),
    serial_capture: None,
    ..firmware::LM3S6965
};

/// Instructions executed per operation, each net of the marker calls' own (the empty
/// segment), one entry per iteration.
pub struct Counts {
    /// The marker calls alone (subtracted from the rest).
    pub glue: i64,
    pub inner_alloc: Vec<i64>,
    pub inner_free: Vec<i64>,
    pub profiled_alloc: Vec<i64>,
    pub profiled_free: Vec<i64>,
    /// One allocation at rate 1 (sampled: stack walk, interning) and its free.
    pub sampled_alloc: i64,
    pub sampled_free: i64,
}

impl Counts {
    /// What `ProfiledAlloc` adds to a not-sampled allocation, per iteration.
    pub fn alloc_adds(&self) -> Vec<i64> {
        diff(&self.profiled_alloc, &self.inner_alloc)
    }

    /// What it adds to the free of an unsampled object, per iteration.
    pub fn free_adds(&self) -> Vec<i64> {
        diff(&self.profiled_free, &self.inner_free)
    }
}

fn diff(a: &[i64], b: &[i64]) -> Vec<i64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

/// `min..=max` of a series (the series is never empty here).
pub fn range(v: &[i64]) -> (i64, i64) {
    let min = v.iter().copied().min().unwrap_or(0);
    let max = v.iter().copied().max().unwrap_or(0);
    (min, max)
}

/// "12", or "12..14" when the iterations disagree.
pub fn show(v: &[i64]) -> String {
    match range(v) {
        (a, b) if a == b => a.to_string(),
        (a, b) => format!("{a}..{b}"),
    }
}

/// Run `elf` (the thumbv7m `icount` bin) in QEMU with the executed-PC log in `out`,
/// and cut the log into the bin's segments.
pub fn measure(elf: &Path, out: &Path) -> Res<Counts> {
    let (begin, end, begin_size) = markers(elf)?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let log = out.join(EXEC_LOG);
    let _ = std::fs::remove_file(&log);
    firmware::ensure_qemu(&LM3S6965_ICOUNT)?;
    firmware::run_qemu(&LM3S6965_ICOUNT, elf, out)?;
    let text = std::fs::read_to_string(&log).map_err(|e| {
        format!(
            "QEMU wrote no executed-PC log ({}: {e}); `-d exec` unsupported?",
            log.display()
        )
    })?;
    let segs =
        segments(&text, begin, end, begin_size).map_err(|e| format!("{}: {e}", log.display()))?;
    let want = 1 + 4 * ITERS + 2;
    if segs.len() != want {
        return Err(format!(
            "{}: {} measured segments, the icount bin has {want} (1 empty, 4 × {ITERS} \
             iterations, a sampled alloc and free)",
            log.display(),
            segs.len()
        ));
    }
    let glue = segs[0];
    let net: Vec<i64> = segs[1..].iter().map(|s| s - glue).collect();
    let pick = |k: usize| -> Vec<i64> { (0..ITERS).map(|i| net[4 * i + k]).collect() };
    Ok(Counts {
        glue,
        profiled_alloc: pick(0),
        profiled_free: pick(1),
        inner_alloc: pick(2),
        inner_free: pick(3),
        sampled_alloc: net[4 * ITERS],
        sampled_free: net[4 * ITERS + 1],
    })
}

/// The two markers' addresses (Thumb bit cleared) and the begin marker's size.
fn markers(elf: &Path) -> Res<(u64, u64, u64)> {
    let data = std::fs::read(elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let file = object::File::parse(&*data)
        .map_err(|e| format!("{}: not an ELF file: {e}", elf.display()))?;
    let find = |name: &str| -> Res<(u64, u64)> {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| (s.address() & !1, s.size()))
            .ok_or(format!("{}: no symbol `{name}`", elf.display()))
    };
    let (begin, size) = find("heapsnap_icount_begin")?;
    let (end, _) = find("heapsnap_icount_end")?;
    if begin == end {
        return Err(format!(
            "{}: the begin and end markers share an address ({begin:#x}): folded by the linker",
            elf.display()
        ));
    }
    Ok((begin, end, size))
}

/// Instruction counts of the segments of an executed-PC log: the lines after a line at
/// `begin` up to (and without) the next line at `end`. Checks that the log really has
/// one instruction per line: the begin marker is straight-line code of several
/// instructions, so each of its calls must show as that many lines at increasing
/// addresses 2 or 4 bytes apart, ending at its last instruction.
fn segments(log: &str, begin: u64, end: u64, begin_size: u64) -> Res<Vec<i64>> {
    let mut segs = Vec::new();
    let mut cur: Option<i64> = None;
    let mut in_marker: Option<u64> = None;
    let mut lines = 0usize;
    for (n, line) in log.lines().enumerate() {
        // `Trace 0: 0x7f… [cs_base/pc/flags/cflags] symbol` (QEMU 7.2).
        let Some(rest) = line.strip_prefix("Trace ") else {
            continue;
        };
        let pc = rest
            .split_once('[')
            .and_then(|(_, r)| r.split('/').nth(1))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            .ok_or(format!("line {}: not a `-d exec` line: {line}", n + 1))?;
        lines += 1;
        // The begin marker's own instructions, call by call.
        if let Some(last) = in_marker {
            if (begin..begin + begin_size).contains(&pc) {
                if pc != last + 2 && pc != last + 4 {
                    return Err(format!(
                        "line {}: the begin marker ran {last:#x} then {pc:#x}: not one \
                         instruction per log line (is -singlestep honoured?)",
                        n + 1
                    ));
                }
                in_marker = Some(pc);
            } else {
                if last + 4 < begin + begin_size {
                    return Err(format!(
                        "line {}: the begin marker ({begin:#x}, {begin_size} B) left the \
                         log after {last:#x}: not one instruction per log line",
                        n + 1
                    ));
                }
                in_marker = None;
            }
        }
        if pc == begin {
            if cur.is_some() {
                return Err(format!("line {}: a begin marker inside a segment", n + 1));
            }
            cur = Some(0);
            in_marker = Some(pc);
        } else if pc == end {
            match cur.take() {
                Some(c) => segs.push(c),
                None => return Err(format!("line {}: an end marker with no begin", n + 1)),
            }
        } else if let Some(c) = cur.as_mut() {
            *c += 1;
        }
    }
    if lines == 0 {
        return Err("no `Trace` lines: QEMU logged no executed instruction".into());
    }
    if cur.is_some() {
        return Err("the log ends inside a measured segment".into());
    }
    if segs.is_empty() {
        return Err(format!(
            "{lines} executed instructions but no marker (begin {begin:#x}, end {end:#x}) \
             among them"
        ));
    }
    Ok(segs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pc: u64) -> String {
        format!("Trace 0: 0x7f0000000100 [00800400/{pc:08x}/00000110/ff000201] f\n")
    }

    #[test]
    fn counts_lines_between_markers_and_checks_single_steps() {
        // begin at 0x100 (3 instructions, 6 bytes), end at 0x200.
        let mut log = String::from("Timer with period zero, disabling\n");
        for pc in [
            0x80, 0x100, 0x102, 0x104, 0x90, 0x92, 0x200, 0x202, 0x100, 0x102, 0x104, 0x200,
        ] {
            log += &line(pc);
        }
        assert_eq!(segments(&log, 0x100, 0x200, 6).unwrap(), vec![4, 2]);
        // A multi-instruction block: the marker shows as one line.
        let log: String = [0x100, 0x90, 0x200].map(line).concat();
        assert!(segments(&log, 0x100, 0x200, 6)
            .unwrap_err()
            .contains("one instruction"));
        // No markers, no log: errors, never zero.
        assert!(segments(&line(0x80), 0x100, 0x200, 6)
            .unwrap_err()
            .contains("no marker"));
        assert!(segments("", 0x100, 0x200, 6)
            .unwrap_err()
            .contains("no `Trace`"));
        let open: String = [0x100, 0x102, 0x104, 0x90].map(line).concat();
        assert!(segments(&open, 0x100, 0x200, 6)
            .unwrap_err()
            .contains("ends inside"));
    }
}

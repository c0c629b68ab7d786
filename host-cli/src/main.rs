//! `heapsnap`: the terminal front end. Thin: parse flags, read inputs, call the
//! libraries (heapsnap-profile, heapsnap-symbolize), write data to stdout (or `-o`), a
//! one-line cause on error.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use heapsnap_profile::analysis::{self, Filter};
use heapsnap_profile::export;
use heapsnap_profile::import::{self, series, Input, Symbols};
use heapsnap_profile::limits::Limits;
use heapsnap_profile::profile::{self, Profile};
use heapsnap_symbolize::{Elf, Resolver};
use host_cli::files::{self, Input as In};
use host_cli::gdb::Gdb;
use host_cli::pull;
use host_cli::report::{self, printable};
use sampler_core::decoded::Snapshot;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Heap snapshots from a device or program to pprof, with DWARF symbolization; top,
/// diff and inspect in the terminal.
///
/// Inputs may be a snapshot file, a raw serial capture holding COBS-framed snapshots
/// (the last good one is used; `CAPTURE@N` picks the Nth good frame, `@-1` the last),
/// a pprof profile (gzipped or not), a gperftools or
/// jemalloc heap profile (text; symbolized like a snapshot, with --elf and the mapped
/// files), or `-` for stdin.
#[derive(Parser)]
#[command(name = "heapsnap", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Raise (or lower) a resource limit, NAME=N (repeatable; N may end in K, M, G, or
    /// be `none`): input-size, elf-size, inflated-size, entries-base, entries-per-byte,
    /// stack-depth, table-entries, lines-per-location, labels-per-sample. See
    /// docs/resource-limits.md.
    #[arg(long = "limit", value_name = "NAME=N", global = true)]
    limits: Vec<String>,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// pprof profile.proto, gzipped (go tool pprof, speedscope, the heapsnap viewer).
    Pprof,
    /// Folded stacks for flamegraph.pl / inferno: `root;…;leaf value` per line.
    Folded,
    /// Legacy gperftools heap text (`heap profile: …`), which pprof also reads.
    Text,
}

/// Output of `heapsnap timeline`.
#[derive(Clone, Copy, ValueEnum)]
enum TimelineFormat {
    /// A compact table, bad frames and the top growing functions after it.
    Table,
    /// CSV for scripts: one header row, one row per snapshot.
    Csv,
}

#[derive(clap::Args)]
struct SymArgs {
    /// ELF with DWARF to symbolize with (repeatable). Host programs are matched to the
    /// snapshot's mappings by GNU build id; firmware ELFs apply at link addresses.
    /// Without it, mappings that name a file on this machine are tried.
    #[arg(long = "elf", value_name = "FILE")]
    elf: Vec<PathBuf>,
    /// Do not look for mapped files on this machine.
    #[arg(long)]
    no_local: bool,
    /// Use the --elf files even when they do not fit the snapshot (another build id,
    /// another word size; firmware return addresses outside their code or not after a
    /// call in it). One --elf then serves every mapping of the snapshot.
    #[arg(long)]
    force_elf: bool,
}

/// The inputs of a leak check: the snapshot with its object table, the ELF, the RAM.
#[derive(clap::Args)]
struct LeakArgs {
    /// Snapshot with the object table (`write_snapshot_with_objects`),
    /// taken at the same moment as the RAM image.
    snapshot: String,
    /// The firmware's ELF: its .data and .bss are the roots (and its DWARF or symbols
    /// name the allocation sites).
    #[arg(long = "elf", value_name = "FILE")]
    elf: PathBuf,
    /// A RAM image and the address of its first byte, FILE@ADDR (repeatable; raw bytes
    /// as gdb's `dump binary memory`, `probe-rs read` or semihosting write them).
    #[arg(
        long = "ram",
        value_name = "FILE@ADDR",
        required_unless_present = "core"
    )]
    ram: Vec<String>,
    /// An ELF core file (gdb's `gcore`, a kernel's core dump) instead of or beside the
    /// RAM images: its segments are the memory, its first thread's registers the
    /// registers (--regs and --reg override them), and without a stack-top symbol the
    /// stack runs from their sp to the end of the segment holding it.
    #[arg(long, value_name = "FILE")]
    core: Option<PathBuf>,
    /// A stack range to scan as a root too, LO..HI (the live part: from the captured
    /// stack pointer to the stack's top). Default with --regs: from their sp to the
    /// ELF's stack top (`_stack_start`, `__StackTop`, `_estack`…).
    #[arg(long, value_name = "LO..HI")]
    stack: Option<String>,
    /// The registers at the moment of the RAM image, one per line (`r4=0x20001234`,
    /// or gdb's `info registers` output): pointers held only in registers are roots
    /// (named by register), and with pc and sp the stack is walked by the ELF's call
    /// frame information, its words named by frame (`stack of FUNCTION`) and, where
    /// DWARF locates them, by local variable (`FUNCTION::local`).
    #[arg(long, value_name = "FILE")]
    regs: Option<PathBuf>,
    /// One register, NAME=VALUE (repeatable; after --regs, so it overrides it).
    #[arg(long = "reg", value_name = "NAME=VALUE")]
    reg: Vec<String>,
    /// Use the ELF even when it does not fit the snapshot (see `convert --force-elf`).
    #[arg(long)]
    force_elf: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Leak check from a RAM image (valgrind's categories and words): what is
    /// definitely, indirectly or possibly lost, or still reachable, and the lost
    /// objects per allocation site. Exits 1 when anything is definitely or indirectly
    /// lost, so CI can fail on a leak.
    Leaks {
        #[command(flatten)]
        args: LeakArgs,
    },
    /// Who holds the memory: a pprof profile whose stacks are reference paths (root
    /// static → holding objects → allocation site), for `go tool pprof` or the viewer.
    Retain {
        #[command(flatten)]
        args: LeakArgs,
        /// Output file (default: stdout, not a terminal).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Convert a snapshot, serial capture or any profile heapsnap reads (legacy text,
    /// folded stacks, pprof) to pprof (default), folded stacks or legacy heap text.
    Convert {
        /// Snapshot, serial capture, profile, or `-` for stdin.
        snapshot: String,
        #[command(flatten)]
        sym: SymArgs,
        /// Output file (default: stdout; pprof is not written to a terminal).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "pprof")]
        format: Format,
        /// Sample type for folded output (name or index). Default: the profile's
        /// default (inuse_space for heap profiles, the last type as pprof's otherwise).
        #[arg(long, default_value = "", hide_default_value = true)]
        sample_index: String,
    },
    /// Functions by flat value: the table `go tool pprof -top -nodefraction=0` prints.
    Top {
        /// Snapshot, serial capture, pprof profile, or `-`.
        file: String,
        #[command(flatten)]
        sym: SymArgs,
        /// Sample type: name (inuse_space, alloc_objects, …) or index. Default: the
        /// profile's default (inuse_space for heap profiles).
        #[arg(long, value_name = "NAME|N")]
        sample_index: Option<String>,
        /// Show at most N rows. Unlike pprof's `-nodecount`, the (inline) labels stay those
        /// of the full table (pprof relabels after dropping the other nodes).
        #[arg(short = 'n', long, value_name = "N")]
        nodecount: Option<usize>,
    },
    /// What grew from BASE to NEW (NEW − BASE per stack): the leak hunt. Prints the top
    /// table of the difference, or with `-o` writes a pprof profile
    /// (`go tool pprof -diff_base` semantics) for pprof or the viewer.
    Diff {
        /// The earlier snapshot or profile; CAPTURE@N for the Nth good frame of a
        /// serial capture (from 0; negative from the end, @-1 = the last).
        base: String,
        /// The later snapshot or profile (or CAPTURE@N).
        new: String,
        #[command(flatten)]
        sym: SymArgs,
        /// Write the difference as a gzipped pprof profile instead of a table.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Sample type of the table (name or index).
        #[arg(long, value_name = "NAME|N")]
        sample_index: Option<String>,
        /// Show at most N rows.
        #[arg(short = 'n', long, value_name = "N")]
        nodecount: Option<usize>,
    },
    /// The heap over time: per snapshot of a serial capture (every good frame, in
    /// order) or of several files (by cycle when all are snapshots), its cycle, bytes
    /// and objects in use and the non-zero drop counters; the bad frames with their
    /// offsets; then the functions whose in-use bytes grew most from the first to the
    /// last snapshot (what `heapsnap diff FIRST LAST` shows for them).
    Timeline {
        /// One serial capture, or several snapshot or profile files.
        #[arg(required = true, value_name = "CAPTURE|FILES")]
        inputs: Vec<String>,
        #[command(flatten)]
        sym: SymArgs,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: TimelineFormat,
        /// Show at most N growing functions.
        #[arg(short = 'n', long, value_name = "N", default_value_t = 10)]
        nodecount: usize,
    },
    /// Header, table sizes, every drop counter and plain-language warnings.
    Inspect {
        /// Snapshot, serial capture, or `-`.
        snapshot: String,
    },
    /// Read the latest snapshot out of a target's RAM mailbox (`SnapshotMailbox`)
    /// through a GDB server (QEMU -gdb, OpenOCD, probe-rs gdb, JLinkGDBServer), running
    /// or halted; the target keeps running afterwards. No transport code in the firmware.
    Pull {
        /// The firmware's ELF: where the mailbox symbol is.
        #[arg(long, value_name = "FILE")]
        elf: PathBuf,
        /// The GDB server, HOST:PORT (QEMU `-gdb tcp::1234`: localhost:1234; OpenOCD:
        /// localhost:3333; probe-rs gdb: localhost:1337; JLinkGDBServer: localhost:2331).
        #[arg(long, value_name = "HOST:PORT")]
        gdb: String,
        /// Output file (default: stdout, not a terminal). With --count N > 1, the files
        /// are numbered: `snap.bin` → `snap-000.bin`, `snap-001.bin`, …
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// The mailbox's symbol in the ELF.
        #[arg(long, value_name = "NAME", default_value = sampler_core::mailbox::MAILBOX_SYMBOL)]
        symbol: String,
        /// Snapshots to pull, one connection, the target running in between.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        count: u32,
        /// Seconds between two pulls of --count.
        #[arg(long, value_name = "SECONDS", default_value_t = 1.0)]
        interval: f64,
        /// Seconds to wait for the GDB server's each answer.
        #[arg(long, value_name = "SECONDS", default_value_t = 5.0)]
        timeout: f64,
    },
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        // One line: the cause chain joined, each cause once.
        eprintln!("heapsnap: {}", printable(&report::error_line(e.chain())));
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    let mut limits = Limits::default();
    for l in &cli.limits {
        limits.set(l).map_err(|e| anyhow::anyhow!("--limit {e}"))?;
    }
    let limits = &limits;
    match cli.cmd {
        Cmd::Convert {
            snapshot,
            sym,
            output,
            format,
            sample_index,
        } => {
            check_output(output.as_deref(), &[&snapshot], &sym)?;
            // Snapshots and legacy text are symbolized; what reads as a profile already
            // (pprof, folded stacks) is written out as it is.
            let (p, snap) = match read_input(&snapshot, limits)? {
                (Input::Snapshot { snapshot: snap, .. }, len) => {
                    if let Some(l) =
                        import::legacy(snap.version).filter(|l| l.kind != import::Kind::Heap)
                    {
                        if matches!(format, Format::Text) {
                            bail!(
                                "{snapshot}: --format text writes a heap profile, and this is a {} profile; use --format pprof or folded",
                                l.kind.describe()
                            );
                        }
                    }
                    (symbolized(&snap, len, &sym, limits)?, Some(snap))
                }
                (Input::Profile(p), _) => {
                    if matches!(format, Format::Text) {
                        bail!("{snapshot}: --format text writes a heap profile from a snapshot or a legacy heap profile, and this is already a profile; use --format pprof or folded");
                    }
                    (p, None)
                }
            };
            let text = match (format, &snap) {
                (Format::Text, Some(snap)) => Some(export::legacy_text(snap, Some(&p))),
                (Format::Folded, _) => {
                    let i = sample_index_of(&p, Some(&sample_index))?;
                    Some(export::folded(&p, i))
                }
                _ => None,
            };
            print_warnings(&snapshot, &p);
            match text {
                // Streamed (see `write_profile`).
                None => write_profile(output.as_deref(), &p),
                Some(t) => write_out(output.as_deref(), t.as_bytes(), false),
            }
        }
        Cmd::Top {
            file,
            sym,
            sample_index,
            nodecount,
        } => {
            let p = read_profile_as(&file, &sym, limits, Samples::MergedByStack)?;
            print_top(&p, sample_index.as_deref(), nodecount, false)
                .with_context(|| file.clone())?;
            print_warnings(&file, &p);
            // Not dropped: the process ends here and the system takes its memory back
            // at once, where freeing a sample at a time (a block per stack) was 60–90
            // ms of `top` on a 30 MB Go heap profile.
            std::mem::forget(p);
            Ok(())
        }
        Cmd::Diff {
            base,
            new,
            sym,
            output,
            sample_index,
            nodecount,
        } => {
            check_output(output.as_deref(), &[&base, &new], &sym)?;
            // One input at a time: NEW is folded into the difference and dropped before
            // BASE is read (pprof's order: NEW's samples first), so the peak is one
            // decoded input and the difference, not both inputs and the difference.
            let mut m = profile::Merger::new();
            let mut warnings = Vec::new();
            for (path, role) in [(&new, "new"), (&base, "base")] {
                let p =
                    read_profile(path, &sym, limits).with_context(|| format!("{role} {path}"))?;
                warnings.push((path, owned(p.warnings())));
                let r = if role == "base" {
                    m.add_base(role, p)
                } else {
                    m.add(role, p)
                };
                r.with_context(|| format!("cannot compare base {base} with new {new}"))?;
            }
            let d = m.finish()?;
            match output {
                Some(o) => write_profile(Some(&o), &d)?,
                None => print_top(&d, sample_index.as_deref(), nodecount, true)
                    .with_context(|| format!("the difference of base {base} and new {new}"))?,
            }
            // Base first, as before.
            for (path, w) in warnings.iter().rev() {
                print_warning_list(path, w);
            }
            Ok(())
        }
        Cmd::Leaks { args } => {
            let leaky = leak_check(&args, limits, |leaks, mut stacks, notes| {
                let text = heapsnap_profile::leaks::summary(leaks, &mut stacks, notes);
                write_out(None, text.as_bytes(), false)?;
                Ok(leaks.has_leaks())
            })?;
            if leaky {
                std::process::exit(1);
            }
            Ok(())
        }
        Cmd::Retain { args, output } => {
            check_output(
                output.as_deref(),
                &[&args.snapshot],
                &SymArgs {
                    elf: vec![args.elf.clone()],
                    no_local: true,
                    force_elf: false,
                },
            )?;
            let p = leak_check(&args, limits, |leaks, stacks, notes| {
                Ok(heapsnap_profile::leaks::retention_profile(
                    leaks, stacks, notes,
                ))
            })?;
            write_profile(output.as_deref(), &p)
        }
        Cmd::Timeline {
            inputs,
            sym,
            format,
            nodecount,
        } => timeline(&inputs, &sym, format, nodecount, limits),
        Cmd::Inspect { snapshot } => {
            let (snap, _) = read_snapshot(&snapshot, limits)?;
            write_out(
                None,
                import::inspect_report(&snap, &printable).as_bytes(),
                false,
            )
        }
        Cmd::Pull {
            elf,
            gdb,
            output,
            symbol,
            count,
            interval,
            timeout,
        } => pull(
            &elf,
            &gdb,
            output.as_deref(),
            &symbol,
            count,
            interval,
            timeout,
        ),
    }
}

/// `heapsnap timeline`: the inputs read as one series, a row per good point, and
/// (with two points or more) the growth from the first to the last, each symbolized
/// and pruned as `heapsnap diff` reads them.
///
/// A serial capture is streamed frame by frame: only the frame being read is held (at
/// most `input-size` bytes, the limit a whole input has elsewhere), plus one small row
/// per good frame, so a capture of any size is read in bounded memory. Other inputs
/// are read whole within `input-size`.
fn timeline(
    inputs: &[String],
    sym: &SymArgs,
    format: TimelineFormat,
    n: usize,
    limits: &Limits,
) -> Result<()> {
    if inputs.iter().filter(|i| *i == "-").count() > 1 {
        bail!("stdin (`-`) can be read once only");
    }
    // Each input's first bytes say whether it is a capture.
    let mut opened = Vec::new();
    for path in inputs {
        let mut reader: Box<dyn Read> = if path == "-" {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(std::fs::File::open(path).with_context(|| format!("cannot read {path}"))?)
        };
        let mut head = Vec::new();
        (&mut reader)
            .take(SNIFF_BYTES)
            .read_to_end(&mut head)
            .with_context(|| format!("cannot read {path}"))?;
        let capture = series::looks_like_capture(&head);
        opened.push((path.as_str(), head, reader, capture));
    }
    // Bytes read of each input: what a point's conversion budget is relative to.
    let mut sizes: Vec<(&str, u64)> = Vec::new();
    let max_frame = usize::try_from(limits.input_size).unwrap_or(usize::MAX);
    let points = if opened.iter().any(|o| o.3) {
        // Captures keep the order given (each one the device's stream order).
        let mut points = series::Points::default();
        for (path, head, reader, capture) in opened {
            let input = std::io::Cursor::new(head).chain(reader);
            if capture {
                let read = points.stream_capture(path, input, max_frame)?;
                sizes.push((path, read));
            } else {
                let bytes = read_all_capped(path, input, limits)?;
                let s = series::read_series([(path, bytes.as_slice())], limits)?;
                sizes.push((path, bytes.len() as u64));
                for item in s.items {
                    points.push(item);
                }
            }
        }
        points.check_not_empty()?;
        points
    } else {
        let mut files = Vec::new();
        for (path, head, reader, _) in opened {
            let input = std::io::Cursor::new(head).chain(reader);
            let bytes = read_all_capped(path, input, limits)?;
            sizes.push((path, bytes.len() as u64));
            files.push((path, bytes));
        }
        let s = series::read_series(files.iter().map(|(p, b)| (*p, b.as_slice())), limits)?;
        series::Points::from_series(s)
    };
    let growth = match (&points.first, &points.last) {
        (Some(first), Some(last)) => {
            // The input an item came from (a capture's frame: `FILE@i`).
            let len = |name: &str| {
                sizes
                    .iter()
                    .find(|(p, _)| {
                        name.strip_prefix(*p)
                            .is_some_and(|r| r.is_empty() || r.starts_with('@'))
                    })
                    .map_or(0, |(_, b)| *b)
            };
            let a = item_profile(first, len(&first.name), sym, limits)?;
            let b = item_profile(last, len(&last.name), sym, limits)?;
            let (rows, unit) = analysis::growth(&a, &b, "inuse_space", n)
                .with_context(|| format!("growth from {} to {}", first.name, last.name))?;
            print_warnings(&first.name, &a);
            print_warnings(&last.name, &b);
            Some(host_cli::timeline::Growth { rows, unit })
        }
        _ => None,
    };
    let text = match format {
        TimelineFormat::Csv => host_cli::timeline::csv(&points, growth.as_ref()),
        TimelineFormat::Table => host_cli::timeline::table(&points, growth.as_ref()),
    };
    write_out(None, text.as_bytes(), false)
}

/// Bytes `timeline` reads of an input before deciding whether it is a serial capture.
const SNIFF_BYTES: u64 = 64 << 10;

/// The rest of an input read whole, within the `input-size` limit.
fn read_all_capped(path: &str, input: impl Read, limits: &Limits) -> Result<Vec<u8>> {
    read_capped_from(
        input,
        None,
        Path::new(path),
        "input",
        limits.input_size,
        "input-size",
        b"",
    )
}

/// A point of a series as `heapsnap diff` reads an input: a snapshot symbolized (its
/// input counted as `input_len` bytes), a profile as is, then pprof's frame pruning.
fn item_profile(
    item: &series::Item,
    input_len: u64,
    sym: &SymArgs,
    limits: &Limits,
) -> Result<Profile> {
    let mut p = match &item.input {
        Input::Snapshot { snapshot, .. } => {
            symbolized(snapshot, input_len, sym, limits).with_context(|| item.name.clone())?
        }
        Input::Profile(p) => p.clone(),
    };
    if let Err(e) = p.remove_uninteresting_frames() {
        warn(&format!(
            "{}: warning: {e}; no frames dropped (as go tool pprof)",
            item.name
        ));
    }
    Ok(p)
}

/// `heapsnap pull`: the mailbox from the ELF, then `count` reads through the GDB server,
/// letting the target run `interval` seconds between them; detach at the end (also
/// after an error, so the target is not left halted).
fn pull(
    elf: &Path,
    addr: &str,
    output: Option<&Path>,
    symbol: &str,
    count: u32,
    interval: f64,
    timeout: f64,
) -> Result<()> {
    let secs = |s: f64, what| {
        Duration::try_from_secs_f64(s).with_context(|| format!("--{what} {s}: not a duration"))
    };
    let (interval, timeout) = (secs(interval, "interval")?, secs(timeout, "timeout")?);
    if count > 1 && output.is_none_or(|o| o == Path::new("-")) {
        bail!("--count {count} writes numbered files: give -o FILE");
    }
    let bytes = std::fs::read(elf).with_context(|| format!("cannot read ELF {}", elf.display()))?;
    let mailbox = pull::Mailbox::find(&elf.display().to_string(), &bytes, symbol)?;
    let mut gdb = Gdb::connect(addr, timeout)?;
    let mut pulled = Vec::new();
    let r = (|| -> Result<()> {
        gdb.halt()?;
        for i in 0..count {
            if i > 0 {
                gdb.resume()?;
                std::thread::sleep(interval);
                gdb.interrupt()?;
            }
            pulled.push(pull::read(&mut gdb, &mailbox)?);
        }
        Ok(())
    })();
    let detached = gdb.detach();
    r?;
    detached?;
    for (i, p) in pulled.iter().enumerate() {
        let out = match output {
            Some(o) if count > 1 => Some(numbered(o, i)),
            o => o.map(Path::to_path_buf),
        };
        eprintln!(
            "heapsnap: {} bytes from {} at {:#x} (publish {}{}) -> {}",
            p.bytes.len(),
            mailbox.symbol,
            mailbox.addr,
            p.header.seq / 2,
            if p.torn > 0 {
                format!(", after {} torn read(s)", p.torn)
            } else {
                String::new()
            },
            out.as_deref()
                .map_or("stdout".into(), |o| o.display().to_string())
        );
        if p.header.too_big > 0 || p.header.failed > 0 {
            eprintln!(
                "heapsnap: warning: {} publish(es) did not fit in the mailbox (the last of them needed {} bytes of {}), {} failed otherwise",
                p.header.too_big, p.header.needed, p.header.capacity, p.header.failed
            );
        }
        write_out(out.as_deref(), &p.bytes, true)?;
    }
    Ok(())
}

/// The leak check of `heapsnap leaks` and `heapsnap retain`: reads the snapshot, the
/// ELF and the images, scans, and hands the answer, the symbolized stacks and the
/// notes (partial-answer warnings, roots left out) to `show`.
fn leak_check<R>(
    a: &LeakArgs,
    limits: &Limits,
    show: impl FnOnce(&heapsnap_profile::leaks::Leaks, import::SiteStacks<'_>, &[String]) -> Result<R>,
) -> Result<R> {
    use heapsnap_profile::leaks;
    let (snap, _) = read_snapshot(&a.snapshot, limits)?;
    let objects = leaks::objects_of(&snap).with_context(|| a.snapshot.clone())?;
    let name = a.elf.display().to_string();
    let bytes = read_capped(&a.elf, "ELF", limits.elf_size, "elf-size", b"\x7fELF")?;
    let elf = Elf::parse_lenient(&name, &bytes)?;
    let statics = heapsnap_symbolize::static_data(&name, &bytes)?;
    if u32::from(statics.word_size) != u32::from(snap.word_size) {
        bail!(
            "{name} is a {}-bit program but the snapshot {} was written by a {}-bit one: not the same program",
            statics.word_size * 8,
            a.snapshot,
            snap.word_size * 8
        );
    }
    let mut notes = leaks::partial_answer_warnings(&snap);
    if !elf.has_dwarf() && elf.has_symbols() {
        notes.push(format!(
            "note: {name} has no DWARF: allocation sites are named from its symbol table, without files and lines"
        ));
    } else if !elf.has_dwarf() {
        notes.push(format!(
            "note: {name} has neither DWARF nor a symbol table (fully stripped): allocation sites and stack frames are code addresses, roots are whole sections (.data+0x0), and a section holding the heap arena is not scanned at all, so an object held only by a static in it looks lost; use the unstripped ELF"
        ));
    }
    let types = match &statics.types {
        Ok(t) => Some(t),
        Err(why) => {
            notes.push(format!(
                "note: {name}: {why}: no typed scan; references are found by a conservative scan only, so reference paths name the root static and each holding object's allocation site, not fields"
            ));
            None
        }
    };
    let mut images = Vec::new();
    for spec in &a.ram {
        let (file, addr) = spec.rsplit_once('@').with_context(|| {
            format!("--ram {spec}: expected FILE@ADDR (e.g. ram.bin@0x20000000)")
        })?;
        let addr = parse_addr(addr).with_context(|| format!("--ram {spec}: bad address"))?;
        let bytes = read_capped(
            Path::new(file),
            "RAM image",
            limits.input_size,
            "input-size",
            b"",
        )?;
        images.push(leaks::Image {
            name: file.to_owned(),
            addr,
            bytes,
        });
    }
    let core = match &a.core {
        Some(f) => {
            let data = read_capped(f, "core file", limits.input_size, "input-size", b"\x7fELF")?;
            let core = heapsnap_symbolize::read_core(&f.display().to_string(), &data)
                .map_err(anyhow::Error::msg)?;
            if core.machine != elf.machine() {
                bail!(
                    "--core {}: a core of ELF machine {} but {name} is for machine {}: not this program's core",
                    f.display(),
                    core.machine,
                    elf.machine()
                );
            }
            Some(core)
        }
        None => None,
    };
    images.extend(core.iter().flat_map(|c| c.images.iter().cloned()));
    let mut memory = leaks::Memory::new(images, statics.word_size, statics.big_endian)?;
    let mut roots = statics.roots.clone();
    let mut regs = core
        .as_ref()
        .map(|c| c.registers.clone())
        .unwrap_or_default();
    if let Some(f) = &a.regs {
        let text = std::fs::read_to_string(f)
            .with_context(|| format!("--regs {}: cannot read it", f.display()))?;
        regs.parse_text(elf.machine(), &text, &f.display().to_string())
            .map_err(anyhow::Error::msg)?;
    }
    for spec in &a.reg {
        let (n, v) = spec
            .split_once('=')
            .with_context(|| format!("--reg {spec}: expected NAME=VALUE (e.g. r4=0x20001234)"))?;
        let v = parse_addr(v).with_context(|| format!("--reg {spec}: bad value"))?;
        if !regs
            .set(elf.machine(), n.trim(), v)
            .map_err(|e| anyhow::anyhow!("--reg {spec}: {e}"))?
        {
            bail!("--reg {spec}: {n} is not a general-purpose register of this program's machine");
        }
    }
    let stack = match &a.stack {
        Some(st) => {
            let (lo, hi) = st
                .split_once("..")
                .with_context(|| format!("--stack {st}: expected LO..HI"))?;
            let (lo, hi) = (parse_addr(lo)?, parse_addr(hi)?);
            if hi < lo {
                bail!("--stack {st}: the range ends before it starts");
            }
            Some((lo, hi))
        }
        None => match regs.sp(elf.machine()) {
            Some(sp) => match (
                heapsnap_symbolize::stack_top(&bytes),
                core.as_ref().and_then(|c| c.image_end(sp)),
            ) {
                (None, Some(top)) => {
                    notes.push(format!(
                        "note: stack {sp:#x}..{top:#x}: from the registers' sp to the end of the core's segment holding it"
                    ));
                    Some((sp, top))
                }
                (symbol, _) => {
                    let (sym, top) = symbol.with_context(|| {
                        format!("the registers give sp = {sp:#x} but {name} has no stack-top symbol (_stack_start, __StackTop, _estack): give the stack with --stack {sp:#x}..TOP")
                    })?;
                    if top < sp {
                        bail!("the registers' sp {sp:#x} is above the stack top {top:#x} ({sym} in {name}): not this program's registers, or give --stack LO..HI");
                    }
                    notes.push(format!(
                        "note: stack {sp:#x}..{top:#x}: from the registers' sp to {sym}"
                    ));
                    Some((sp, top))
                }
            },
            None => None,
        },
    };
    if stack.is_some() || !regs.regs.is_empty() {
        let (lo, hi) = stack.unwrap_or((0, 0));
        let named = heapsnap_symbolize::stack_roots(&elf, &bytes, &memory, &regs, (lo, hi));
        if stack.is_some() {
            roots.extend(named.roots);
            if !named.frames.is_empty() {
                notes.push(format!(
                    "note: stack frames, innermost first: {}",
                    named
                        .frames
                        .iter()
                        .map(|f| f.function.as_str())
                        .collect::<Vec<_>>()
                        .join(" <- ")
                ));
            }
        }
        notes.extend(named.notes);
        roots.extend(memory.add_registers(&named.registers));
    }
    for s in &statics.skipped {
        notes.push(format!(
            "note: section {} ({:#x}..{:#x}) is not scanned (stack or heap region: its dead words would hide leaks); give the live stack with --stack LO..HI",
            s.name,
            s.start,
            s.start + s.size
        ));
    }
    let result = leaks::scan_typed(&memory, roots, objects, types)
        .with_context(|| format!("leak check of {} with {name}", a.snapshot))?;
    for r in &result.excluded {
        notes.push(format!(
            "note: {} ({:#x}..{:#x}) is not scanned as a root: heap objects lie in it (the heap arena)",
            r.name,
            r.start,
            r.start + r.size
        ));
    }
    let mut resolver = if a.force_elf {
        Resolver::forced(&snap, vec![elf], None)?
    } else {
        Resolver::new(&snap, vec![elf], None)?
    };
    if !a.force_elf {
        resolver.verify()?;
    }
    let stacks = import::SiteStacks::new(
        &snap,
        &mut resolver as &mut dyn Symbols,
        &[("inuse_objects", "count"), ("inuse_space", "bytes")],
    );
    show(&result, stacks, &notes)
}

/// `0x20000000` or `536870912`.
fn parse_addr(s: &str) -> Result<u64> {
    let s = s.trim();
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(&h.replace('_', ""), 16),
        None => s.replace('_', "").parse(),
    };
    r.with_context(|| format!("`{s}` is not an address (hex 0x… or decimal)"))
}

/// `snap.bin` → `snap-003.bin`.
fn numbered(path: &Path, i: usize) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{i:03}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{i:03}"),
    };
    path.with_file_name(name)
}

/// The sample index a `--sample-index` asks for: the profile's default when the flag
/// is absent or empty (as pprof's `-sample_index=`).
fn sample_index_of(p: &Profile, flag: Option<&str>) -> Result<usize> {
    match flag {
        Some(name) if !name.is_empty() => p.sample_index(name).map_err(anyhow::Error::msg),
        _ => Ok(p.default_sample_index()),
    }
}

fn print_top(
    p: &Profile,
    sample_index: Option<&str>,
    n: Option<usize>,
    signed: bool,
) -> Result<()> {
    let i = sample_index_of(p, sample_index)?;
    let table = analysis::top(p, i, &Filter::none())?;
    let (ty, unit) = p.sample_types().get(i).copied().unwrap_or(("", ""));
    // pprof's header (`ProfileLabels`): the comments not starting with `#` (a heapsnap
    // conversion's exact heap totals and warnings among them), then the type when it
    // has a name. File, Build ID, Time and Duration are not printed.
    let mut text = String::new();
    for c in p.comments() {
        if !c.starts_with('#') {
            text.push_str(&printable(c));
            text.push('\n');
        }
    }
    if !ty.is_empty() {
        text.push_str(&format!("Type: {}\n", printable(ty)));
    }
    if signed {
        // pprof's -diff_base arithmetic, whose percentages are of the base's total. On
        // stderr: stdout is the table pprof prints.
        eprintln!(
            "heapsnap: diff: new − base per stack; percentages are of the base's total ({}), as go tool pprof -diff_base shows them",
            analysis::scaled_label(table.total, unit, "auto")
        );
    }
    text.push_str(&report::top_text(&table, unit, n));
    write_out(None, text.as_bytes(), false)
}

/// Reads a path or `-` (stdin) fully, refusing more than `cap` bytes (the limit
/// `name`): a regular file by its size before reading, anything else (a pipe, a
/// device such as /dev/zero) by reading no further than the cap, into a buffer that
/// never grows past it.
///
/// `magic`, when not empty, is what the file must start with (an ELF's `\x7fELF`):
/// checked on the first bytes read; without it only those are returned (for the
/// parser's message), so a device is never read far.
fn read_capped(path: &Path, what: &str, cap: u64, name: &str, magic: &[u8]) -> Result<Vec<u8>> {
    let cannot = || cannot_read(what, path);
    let (reader, size): (Box<dyn Read>, _) = if path == Path::new("-") {
        (Box::new(std::io::stdin().lock()), None)
    } else {
        let f = std::fs::File::open(path).with_context(cannot)?;
        let meta = f.metadata().with_context(cannot)?;
        if meta.is_file() && meta.len() > cap {
            return Err(too_big(what, path, &meta.len().to_string(), name, cap));
        }
        (Box::new(f), meta.is_file().then_some(meta.len()))
    };
    read_capped_from(reader, size, path, what, cap, name, magic)
}

/// [`read_capped`] on an opened reader (of `size` bytes if known), named `path`.
fn read_capped_from(
    mut reader: impl Read,
    size: Option<u64>,
    path: &Path,
    what: &str,
    cap: u64,
    name: &str,
    magic: &[u8],
) -> Result<Vec<u8>> {
    let mut v: Vec<u8> = Vec::new();
    if let Some(n) = size.filter(|_| magic.is_empty()) {
        // A regular file's size is known: read into exactly that (and one byte to see
        // it grew), not into the doubling that took up to twice the file.
        v.reserve_exact(n as usize + 1);
    }
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).with_context(|| cannot_read(what, path)),
        };
        if (v.len() + n) as u64 > cap {
            return Err(too_big(what, path, &format!("more than {cap}"), name, cap));
        }
        if v.len() + n > v.capacity() {
            // Doubling, but never past the cap.
            let want = (v.len() * 2).max(v.len() + n).max(1 << 16);
            let cap = usize::try_from(cap).unwrap_or(usize::MAX);
            v.reserve_exact(want.min(cap) - v.len());
        }
        let len = v.len();
        v.extend_from_slice(&buf[..n]);
        if len < magic.len() && (v.len() >= magic.len() || n == 0) && !v.starts_with(magic) {
            // Not that kind of file: its first bytes are enough for the parser to say
            // what it is instead, and the rest is not read.
            return Ok(v);
        }
        if n == 0 {
            return Ok(v);
        }
    }
}

/// The error for a file over its size limit `name`.
fn too_big(what: &str, path: &Path, size: &str, name: &str, cap: u64) -> anyhow::Error {
    anyhow::anyhow!(
        "{what} {} is {size} bytes, over the limit {name}={cap}; raise it with --limit {name}=N if the file is trusted",
        path.display()
    )
}

/// The context of a read that failed.
fn cannot_read(what: &str, path: &Path) -> String {
    match what {
        "input" => format!("cannot read {}", path.display()),
        _ => format!("cannot read {what} {}", path.display()),
    }
}

/// An input's bytes (file or `-`), within the `input-size` limit.
fn read_input_bytes(path: &str, limits: &Limits) -> Result<Vec<u8>> {
    read_capped(
        Path::new(path),
        "input",
        limits.input_size,
        "input-size",
        b"",
    )
}

/// How a pprof input's samples are decoded.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Samples {
    /// Each as written, with every label: what a conversion or a diff writes out.
    Kept,
    /// Merged by stack while read ([`analysis::decode_compact`]: numeric labels
    /// dropped, the diff-base label kept), for a report that only sums them by stack
    /// (`top`): a fraction of the memory and time of a profile of many samples.
    MergedByStack,
}

/// Reads an input (file or `-`) within the limits: the decoded input and its size
/// in bytes (what the entry budget of a later conversion is relative to).
fn read_input(path: &str, limits: &Limits) -> Result<(Input, u64)> {
    read_input_as(path, limits, Samples::Kept)
}

/// [`read_input`], a pprof input's samples decoded as `samples` says.
fn read_input_as(path: &str, limits: &Limits, samples: Samples) -> Result<(Input, u64)> {
    if let Some((capture, index)) = frame_pick(path) {
        let bytes = read_input_bytes(capture, limits)?;
        let s = series::read_series([(capture, bytes.as_slice())], limits)?;
        let (frames, bad) = (s.frames, s.bad.len());
        let item = s.take(capture, index)?;
        if frames > 0 {
            warn(&format!(
                "{path}: the frame at offset {} of a serial capture with {frames} frame(s), {bad} bad",
                item.offset.unwrap_or(0)
            ));
        }
        return Ok((item.input, bytes.len() as u64));
    }
    let bytes = read_input_bytes(path, limits)?;
    if samples == Samples::MergedByStack && import::is_pprof(&bytes) {
        // On an error, the whole decoder below names it (the same scan and checks).
        if let Ok(p) = analysis::decode_compact_limited(&bytes, limits) {
            return Ok((Input::Profile(p), bytes.len() as u64));
        }
    }
    let i = import::guess_limited(&bytes, limits).with_context(|| path.to_owned())?;
    if let Input::Snapshot {
        bad_frames, frames, ..
    } = &i
    {
        if *frames > 0 {
            warn(&format!("{path}: serial capture with {frames} frame(s), {bad_frames} bad; using the last good snapshot"));
        }
    }
    Ok((i, bytes.len() as u64))
}

/// `CAPTURE@N` (N an integer, negative from the end) when `path` is not itself an
/// existing file: the capture's path and N.
fn frame_pick(path: &str) -> Option<(&str, i64)> {
    let (file, n) = path.rsplit_once('@')?;
    let n = n.parse().ok()?;
    (!file.is_empty() && !Path::new(path).exists()).then_some((file, n))
}

fn read_snapshot(path: &str, limits: &Limits) -> Result<(Snapshot, u64)> {
    match read_input(path, limits)? {
        (Input::Snapshot { snapshot, .. }, len) => Ok((snapshot, len)),
        (Input::Profile(_), _) => bail!("{path} is a pprof profile, not a snapshot"),
    }
}

/// The profile's warnings (the one set a snapshot conversion writes, see
/// `import::warnings`) on stderr, so `top`, `diff` and `convert` say what `inspect`
/// says. After the command's output: an error stays the one line it is.
fn print_warnings(path: &str, p: &Profile) {
    print_warning_list(path, &p.warnings());
}

/// [`print_warnings`] of warnings kept after the profile was dropped.
fn print_warning_list(path: &str, warnings: &[impl AsRef<str>]) {
    for w in warnings {
        warn(&format!("{path}: warning: {}", w.as_ref()));
    }
}

fn owned(v: Vec<&str>) -> Vec<String> {
    v.into_iter().map(str::to_owned).collect()
}

/// A line on stderr, its text (names from files) escaped for the terminal.
fn warn(msg: &str) {
    eprintln!("heapsnap: {}", printable(msg));
}

/// A snapshot (symbolized) or profile, as pprof would show it (frames pruned).
fn read_profile(path: &str, sym: &SymArgs, limits: &Limits) -> Result<Profile> {
    read_profile_as(path, sym, limits, Samples::Kept)
}

/// [`read_profile`], a pprof input's samples decoded as `samples` says.
fn read_profile_as(
    path: &str,
    sym: &SymArgs,
    limits: &Limits,
    samples: Samples,
) -> Result<Profile> {
    let mut p = read_profile_as_is(path, sym, limits, samples)?;
    // As pprof reads a profile: its drop_frames/keep_frames applied.
    if let Err(e) = p.remove_uninteresting_frames() {
        warn(&format!(
            "{path}: warning: {e}; no frames dropped (as go tool pprof)"
        ));
    }
    Ok(p)
}

/// [`read_profile_as`] without pprof's frame pruning.
fn read_profile_as_is(
    path: &str,
    sym: &SymArgs,
    limits: &Limits,
    samples: Samples,
) -> Result<Profile> {
    match read_input_as(path, limits, samples)? {
        (Input::Snapshot { snapshot, .. }, len) => {
            symbolized(&snapshot, len, sym, limits).with_context(|| path.to_owned())
        }
        (Input::Profile(p), _) => {
            if !sym.elf.is_empty() {
                warn(&format!("{path}: warning: --elf not used: this is a pprof profile, which carries the symbols it was written with; --elf symbolizes snapshots"));
            }
            Ok(p)
        }
    }
}

/// Refuses `-o` naming one of the inputs (the snapshots or profiles read, `--elf`
/// files): it would be lost. Checked before anything is read.
fn check_output(out: Option<&Path>, inputs: &[&str], sym: &SymArgs) -> Result<()> {
    let Some(out) = out.filter(|o| *o != Path::new("-")) else {
        return Ok(());
    };
    let mut all: Vec<In<'_>> = inputs
        .iter()
        .map(|i| match *i {
            "-" => In::Stdin,
            p => In::Path(Path::new(p)),
        })
        .collect();
    all.extend(sym.elf.iter().map(|e| In::Path(e)));
    files::check_output(out, &all).map_err(anyhow::Error::msg)
}

/// Converts a snapshot with the ELFs given (and, unless `--no-local`, mapped files found
/// on this machine), with a progress bar when stderr is a terminal; what it builds is
/// counted against the limits for an input of `input_len` bytes.
fn symbolized(snap: &Snapshot, input_len: u64, sym: &SymArgs, limits: &Limits) -> Result<Profile> {
    let mut elves = Vec::new();
    for path in &sym.elf {
        let bytes = read_capped(path, "ELF", limits.elf_size, "elf-size", b"\x7fELF")?;
        elves.push(Elf::parse(&path.display().to_string(), &bytes)?);
    }
    let mut load = files::read_mapped;
    let load = if sym.no_local {
        None
    } else {
        Some(&mut load as heapsnap_symbolize::Loader<'_>)
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(snap.buckets.len() as u64);
        b.set_message("converting");
        b
    });
    let mut progress = |done: u64, _total: u64| {
        if let Some(b) = &bar {
            b.set_position(done);
        }
    };
    let p = heapsnap_symbolize::snapshot_profile(
        snap,
        input_len,
        elves,
        load,
        sym.force_elf,
        limits,
        &mut progress,
    );
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    match p {
        Err(e) if e.is_wrong_elf() => bail!("{e} (--force-elf uses it anyway)"),
        p => Ok(p?),
    }
}

/// Writes data to `-o FILE` (whole or not at all, see [`files::write_atomic`]) or
/// stdout. Binary data is not sent to a terminal; text is, with its control characters
/// (from names in the input) escaped.
fn write_out(path: Option<&Path>, bytes: &[u8], binary: bool) -> Result<()> {
    if !binary && path.is_none_or(|p| p == Path::new("-")) && std::io::stdout().is_terminal() {
        let shown = report::printable_lines(&String::from_utf8_lossy(bytes)).into_owned();
        return write_with(None, false, |w| w.write_all(shown.as_bytes()));
    }
    write_with(path, binary, |w| w.write_all(bytes))
}

/// A profile, gzipped, to `-o FILE` or stdout (see [`write_out`]), streamed: the
/// encoding is never whole in memory (see [`profile::encode_to`]).
fn write_profile(path: Option<&Path>, p: &Profile) -> Result<()> {
    write_with(path, true, |w| profile::encode_to(p, w))
}

/// What `write` writes, to `-o FILE` (through [`files::write_atomic`]) or stdout (not
/// a terminal when `binary`); a closed pipe (`| head`) is no error.
fn write_with(
    path: Option<&Path>,
    binary: bool,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    match path {
        Some(p) if p != Path::new("-") => {
            files::write_atomic(p, write).with_context(|| format!("cannot write {}", p.display()))
        }
        _ => {
            let mut out = std::io::stdout().lock();
            if binary && out.is_terminal() {
                bail!("refusing to write a binary pprof profile to the terminal; use -o FILE or a pipe");
            }
            let mut w = std::io::BufWriter::with_capacity(1 << 16, &mut out);
            match write(&mut w).and_then(|_| w.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.context("writing to stdout"),
            }
        }
    }
}

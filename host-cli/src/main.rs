//! `heapsnap`: the terminal front end. Thin: parse flags, read inputs, call the
//! libraries (heapsnap-profile, heapsnap-symbolize), write data to stdout (or `-o`), a
//! one-line cause on error.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use heapsnap_profile::analysis::{self, Filter};
use heapsnap_profile::export;
use heapsnap_profile::import::{self, Input, Symbols};
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
/// (the last good one is used), a pprof profile (gzipped or not), or `-` for stdin.
#[derive(Parser)]
#[command(name = "heapsnap", version, about, long_about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
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
    /// Use the --elf files even when they do not fit the snapshot (another word size;
    /// firmware return addresses outside their code or not after a call in it).
    #[arg(long)]
    force_elf: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Convert a snapshot to pprof (default), folded stacks or legacy heap text.
    Convert {
        /// Snapshot, serial capture, or `-` for stdin.
        snapshot: String,
        #[command(flatten)]
        sym: SymArgs,
        /// Output file (default: stdout; pprof is not written to a terminal).
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value = "pprof")]
        format: Format,
        /// Sample type for folded output (name or index).
        #[arg(long, default_value = "inuse_space")]
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
        /// The earlier snapshot or profile.
        base: String,
        /// The later snapshot or profile.
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
    match cli.cmd {
        Cmd::Convert {
            snapshot,
            sym,
            output,
            format,
            sample_index,
        } => {
            check_output(output.as_deref(), &[&snapshot], &sym)?;
            let snap = read_snapshot(&snapshot)?;
            let p = symbolized(&snap, &sym)?;
            let bytes = match format {
                Format::Pprof => profile::encode(&p),
                Format::Folded => {
                    let i = p.sample_index(&sample_index).map_err(anyhow::Error::msg)?;
                    export::folded(&p, i).into_bytes()
                }
                Format::Text => export::legacy_text(&snap, Some(&p)).into_bytes(),
            };
            print_warnings(&snapshot, &p);
            write_out(output.as_deref(), &bytes, matches!(format, Format::Pprof))
        }
        Cmd::Top {
            file,
            sym,
            sample_index,
            nodecount,
        } => {
            let p = read_profile(&file, &sym)?;
            print_top(&p, sample_index.as_deref(), nodecount, false)
                .with_context(|| file.clone())?;
            print_warnings(&file, &p);
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
            let b = read_profile(&base, &sym).with_context(|| format!("base {base}"))?;
            let n = read_profile(&new, &sym).with_context(|| format!("new {new}"))?;
            let d = profile::diff(&b, &n)
                .with_context(|| format!("cannot compare base {base} with new {new}"))?;
            match output {
                Some(o) => write_out(Some(&o), &profile::encode(&d), true)?,
                None => print_top(&d, sample_index.as_deref(), nodecount, true)
                    .with_context(|| format!("the difference of base {base} and new {new}"))?,
            }
            print_warnings(&base, &b);
            print_warnings(&new, &n);
            Ok(())
        }
        Cmd::Inspect { snapshot } => {
            let snap = read_snapshot(&snapshot)?;
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

/// `snap.bin` → `snap-003.bin`.
fn numbered(path: &Path, i: usize) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{i:03}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{i:03}"),
    };
    path.with_file_name(name)
}

fn print_top(
    p: &Profile,
    sample_index: Option<&str>,
    n: Option<usize>,
    signed: bool,
) -> Result<()> {
    let i = p
        .sample_index(sample_index.unwrap_or(""))
        .map_err(anyhow::Error::msg)?;
    let table = analysis::top(p, i, &Filter::none())?;
    let (ty, unit) = p.sample_types().get(i).copied().unwrap_or(("", ""));
    let mut text = format!("Type: {}\n", printable(ty));
    if let (false, Some(h)) = (signed, p.heap_totals()) {
        // Counted on the device, not estimated from samples: next to the sampled table.
        text.push_str(&format!("Heap (exact): {h}\n"));
    }
    if signed {
        // pprof's -diff_base arithmetic, whose percentages are of the base's total.
        text.push_str(&format!(
            "Diff: new − base per stack; percentages are of the base's total ({}), as go tool pprof -diff_base shows them\n",
            report::scaled_label(table.total, unit, report::auto_unit(table.total, unit))
        ));
    }
    text.push_str(&report::top_text(&table, unit, n, signed));
    write_out(None, text.as_bytes(), false)
}

/// Reads a path or `-` (stdin) fully.
fn read_bytes(path: &str) -> Result<Vec<u8>> {
    if path == "-" {
        let mut v = Vec::new();
        std::io::stdin()
            .read_to_end(&mut v)
            .context("reading stdin")?;
        return Ok(v);
    }
    std::fs::read(path).with_context(|| format!("cannot read {path}"))
}

fn read_input(path: &str) -> Result<Input> {
    let bytes = read_bytes(path)?;
    let i = import::guess(&bytes).with_context(|| path.to_owned())?;
    if let Input::Snapshot {
        bad_frames, frames, ..
    } = &i
    {
        if *frames > 0 {
            warn(&format!("{path}: serial capture with {frames} frame(s), {bad_frames} bad; using the last good snapshot"));
        }
    }
    Ok(i)
}

fn read_snapshot(path: &str) -> Result<Snapshot> {
    match read_input(path)? {
        Input::Snapshot { snapshot, .. } => Ok(snapshot),
        Input::Profile(_) => bail!("{path} is a pprof profile, not a snapshot"),
    }
}

/// The profile's warnings (the one set a snapshot conversion writes, see
/// `import::warnings`) on stderr, so `top`, `diff` and `convert` say what `inspect`
/// says. After the command's output: an error stays the one line it is.
fn print_warnings(path: &str, p: &Profile) {
    for w in p.warnings() {
        warn(&format!("{path}: warning: {w}"));
    }
}

/// A line on stderr, its text (names from files) escaped for the terminal.
fn warn(msg: &str) {
    eprintln!("heapsnap: {}", printable(msg));
}

fn read_profile(path: &str, sym: &SymArgs) -> Result<Profile> {
    match read_input(path)? {
        Input::Snapshot { snapshot, .. } => symbolized(&snapshot, sym),
        Input::Profile(p) => {
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
/// on this machine), with a progress bar when stderr is a terminal.
fn symbolized(snap: &Snapshot, sym: &SymArgs) -> Result<Profile> {
    let mut elves = Vec::new();
    for path in &sym.elf {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read ELF {}", path.display()))?;
        elves.push(Elf::parse(&path.display().to_string(), &bytes)?);
    }
    let mut load = files::read_mapped;
    let mut resolver = Resolver::new(
        snap,
        elves,
        if sym.no_local {
            None
        } else {
            Some(&mut load as heapsnap_symbolize::Loader<'_>)
        },
    )?;
    if !sym.force_elf {
        resolver.verify()?;
    }
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
    let p = import::to_profile(snap, &mut resolver as &mut dyn Symbols, &mut progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(p)
}

/// Writes data to `-o FILE` (whole or not at all, see [`files::write_atomic`]) or
/// stdout. Binary data is not sent to a terminal; text is, with its control characters
/// (from names in the input) escaped.
fn write_out(path: Option<&Path>, bytes: &[u8], binary: bool) -> Result<()> {
    match path {
        Some(p) if p != Path::new("-") => {
            files::write_atomic(p, bytes).with_context(|| format!("cannot write {}", p.display()))
        }
        _ => {
            let mut out = std::io::stdout().lock();
            let shown;
            let bytes = match (binary, out.is_terminal()) {
                (true, true) => bail!("refusing to write a binary pprof profile to the terminal; use -o FILE or a pipe"),
                (false, true) => {
                    shown = report::printable_lines(&String::from_utf8_lossy(bytes)).into_owned();
                    shown.as_bytes()
                }
                _ => bytes,
            };
            match out.write_all(bytes).and_then(|_| out.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.context("writing to stdout"),
            }
        }
    }
}

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
use host_cli::report;
use sampler_core::decoded::Snapshot;
use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

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
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        // One line: the cause chain joined.
        let msg: Vec<String> = e.chain().map(|c| c.to_string()).collect();
        eprintln!("heapsnap: {}", msg.join(": "));
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
            print_top(&p, sample_index.as_deref(), nodecount, false)?;
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
            let b = read_profile(&base, &sym).with_context(|| format!("base {base}"))?;
            let n = read_profile(&new, &sym).with_context(|| format!("new {new}"))?;
            let d = profile::diff(&b, &n)?;
            match output {
                Some(o) => write_out(Some(&o), &profile::encode(&d), true)?,
                None => print_top(&d, sample_index.as_deref(), nodecount, true)?,
            }
            print_warnings(&base, &b);
            print_warnings(&new, &n);
            Ok(())
        }
        Cmd::Inspect { snapshot } => {
            let snap = read_snapshot(&snapshot)?;
            write_out(None, import::inspect_report(&snap).as_bytes(), false)
        }
    }
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
    let table = analysis::top(p, i, &Filter::none());
    let (ty, unit) = p.sample_types().get(i).copied().unwrap_or(("", ""));
    let mut text = format!("Type: {ty}\n");
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
            eprintln!("heapsnap: {path}: serial capture with {frames} frame(s), {bad_frames} bad; using the last good snapshot");
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
        eprintln!("heapsnap: {path}: warning: {w}");
    }
}

fn read_profile(path: &str, sym: &SymArgs) -> Result<Profile> {
    match read_input(path)? {
        Input::Snapshot { snapshot, .. } => symbolized(&snapshot, sym),
        Input::Profile(p) => Ok(p),
    }
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
    let mut load = |name: &str| -> Option<Vec<u8>> {
        let p = Path::new(name);
        if p.is_absolute() && p.is_file() {
            std::fs::read(p).ok()
        } else {
            None
        }
    };
    let mut resolver = Resolver::new(
        snap,
        elves,
        if sym.no_local {
            None
        } else {
            Some(&mut load as &mut dyn FnMut(&str) -> Option<Vec<u8>>)
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

/// Writes data to `-o FILE` or stdout. Binary data is not sent to a terminal.
fn write_out(path: Option<&Path>, bytes: &[u8], binary: bool) -> Result<()> {
    match path {
        Some(p) if p != Path::new("-") => {
            std::fs::write(p, bytes).with_context(|| format!("cannot write {}", p.display()))
        }
        _ => {
            let mut out = std::io::stdout().lock();
            if binary && out.is_terminal() {
                bail!("refusing to write a binary pprof profile to the terminal; use -o FILE or a pipe");
            }
            match out.write_all(bytes).and_then(|_| out.flush()) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.context("writing to stdout"),
            }
        }
    }
}

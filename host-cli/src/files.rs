//! The files the CLI touches beyond its inputs: program files a snapshot's mappings
//! name (read only when they can be an ELF of bounded size), and outputs (never an
//! input, written whole or not at all).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The largest mapped file read from this machine. A snapshot names its mappings' paths
/// itself, so it must not be able to make heapsnap read a huge file whole; a program
/// larger than this can still be given with `--elf`.
pub const MAX_MAPPED_FILE: u64 = 1 << 30;

/// Where the kernel keeps files that report as regular but are not (`/proc/self/pagemap`
/// reads as an endless stream, sizes are 0 or made up), and device nodes.
const PSEUDO_ROOTS: [&str; 3] = ["/proc", "/sys", "/dev"];

const ELF_MAGIC: [u8; 4] = *b"\x7fELF";

/// Reads the file a snapshot's mapping names, if it can be the mapped program:
/// `Ok(None)` when the path is not absolute or does not exist here (the snapshot is
/// from another machine), `Err(why)` when it exists but is not a regular file, is under
/// `/proc`, `/sys` or `/dev`, is empty or larger than [`MAX_MAPPED_FILE`], or does not
/// start with the ELF magic (checked on the first 4 bytes, before reading the rest).
pub fn read_mapped(name: &str) -> Result<Option<Vec<u8>>, String> {
    let path = Path::new(name);
    if !path.is_absolute() {
        return Ok(None);
    }
    // Symlinks and `..` resolved first: the checks are about the file itself.
    let Ok(real) = std::fs::canonicalize(path) else {
        return Ok(None);
    };
    if let Some(root) = PSEUDO_ROOTS.iter().find(|r| real.starts_with(r)) {
        return Err(format!(
            "{} is under {root}, a kernel pseudo-file or device, not a program file",
            real.display()
        ));
    }
    let meta = std::fs::metadata(&real).map_err(|e| e.to_string())?;
    check_regular(&meta)?;
    let mut f = open_nonblocking(&real).map_err(|e| e.to_string())?;
    // The file opened is the file checked (not swapped for a FIFO in between).
    check_regular(&f.metadata().map_err(|e| e.to_string())?)?;
    let mut magic = [0u8; 4];
    f.read_exact(&mut magic)
        .map_err(|_| "shorter than an ELF header".to_owned())?;
    if magic != ELF_MAGIC {
        return Err(format!(
            "not an ELF file (starts with {magic:02x?}, an ELF with 7f 45 4c 46)"
        ));
    }
    let mut bytes = magic.to_vec();
    // Bounded even if the file grows while read.
    f.take(MAX_MAPPED_FILE - 4)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    Ok(Some(bytes))
}

/// A regular file, neither empty nor over [`MAX_MAPPED_FILE`].
fn check_regular(meta: &std::fs::Metadata) -> Result<(), String> {
    let t = meta.file_type();
    if !t.is_file() {
        return Err(format!("not a regular file but {}", kind(&t)));
    }
    match meta.len() {
        0 => Err("the file is empty (size 0)".into()),
        n if n > MAX_MAPPED_FILE => Err(format!(
            "{n} bytes, over the {MAX_MAPPED_FILE}-byte limit for a mapped file (give it with --elf to use it anyway)"
        )),
        _ => Ok(()),
    }
}

fn kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "a special file"
    }
}

/// Opens for reading without blocking: opening a FIFO that replaced the checked file
/// returns at once (and fails the regular-file check) instead of waiting for a writer.
fn open_nonblocking(p: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    o.open(p)
}

/// An input of the command: a path, or `-` for stdin.
pub enum Input<'a> {
    /// A file named on the command line (input or `--elf`).
    Path(&'a Path),
    /// Standard input (`-`): refused as output too when it is redirected from that file.
    Stdin,
}

/// Refuses an output that is one of the inputs: the same file (device and inode on
/// Unix), however it is spelled (another path, a symlink, a hard link). An output that
/// does not exist yet is no input.
pub fn check_output(out: &Path, inputs: &[Input<'_>]) -> Result<(), String> {
    if !out.exists() {
        return Ok(());
    }
    for i in inputs {
        let (same, what) = match i {
            Input::Path(p) => (same_file(out, p), p.display().to_string()),
            Input::Stdin => (is_stdin(out), "what standard input reads".to_owned()),
        };
        if same {
            return Err(format!(
                "refusing to write the output to {}: it is {what}, an input, which would be lost; choose another output file",
                out.display()
            ));
        }
    }
    Ok(())
}

/// Same device and inode (symlinks followed).
#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// No inodes: the same canonical path.
#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
}

/// Is standard input redirected from the file `out`?
#[cfg(unix)]
fn is_stdin(out: &Path) -> bool {
    use std::os::fd::AsFd;
    use std::os::unix::fs::MetadataExt;
    let stdin = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(|fd| std::fs::File::from(fd).metadata());
    match (std::fs::metadata(out), stdin) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn is_stdin(_: &Path) -> bool {
    false
}

/// Writes what `write` writes to `out` through a temporary file in the same directory,
/// renamed into place once complete: an interrupted or failed run leaves the old file
/// (or none), never half a new one. A symlink at `out` is written through, as a plain
/// write would.
///
/// A run killed mid-write (SIGKILL, power loss) leaves no temporary behind either: on
/// Linux the temporary has no name while it is written (`O_TMPFILE`), and gets one only
/// for the moment between linking it and renaming it over `out`. Where that is not
/// available (another OS, a filesystem without `O_TMPFILE`) it is a named
/// `.heapsnap-PID-XXXXXX.tmp`, and every run removes such files of its output
/// directory that are over a minute old and whose writer is no longer running (see
/// [`remove_stale_temporaries`]).
pub fn write_atomic(
    out: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let target: PathBuf = match std::fs::symlink_metadata(out) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(out)?,
        _ => out.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // A missing directory said as the system says it.
    std::fs::metadata(dir)?;
    remove_stale_temporaries(dir);
    #[cfg(target_os = "linux")]
    if std::env::var_os(NAMED_TEMPORARY_VAR).is_none() {
        if let Some(f) = unnamed::create(dir).map_err(without_temp_path)? {
            return unnamed::write_and_link(f, dir, &target, write);
        }
    }
    let mut b = tempfile::Builder::new();
    let prefix = format!("{TEMP_PREFIX}{}-", std::process::id());
    b.prefix(&prefix).suffix(TEMP_SUFFIX);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // What a plain create gets (0666 less the umask), not the temporary's 0600.
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = b.tempfile_in(dir).map_err(without_temp_path)?;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, tmp);
    write(&mut w)?;
    let tmp = w.into_inner().map_err(|e| e.into_error())?;
    tmp.as_file().sync_all()?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(())
}

/// Set (to anything), the named temporary is used on Linux too: for a filesystem whose
/// `O_TMPFILE` misbehaves, and for the tests of the named path.
pub const NAMED_TEMPORARY_VAR: &str = "HEAPSNAP_NAMED_TEMPORARY";

/// The temporaries' names: `.heapsnap-PID-XXXXXX.tmp`, PID the writer's.
const TEMP_PREFIX: &str = ".heapsnap-";
const TEMP_SUFFIX: &str = ".tmp";

/// How old a temporary must be before another run may take it for a dead writer's.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes the temporaries a killed run left in `dir`: files named as
/// [`write_atomic`] names them, last modified over [`STALE_AFTER`] ago, whose writer's
/// process id is not running on this machine. Both, so neither a run still writing
/// (alive) nor one on another machine sharing the directory (recent: a live writer
/// keeps its file's time fresh) loses its file. Best effort: what cannot be read or
/// removed is left.
pub fn remove_stale_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(temporary_pid) else {
            continue;
        };
        let old = e
            .metadata()
            .ok()
            .filter(|m| m.file_type().is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old && !is_running(pid) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The writer's pid in a temporary's name (`.heapsnap-PID-XXXXXX.tmp`).
fn temporary_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    let (pid, random) = rest.split_once('-')?;
    if random.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Is a process `pid` running here? (Signal 0 checks without sending; EPERM: it runs
/// as another user.) Without a way to ask, assumed running: the file is kept.
fn is_running(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        // SAFETY: kill with signal 0 sends nothing; it only checks the pid.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// The temporary without a name (Linux `O_TMPFILE`).
#[cfg(target_os = "linux")]
mod unnamed {
    use super::{TEMP_PREFIX, TEMP_SUFFIX};
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::path::Path;

    /// An unnamed file in `dir`, or `None` where that is not possible (an older kernel,
    /// a filesystem without `O_TMPFILE`, no `/proc` to link it through later): the
    /// caller then uses a named one.
    pub fn create(dir: &Path) -> std::io::Result<Option<std::fs::File>> {
        use std::os::unix::fs::OpenOptionsExt;
        if !Path::new("/proc/self/fd").is_dir() {
            return Ok(None);
        }
        let r = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_TMPFILE)
            // What a plain create gets: 0666 less the umask.
            .mode(0o666)
            .open(dir);
        match r {
            Ok(f) => Ok(Some(f)),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOSYS)
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Writes, syncs, links the file under a temporary name (`linkat` through
    /// `/proc/self/fd`: an unnamed file cannot replace a name directly) and renames that
    /// over `target`.
    pub fn write_and_link(
        f: std::fs::File,
        dir: &Path,
        target: &Path,
        write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, f);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        let from = std::ffi::CString::new(format!("/proc/self/fd/{}", f.as_raw_fd()))
            .expect("no NUL in a number");
        let pid = std::process::id();
        for attempt in 0..100u32 {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            let name = dir.join(format!(
                "{TEMP_PREFIX}{pid}-{:08x}{attempt:02}{TEMP_SUFFIX}",
                nanos
            ));
            let to = std::ffi::CString::new(name.as_os_str().as_encoded_bytes())
                .map_err(std::io::Error::other)?;
            // SAFETY: two NUL-terminated paths that outlive the call.
            let r = unsafe {
                libc::linkat(
                    libc::AT_FDCWD,
                    from.as_ptr(),
                    libc::AT_FDCWD,
                    to.as_ptr(),
                    libc::AT_SYMLINK_FOLLOW,
                )
            };
            if r != 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    continue;
                }
                return Err(super::without_temp_path(e));
            }
            return std::fs::rename(&name, target).inspect_err(|_| {
                let _ = std::fs::remove_file(&name);
            });
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            "cannot create a file there: no free temporary name",
        ))
    }
}

/// tempfile's error names the temporary's random path, where the user named the output
/// (the caller says which): the system's reason for the directory instead.
fn without_temp_path(e: std::io::Error) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!("cannot create a file there: {}", e.kind()),
    )
}

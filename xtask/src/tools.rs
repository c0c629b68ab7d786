//! Finding and installing the tools the tasks need, so a fresh machine needs nothing
//! but `cargo xtask …`. Everything installed by cargo or npm goes under `.tools/` in the
//! repository (git-ignored) unless an identical version is already on PATH.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Result type of every task: a one-line cause on failure.
pub type Res<T = ()> = Result<T, String>;

/// Repository root (parent of `xtask/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `.tools/` under the root: repo-local installs (cargo --root, npm prefix).
/// Write a generated file unless it already holds `text`: unchanged files keep their
/// mtime, so cargo's fingerprints of generated crates hold across runs.
pub fn write_if_changed(path: &Path, text: &str) -> Res {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if std::fs::read_to_string(path).ok().as_deref() == Some(text) {
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn tools_dir() -> PathBuf {
    root().join(".tools")
}

/// Print a step header so a long log stays readable.
pub fn step(name: &str) {
    eprintln!("\n==> {name}");
}

/// Run a command to completion, inheriting stdio; error names the command and status.
pub fn run(cmd: &mut Command) -> Res {
    eprintln!("    $ {}", show(cmd));
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start `{}`: {e}", show(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed ({status})", show(cmd)))
    }
}

/// Run a command and capture stdout as a string.
pub fn output(cmd: &mut Command) -> Res<String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start `{}`: {e}", show(cmd)))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed ({}): {}",
            show(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// `cargo` as invoked by the parent (respects the toolchain cargo was started with).
pub fn cargo() -> Command {
    let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    c.current_dir(root());
    c
}

/// `cargo +nightly …` in `dir`, through the rustup proxy (the `cargo` that runs xtask is
/// the stable binary itself and does not understand `+nightly`).
pub fn nightly_cargo(dir: &Path) -> Command {
    let mut c = Command::new("cargo");
    c.arg("+nightly").current_dir(dir).env("PATH", path_env());
    // Inherited from the stable `cargo xtask` invocation; they would pin the stable
    // toolchain or move the fuzz build elsewhere.
    for v in [
        "CARGO",
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTDOC",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
    ] {
        c.env_remove(v);
    }
    c
}

/// The nightly toolchain (cargo-fuzz's sanitizers, the viewer's `-Zbuild-std`),
/// installed when missing with the given rustup `components` and `targets`; a broken
/// one is an error naming the fix. `why` names the task in the log.
pub fn ensure_nightly(why: &str, components: &[&str], targets: &[&str]) -> Res {
    let have = output(Command::new("rustup").args(["toolchain", "list"]))?;
    if !have.lines().any(|l| l.starts_with("nightly")) {
        step(&format!("installing the nightly toolchain (for {why})"));
        run(Command::new("rustup").args([
            "toolchain",
            "install",
            "nightly",
            "--profile",
            "minimal",
        ]))?;
    }
    rustup_add("component", components, Some("nightly"))?;
    rustup_add("target", targets, Some("nightly"))?;
    let v = output(nightly_cargo(&root()).arg("--version")).map_err(|e| {
        format!("nightly toolchain unusable ({e}); try `rustup toolchain install nightly`")
    })?;
    if !v.contains("nightly") && !v.contains("-dev") {
        return Err(format!(
            "`cargo +nightly --version` printed `{}`, not a nightly",
            v.trim()
        ));
    }
    Ok(())
}

/// Is `bin` on PATH (or `.tools/bin`)? Returns its path.
pub fn which(bin: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = vec![
        tools_dir().join("bin"),
        tools_dir().join("node_modules/.bin"),
    ];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    dirs.into_iter().map(|d| d.join(bin)).find(|p| p.is_file())
}

/// PATH with `.tools/bin` and `.tools/node_modules/.bin` first, for child processes.
pub fn path_env() -> std::ffi::OsString {
    let mut dirs = vec![
        tools_dir().join("bin"),
        tools_dir().join("node_modules/.bin"),
    ];
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).expect("PATH entries are valid")
}

/// Make sure the rustup targets are installed (cheap when they already are).
pub fn ensure_targets(targets: &[&str]) -> Res {
    rustup_add("target", targets, None)
}

/// Installs whichever of `wanted` (rustup `kind`: "target" or "component") the
/// `toolchain` (the active one if `None`) lacks.
fn rustup_add(kind: &str, wanted: &[&str], toolchain: Option<&str>) -> Res {
    if wanted.is_empty() {
        return Ok(());
    }
    let on: Vec<&str> = toolchain.map_or(Vec::new(), |t| vec!["--toolchain", t]);
    let installed = output(
        Command::new("rustup")
            .args([kind, "list", "--installed"])
            .args(&on),
    )?;
    // Components are listed with their host triple (`rust-std-x86_64-…`), some not.
    let have = |w: &str| {
        installed
            .lines()
            .any(|l| l.trim() == w || l.starts_with(&format!("{w}-")))
    };
    let missing: Vec<&str> = wanted.iter().copied().filter(|w| !have(w)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    step(&format!(
        "installing rustup {kind}s {missing:?}{}",
        toolchain.map_or(String::new(), |t| format!(" for {t}"))
    ));
    run(Command::new("rustup")
        .args([kind, "add"])
        .args(&on)
        .args(&missing))
}

/// Make sure Debian packages are installed: `(command that proves it, package)`; an
/// absolute path instead of a command is a file the package installs (a library).
/// Runs `apt-get update` at most once per xtask process.
pub fn ensure_apt(pkgs: &[(&str, &str)]) -> Res {
    let present = |bin: &str| {
        if bin.starts_with('/') {
            Path::new(bin).is_file()
        } else {
            which(bin).is_some()
        }
    };
    let missing: Vec<&str> = pkgs
        .iter()
        .filter(|(bin, _)| !present(bin))
        .map(|(_, p)| *p)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    step(&format!("installing Debian packages {missing:?}"));
    static UPDATED: OnceLock<()> = OnceLock::new();
    let sudo = if is_root() { None } else { Some("sudo") };
    let apt = |args: &[&str]| -> Command {
        let mut c = match sudo {
            Some(s) => {
                let mut c = Command::new(s);
                c.arg("apt-get");
                c
            }
            None => Command::new("apt-get"),
        };
        c.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        c
    };
    if UPDATED.get().is_none() {
        run(&mut apt(&["update", "-qq"]))?;
        let _ = UPDATED.set(());
    }
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend(&missing);
    run(&mut apt(&args))
}

fn is_root() -> bool {
    output(Command::new("id").arg("-u"))
        .map(|s| s.trim() == "0")
        .unwrap_or(false)
}

/// Make sure `bin` (from crate `krate`) is available at exactly `version`;
/// installs into `.tools/` when missing or at another version.
pub fn ensure_cargo_bin(bin: &str, krate: &str, version: &str, locked: bool) -> Res<PathBuf> {
    if let Some(p) = which(bin) {
        let v = Command::new(&p).arg("--version").output().ok();
        if v.is_some_and(|o| String::from_utf8_lossy(&o.stdout).contains(version)) {
            return Ok(p);
        }
    }
    step(&format!(
        "installing {krate} {version} into .tools (cargo install)"
    ));
    let mut c = cargo();
    c.args(["install", krate, "--version", version, "--root"])
        .arg(tools_dir());
    if locked {
        c.arg("--locked");
    }
    run(&mut c)?;
    Ok(tools_dir().join("bin").join(bin))
}

/// Make sure an npm package is installed under `.tools/node_modules`; returns the bin path.
pub fn ensure_npm(bin: &str, pkg_spec: &str) -> Res<PathBuf> {
    let p = tools_dir().join("node_modules/.bin").join(bin);
    if p.is_file() {
        return Ok(p);
    }
    ensure_apt(&[("node", "nodejs"), ("npm", "npm")])?;
    step(&format!("installing npm {pkg_spec} into .tools"));
    std::fs::create_dir_all(tools_dir()).map_err(|e| e.to_string())?;
    run(Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(tools_dir())
        .arg(pkg_spec))?;
    Ok(p)
}

/// Make sure the npm package `name` is installed at exactly `version` under
/// `.tools/<prefix>/node_modules` (a prefix of its own, so that installing it never
/// prunes the packages `ensure_npm` put in `.tools/`); returns the package's directory.
pub fn ensure_npm_pinned(prefix: &str, name: &str, version: &str) -> Res<PathBuf> {
    let dir = tools_dir().join(prefix);
    let pkg = dir.join("node_modules").join(name);
    let installed = std::fs::read_to_string(pkg.join("package.json")).unwrap_or_default();
    if installed.contains(&format!("\"version\": \"{version}\"")) {
        return Ok(pkg);
    }
    ensure_apt(&[("node", "nodejs"), ("npm", "npm")])?;
    step(&format!(
        "installing npm {name}@{version} into .tools/{prefix}"
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    run(Command::new("npm")
        .args([
            "install",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefix",
        ])
        .arg(&dir)
        .arg(format!("{name}@{version}")))?;
    Ok(pkg)
}

/// The exact `version` of a package as pinned in Cargo.lock (e.g. wasm-bindgen).
pub fn locked_version(krate: &str) -> Res<String> {
    let lock = std::fs::read_to_string(root().join("Cargo.lock"))
        .map_err(|e| format!("Cargo.lock: {e}"))?;
    let mut lines = lock.lines();
    while let Some(l) = lines.next() {
        if l.trim() == format!("name = \"{krate}\"") {
            if let Some(v) = lines
                .next()
                .and_then(|v| v.trim().strip_prefix("version = \""))
            {
                return Ok(v.trim_end_matches('"').to_string());
            }
        }
    }
    Err(format!("{krate} is not in Cargo.lock"))
}

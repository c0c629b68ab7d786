//! `cargo xtask guide`: compile the code blocks of `docs/integrating.md` and `README.md`,
//! so the guide cannot drift from the API.
//!
//! Every ```` ```rust ```` and ```` ```toml ```` block must say what it is, after the
//! language:
//! * `file=PATH`: a file of the newcomer firmware (section 1 of the guide). Blocks with
//!   the same path are joined in document order into `target/guide-firmware/PATH`; the
//!   crate is built at cargo's default release settings and run in QEMU, which leaves its
//!   snapshots in `target/firmware-out/guide/` for `tests/tests/firmware_e2e.rs`.
//! * `snippet`: built on its own as a `no_std` library for thumbv7m, with [`PRELUDE`]
//!   glob-imported (the names the guide leaves to the reader; a snippet's own items
//!   shadow them).
//!
//! * `in=PATH`: an excerpt of a file of the repository that the test command builds and
//!   runs itself (the RISC-V firmware, `firmware-riscv/`): the block must appear in that
//!   file verbatim, so the guide shows what QEMU ran.
//!
//! A block with none of these fails the step: no Rust or TOML goes into the guide
//! unchecked.

use crate::firmware;
use crate::firmware::seed_lock;
use crate::tools::{self, write_if_changed as write, Res};
use std::path::PathBuf;

/// The documents whose blocks are compiled.
const DOCS: &[&str] = &["docs/integrating.md", "README.md"];

/// The names snippets use without defining them: the reader's heap, kernel and UART.
const PRELUDE: &str = r#"
pub use embedded_alloc::LlffHeap;
pub use sampler_core::{cortex_m::RtStack, ProfiledAlloc};

/// The reader's profiled heap, as section 1 of the guide declares it.
pub static HEAP: ProfiledAlloc<LlffHeap, RtStack, 64, 512, 256, 256, 16, true> =
    ProfiledAlloc::off(LlffHeap::empty(), RtStack);
/// The reader's kernel stack bounds and slab allocator.
pub const KSTACK_LO: usize = 0x2000_0000;
pub const KSTACK_HI: usize = 0x2000_4000;
pub fn slab_alloc(_size: usize) -> *mut u8 {
    core::ptr::null_mut()
}
pub fn slab_free(_p: *mut u8) {}
pub fn slab_size(_p: *mut u8) -> usize {
    0
}
/// The reader's UART driver: a blocking write.
pub fn uart_write(_bytes: &[u8]) {}
"#;

/// One fenced code block: its info string's language and attribute, and its text.
struct Block {
    doc: &'static str,
    line: usize,
    lang: String,
    attr: String,
    text: String,
}

/// The fenced blocks of `doc` (```` ``` ```` fences only, as the guide uses).
fn blocks(doc: &'static str) -> Res<Vec<Block>> {
    let path = tools::root().join(doc);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                let mut words = info.split_whitespace();
                open = Some(Block {
                    doc,
                    line: i + 1,
                    lang: words.next().unwrap_or("").to_string(),
                    attr: words.collect::<Vec<_>>().join(" "),
                    text: String::new(),
                });
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(b), _) => {
                b.text.push_str(line);
                b.text.push('\n');
            }
            (None, None) => {}
        }
    }
    if let Some(b) = open {
        return Err(format!("{doc}:{}: code block never closed", b.line));
    }
    Ok(out)
}

/// Build the snippets and the newcomer firmware, run the firmware in QEMU; returns the
/// folder with its ELF and snapshots.
pub fn build_and_run() -> Res<PathBuf> {
    tools::ensure_targets(&[firmware::TARGET])?;
    firmware::ensure_qemu(&firmware::LM3S6965)?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut snippets: Vec<Block> = Vec::new();
    let mut excerpts = 0;
    for doc in DOCS {
        for b in blocks(doc)? {
            let checked = matches!(b.lang.as_str(), "rust" | "toml");
            if let Some(path) = b.attr.strip_prefix("file=") {
                match files.iter_mut().find(|(p, _)| p == path) {
                    Some((_, text)) => {
                        text.push('\n');
                        text.push_str(&b.text);
                    }
                    None => files.push((path.to_string(), b.text.clone())),
                }
            } else if b.attr == "snippet" && b.lang == "rust" {
                snippets.push(b);
            } else if let Some(path) = b.attr.strip_prefix("in=") {
                excerpt_of(&b, path)?;
                excerpts += 1;
            } else if checked {
                return Err(format!(
                    "{}:{}: a ```{} block without `file=PATH`, `snippet` or `in=PATH`: say \
                     how the test command compiles it (see xtask/src/guide.rs)",
                    b.doc, b.line, b.lang
                ));
            }
        }
    }
    eprintln!(
        "    {} firmware files, {} snippets and {excerpts} excerpts of tested files from {}",
        files.len(),
        snippets.len(),
        DOCS.join(", ")
    );
    build_snippets(&snippets)?;
    let elf = build_firmware(&files)?;
    let out = firmware::out_dir().join("guide");
    // The newcomer firmware of section 1 writes semihosting files only: no UART capture.
    let machine = firmware::Machine {
        serial_capture: None,
        ..firmware::LM3S6965
    };
    firmware::run_on(&machine, &elf, &out)?;
    Ok(out)
}

/// Check that block `b` appears verbatim in the repository file `path` (`in=PATH`).
fn excerpt_of(b: &Block, path: &str) -> Res {
    let file = tools::root().join(path);
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("{}:{}: `in={path}`: {e}", b.doc, b.line))?;
    if b.text.trim().is_empty() || !text.contains(&b.text) {
        return Err(format!(
            "{}:{}: this block is not an excerpt of {path} (it must appear there verbatim, \
             whole lines): the guide drifted from the firmware the tests run",
            b.doc, b.line
        ));
    }
    Ok(())
}

/// Where `sampler-core` is, for the guide's `path = "…/sampler-core"`.
fn sampler_core_path() -> String {
    format!("path = {:?}", tools::root().join("sampler-core"))
}

/// One workspace, one library crate per snippet, built in one cargo invocation.
fn build_snippets(snippets: &[Block]) -> Res {
    let ws = tools::root().join("target/guide-snippets");
    let mut members = Vec::new();
    for (i, b) in snippets.iter().enumerate() {
        let name = format!("snippet-{i:02}");
        let manifest = format!(
            "[package]\nname = {name:?}\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
             [lib]\npath = \"lib.rs\"\ntest = false\n\n[dependencies]\n\
             sampler-core = {{ {sc}, features = [\"cortex-m\"] }}\n\
             embedded-alloc = \"0.7\"\n\
             cortex-m = {{ version = \"0.7\", features = [\"critical-section-single-core\"] }}\n",
            sc = sampler_core_path()
        );
        let lib = format!(
            "//! {doc}:{line} (generated by `cargo xtask guide`: edit the document, not this file)\n\
             #![no_std]\n#![allow(dead_code, unused_imports)]\nextern crate alloc;\n\
             mod prelude {{\n    #![allow(dead_code)]\n{PRELUDE}}}\n\
             use prelude::*;\n\n{text}",
            doc = b.doc,
            line = b.line,
            text = b.text
        );
        write(&ws.join(&name).join("Cargo.toml"), &manifest)?;
        write(&ws.join(&name).join("lib.rs"), &lib)?;
        members.push(format!("{name:?}"));
    }
    write(
        &ws.join("Cargo.toml"),
        &format!(
            "# Generated by `cargo xtask guide`: do not edit.\n[workspace]\nresolver = \"2\"\n\
             members = [{}]\n",
            members.join(", ")
        ),
    )?;
    seed_lock(&ws)?;
    let mut c = tools::cargo();
    c.current_dir(&ws)
        .env_remove("RUSTFLAGS")
        .args(["build", "--workspace", "--target", firmware::TARGET])
        .arg("--target-dir")
        .arg(ws.join("target"));
    tools::run(&mut c).map_err(|e| {
        format!(
            "a guide snippet does not compile (crates in {}): {e}",
            ws.display()
        )
    })
}

/// The newcomer firmware from the `file=` blocks, built with `cargo build --release`
/// and the guide's own `.cargo/config.toml`; returns its ELF.
fn build_firmware(files: &[(String, String)]) -> Res<PathBuf> {
    let dir = tools::root().join("target/guide-firmware");
    let mut package = None;
    for (path, text) in files {
        let text = text.replace("path = \"…/sampler-core\"", &sampler_core_path());
        if path == "Cargo.toml" {
            package = text
                .lines()
                .find_map(|l| l.strip_prefix("name = "))
                .map(|n| n.trim_matches('"').to_string());
        }
        write(&dir.join(path), &text)?;
    }
    let package = package.ok_or("the guide has no `file=Cargo.toml` block naming a package")?;
    seed_lock(&dir)?;
    let mut c = firmware::firmware_cargo(&dir);
    c.args(["build", "--release"]);
    tools::run(&mut c).map_err(|e| {
        format!(
            "the guide's firmware does not build (crate in {}): {e}",
            dir.display()
        )
    })?;
    let elf = dir
        .join("target")
        .join(firmware::TARGET)
        .join("release")
        .join(&package);
    if !elf.is_file() {
        return Err(format!(
            "cargo built the guide's firmware but {} is missing",
            elf.display()
        ));
    }
    Ok(elf)
}

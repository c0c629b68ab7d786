//! `heapsnap pull` against the real thing: the demo firmware (the ELF `cargo xtask
//! firmware` built, in `HEAPSNAP_FIRMWARE_OUT`) in QEMU with its gdbstub on
//! (`-gdb tcp:127.0.0.1:PORT`), read through the GDB remote protocol while it runs, and
//! the ways it can fail: a symbol the ELF lacks, a mailbox never published into (a
//! target halted at reset), a port nobody listens on, a server that never answers.
//!
//! The firmware is started with the semihosting word `live`: after its 480 messages it
//! keeps running and republishes its final snapshot into `HEAPSNAP_MAILBOX` every few
//! milliseconds, so the mailbox holds exactly the bytes of the last `snap-NNN.bin` it
//! wrote over semihosting in the same run.

use e2e::{heapsnap, run, target_dir};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const ELF_NAME: &str = "heapsnap-firmware.elf";
const LEAK_FN: &str = "remember_message";

/// The firmware ELF `cargo xtask firmware` left in `HEAPSNAP_FIRMWARE_OUT`.
fn firmware_elf() -> PathBuf {
    let dir = std::env::var_os("HEAPSNAP_FIRMWARE_OUT").unwrap_or_else(|| {
        panic!(
            "HEAPSNAP_FIRMWARE_OUT is not set: run `cargo xtask test`, or `cargo xtask \
             firmware` and then HEAPSNAP_FIRMWARE_OUT=target/firmware-out cargo test -p e2e \
             --test firmware_pull"
        )
    });
    let elf = PathBuf::from(dir).join(ELF_NAME);
    assert!(
        elf.is_file(),
        "{} is missing: `cargo xtask firmware` did not run",
        elf.display()
    );
    elf
}

/// A TCP port free right now (bound to port 0, then released).
fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// QEMU running the firmware with its gdbstub on `port`; killed when dropped.
struct Qemu {
    child: Child,
    lines: Receiver<String>,
    console: Vec<String>,
    port: u16,
    dir: PathBuf,
}

impl Qemu {
    /// Start the firmware in `target/firmware-pull/NAME/` (its semihosting files land
    /// there). `live`: it keeps running after its last snapshot (returns once it says
    /// so). `halted`: QEMU's `-S`, the CPU waits at reset for the debugger.
    fn start(name: &str, live: bool, halted: bool) -> Qemu {
        let dir = target_dir().join("firmware-pull").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let port = free_port();
        let mut semihosting = String::from("enable=on,target=native,arg=heapsnap-firmware");
        if live {
            semihosting.push_str(",arg=live");
        }
        let mut c = Command::new("qemu-system-arm");
        c.args(["-cpu", "cortex-m3", "-machine", "lm3s6965evb", "-nographic"])
            .args(["-semihosting-config", &semihosting])
            .args(["-gdb", &format!("tcp:127.0.0.1:{port}")])
            // The UART carries the firmware's binary snapshot stream: into a file, as
            // `cargo xtask firmware` records it, not onto the console read line by line
            // here (a line reader stops at the first non-UTF-8 byte, the pipe fills, and
            // the firmware waits on its UART); no monitor on stdio either.
            .args(["-serial", "file:capture.cobs", "-monitor", "none"])
            .arg("-kernel")
            .arg(firmware_elf())
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if halted {
            c.arg("-S");
        }
        let mut child = c
            .spawn()
            .expect("qemu-system-arm (cargo xtask test installs it)");
        let (tx, lines) = channel();
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        let mut q = Qemu {
            child,
            lines,
            console: Vec::new(),
            port,
            dir,
        };
        // No probe connection to see whether the gdbstub listens yet: QEMU pauses the
        // machine when a debugger connects and a bare disconnect leaves it paused.
        if live && !halted {
            q.wait_for_line("live:");
        }
        q
    }

    fn gdb(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Wait until the console has a line starting with `prefix`.
    fn wait_for_line(&mut self, prefix: &str) {
        self.wait_until(Duration::from_secs(60), prefix, |q| {
            q.console.iter().any(|l| l.starts_with(prefix))
        });
    }

    fn wait_until(&mut self, limit: Duration, what: &str, done: impl Fn(&Qemu) -> bool) {
        let t = Instant::now();
        loop {
            while let Ok(l) = self.lines.try_recv() {
                self.console.push(l);
            }
            if done(self) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "QEMU exited ({status}) before {what}:\n{}",
                    self.console.join("\n")
                );
            }
            assert!(
                t.elapsed() < limit,
                "no {what} within {limit:?}; console:\n{}",
                self.console.join("\n")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Is QEMU still running (the target was not stopped or killed by the pull)?
    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Qemu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pull(args: &[&str]) -> Output {
    Command::new(heapsnap())
        .arg("pull")
        .arg("--elf")
        .arg(firmware_elf())
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Publish numbers from `heapsnap pull`'s report lines (`… (publish 144) -> …`).
fn publishes(err: &str) -> Vec<u32> {
    err.lines()
        .filter_map(|l| l.split("(publish ").nth(1))
        .map(|rest| {
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect()
}

#[test]
fn pull_reads_the_running_firmwares_mailbox_and_top_names_the_leak() {
    let mut qemu = Qemu::start("running", true, false);
    let out = qemu.dir.join("pulled.bin");
    let o = pull(&["--gdb", &qemu.gdb(), "-o", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = publishes(&stderr(&o));
    assert_eq!(first.len(), 1, "{}", stderr(&o));

    // The very bytes the firmware wrote over semihosting for its last snapshot.
    let pulled = std::fs::read(&out).unwrap();
    let file = std::fs::read(qemu.dir.join("snap-004.bin")).unwrap();
    assert!(
        pulled == file,
        "the pulled snapshot ({} bytes) differs from snap-004.bin ({} bytes)",
        pulled.len(),
        file.len()
    );
    let top = run(Command::new(heapsnap())
        .args(["top", "--elf"])
        .arg(firmware_elf())
        .arg(&out));
    let row = top
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or_default();
    assert!(row.ends_with(&format!("::router::{LEAK_FN}")), "{top}");

    // The target kept running after the detach, and between pulls of one connection.
    assert!(qemu.alive(), "QEMU stopped after the pull");
    let series = qemu.dir.join("series.bin");
    let o = pull(&[
        "--gdb",
        &qemu.gdb(),
        "-o",
        series.to_str().unwrap(),
        "--count",
        "3",
        "--interval",
        "0.2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let seq = publishes(&stderr(&o));
    assert_eq!(seq.len(), 3, "{}", stderr(&o));
    assert!(
        first[0] < seq[0] && seq[0] < seq[1] && seq[1] < seq[2],
        "the firmware did not publish between the pulls (publishes {first:?} then {seq:?}): \
         the target was left halted\n{}",
        stderr(&o)
    );
    for i in 0..3 {
        let f = qemu.dir.join(format!("series-{i:03}.bin"));
        assert_eq!(std::fs::read(&f).unwrap(), file, "{}", f.display());
    }
    assert!(qemu.alive(), "QEMU stopped after the pulls");
}

#[test]
fn pull_names_a_missing_symbol_and_how_to_add_the_mailbox() {
    let mut qemu = Qemu::start("nosymbol", true, false);
    let o = pull(&["--gdb", &qemu.gdb(), "--symbol", "NOPE"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("has no symbol `NOPE`")
            && err.contains("it has `HEAPSNAP_MAILBOX`, the default")
            && err.contains("SnapshotMailbox")
            && err.contains("--symbol"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "bytes written despite the error");
    assert!(qemu.alive());
}

#[test]
fn pull_before_the_first_publish_says_never_written_and_lets_the_halted_target_run() {
    // -S: the CPU waits at reset; the mailbox (.bss) is all zero.
    let mut qemu = Qemu::start("halted", false, true);
    // QEMU opens its gdbstub port while starting: give it a few tries.
    let t = Instant::now();
    let o = loop {
        let o = pull(&["--gdb", &qemu.gdb()]);
        if !stderr(&o).contains("cannot connect") || t.elapsed() > Duration::from_secs(20) {
            break o;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("`HEAPSNAP_MAILBOX` at 0x2") && err.contains("was never published into"),
        "{err}"
    );
    // The detach let the firmware run: it reaches its first snapshot.
    qemu.wait_for_line("snap-000.bin after 96 messages");
}

#[test]
fn pull_from_a_port_nothing_listens_on_says_cannot_connect() {
    let port = free_port();
    let t = Instant::now();
    let o = pull(&["--gdb", &format!("127.0.0.1:{port}")]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "cannot connect to the GDB server at 127.0.0.1:{port}"
        )) && err.contains("-gdb tcp::PORT"),
        "{err}"
    );
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[test]
fn pull_from_a_server_that_never_answers_times_out_with_a_clear_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts, reads what comes, never answers.
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut sink = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut sink);
        sink
    });
    let t = Instant::now();
    let o = pull(&["--gdb", &format!("127.0.0.1:{port}"), "--timeout", "1"]);
    let took = t.elapsed();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("did not answer qSupported within 1.0 s (target not responding)"),
        "{err}"
    );
    assert!(took < Duration::from_secs(5), "{took:?}");
    let got = server.join().unwrap();
    assert!(
        got.starts_with(b"$qSupported"),
        "the client's first packet: {:?}",
        String::from_utf8_lossy(&got)
    );
}

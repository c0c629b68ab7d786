//! A small client of the GDB remote serial protocol (RSP), enough to read a target's
//! memory: what QEMU's gdbstub, OpenOCD, probe-rs and J-Link's GDB server all speak.
//!
//! Packets are `$payload#cs` (cs: the payload's byte sum mod 256, two hex digits),
//! acknowledged with `+` (or `-`: send again). The client asks `qSupported` for the
//! server's `PacketSize`, halts the target (`?`, or the interrupt byte `0x03` when it
//! does not answer because it is running), reads memory with `m addr,len` in chunks
//! that fit a reply, resumes with `c`, and detaches with `D`, which leaves the target
//! running as gdb's `detach` does.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// What went wrong talking to a GDB server.
#[derive(Debug, thiserror::Error)]
pub enum GdbError {
    #[error("cannot connect to the GDB server at {addr} (is it running? QEMU: -gdb tcp::PORT; OpenOCD: port 3333; probe-rs gdb: 1337; JLinkGDBServer: 2331)")]
    Connect {
        addr: String,
        source: std::io::Error,
    },
    #[error(
        "the GDB server at {addr} did not answer {what} within {secs:.1} s (target not responding)"
    )]
    Timeout {
        addr: String,
        what: String,
        secs: f64,
    },
    #[error("the GDB server at {addr} closed the connection during {what}")]
    Closed { addr: String, what: String },
    #[error("talking to the GDB server at {addr}")]
    Io {
        addr: String,
        source: std::io::Error,
    },
    #[error("the GDB server at {addr} answered {what} with `{reply}`: {why}")]
    Protocol {
        addr: String,
        what: String,
        reply: String,
        why: &'static str,
    },
    #[error("the target cannot read {len} bytes at {addr:#x}: the GDB server answered `{reply}` (an address outside the target's RAM: is the ELF the one running?)")]
    ReadFailed {
        addr: u64,
        len: usize,
        reply: String,
    },
}

/// A connection to a GDB server.
pub struct Gdb {
    stream: TcpStream,
    addr: String,
    timeout: Duration,
    /// Bytes received but not consumed yet.
    pending: VecDeque<u8>,
    /// Largest packet the server accepts (its `PacketSize`; 400 bytes, the RSP minimum
    /// gdb assumes, when it does not say).
    packet_size: usize,
}

/// How a target was found when [`Gdb::halt`] stopped it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Halted {
    /// It answered `?` with a stop reply (the server halts on connect, or it was halted).
    Answered,
    /// It did not answer `?` (running); the interrupt byte stopped it.
    Interrupted,
}

impl Gdb {
    /// Connect to `addr` (`HOST:PORT`), each exchange bounded by `timeout`, and learn the
    /// server's packet size.
    pub fn connect(addr: &str, timeout: Duration) -> Result<Gdb, GdbError> {
        let err = |source| GdbError::Connect {
            addr: addr.to_owned(),
            source,
        };
        let addrs: Vec<_> = addr.to_socket_addrs().map_err(err)?.collect();
        let mut last = std::io::Error::new(ErrorKind::NotFound, "no address");
        let mut stream = None;
        for a in addrs {
            match TcpStream::connect_timeout(&a, timeout) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let stream = stream.ok_or_else(|| err(last))?;
        let _ = stream.set_nodelay(true);
        let mut gdb = Gdb {
            stream,
            addr: addr.to_owned(),
            timeout,
            pending: VecDeque::new(),
            packet_size: 400,
        };
        let features = gdb.request(b"qSupported:swbreak+;hwbreak+", "qSupported")?;
        if let Some(size) = packet_size(&features) {
            gdb.packet_size = size;
        }
        Ok(gdb)
    }

    /// Largest packet the server accepts.
    pub fn packet_size(&self) -> usize {
        self.packet_size
    }

    /// Stop the target so its memory holds still: `?` (a halted target, or a server
    /// that halts on connect, answers with a stop reply); if no answer comes within a
    /// second, the target is running: send the interrupt byte and wait for the stop.
    pub fn halt(&mut self) -> Result<Halted, GdbError> {
        self.send(b"?", "`?` (why stopped)")?;
        let wait = self.timeout.min(Duration::from_secs(1));
        match self.recv_until(Instant::now() + wait, "`?`") {
            Ok(reply) => {
                self.stop_reply(&reply, "`?`")?;
                Ok(Halted::Answered)
            }
            Err(GdbError::Timeout { .. }) => {
                self.interrupt()?;
                Ok(Halted::Interrupted)
            }
            Err(e) => Err(e),
        }
    }

    /// Stop a running target (the interrupt byte `0x03`) and wait for its stop reply.
    pub fn interrupt(&mut self) -> Result<(), GdbError> {
        self.write_raw(&[0x03], "the interrupt")?;
        let what = "the interrupt (0x03)";
        let reply = self.recv_until(Instant::now() + self.timeout, what)?;
        self.stop_reply(&reply, what)
    }

    /// Resume the target (`c`); it runs until [`interrupt`](Self::interrupt).
    pub fn resume(&mut self) -> Result<(), GdbError> {
        self.send(b"c", "`c` (continue)")
    }

    /// Detach (`D`): the server lets the target run and the connection ends.
    pub fn detach(mut self) -> Result<(), GdbError> {
        let reply = self.request(b"D", "`D` (detach)")?;
        if reply.starts_with(b"E") {
            return Err(self.protocol("`D` (detach)", &reply, "the server refused to detach"));
        }
        Ok(())
    }

    /// Read `len` bytes of target memory at `addr`, in chunks that fit a reply.
    pub fn read_memory(&mut self, addr: u64, len: usize) -> Result<Vec<u8>, GdbError> {
        // A reply carries two hex digits per byte plus `$`, `#` and the checksum.
        let chunk = ((self.packet_size.saturating_sub(4)) / 2).clamp(16, 4096);
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let at = addr + out.len() as u64;
            let n = chunk.min(len - out.len());
            let cmd = format!("m{at:x},{n:x}");
            let reply = self.request(cmd.as_bytes(), &format!("`{cmd}`"))?;
            if reply.first() == Some(&b'E') || reply.is_empty() {
                return Err(GdbError::ReadFailed {
                    addr: at,
                    len: n,
                    reply: String::from_utf8_lossy(&reply).into_owned(),
                });
            }
            let bytes = unhex(&reply)
                .ok_or_else(|| self.protocol(&format!("`{cmd}`"), &reply, "not hex bytes"))?;
            if bytes.is_empty() || bytes.len() > n {
                return Err(self.protocol(
                    &format!("`{cmd}`"),
                    &reply,
                    "a reply of another length than asked for",
                ));
            }
            out.extend_from_slice(&bytes);
        }
        Ok(out)
    }

    /// Send a packet and return the reply's payload.
    fn request(&mut self, payload: &[u8], what: &str) -> Result<Vec<u8>, GdbError> {
        self.send(payload, what)?;
        loop {
            let reply = self.recv_until(Instant::now() + self.timeout, what)?;
            // Console output (`O` + hex) may come before the answer; it is not one.
            if reply.first() == Some(&b'O') && reply.len() > 1 && unhex(&reply[1..]).is_some() {
                continue;
            }
            return Ok(reply);
        }
    }

    /// Check a stop reply: `S`/`T` (stopped); `W`/`X`: the target is gone.
    fn stop_reply(&self, reply: &[u8], what: &str) -> Result<(), GdbError> {
        match reply.first() {
            Some(b'S' | b'T') => Ok(()),
            Some(b'W' | b'X') => Err(self.protocol(what, reply, "the target has exited")),
            _ => Err(self.protocol(what, reply, "not a stop reply")),
        }
    }

    fn protocol(&self, what: &str, reply: &[u8], why: &'static str) -> GdbError {
        let mut reply = String::from_utf8_lossy(reply).into_owned();
        if reply.len() > 80 {
            reply.truncate(80);
            reply.push('…');
        }
        GdbError::Protocol {
            addr: self.addr.clone(),
            what: what.to_owned(),
            reply,
            why,
        }
    }

    /// Send `$payload#cs` and wait for the `+` (resending on `-`, three tries).
    fn send(&mut self, payload: &[u8], what: &str) -> Result<(), GdbError> {
        let mut packet = Vec::with_capacity(payload.len() + 4);
        packet.push(b'$');
        packet.extend_from_slice(payload);
        packet.push(b'#');
        packet.extend_from_slice(format!("{:02x}", checksum(payload)).as_bytes());
        for _ in 0..3 {
            self.write_raw(&packet, what)?;
            let deadline = Instant::now() + self.timeout;
            loop {
                match self.next_byte(deadline, what)? {
                    b'+' => return Ok(()),
                    b'-' => break,
                    // Anything else before the ack (a late reply, noise): skip it.
                    _ => continue,
                }
            }
        }
        Err(GdbError::Protocol {
            addr: self.addr.clone(),
            what: what.to_owned(),
            reply: "-".into(),
            why: "the server rejected the packet three times",
        })
    }

    /// Receive one packet by `deadline`: skip to `$`, read to `#`, check the checksum
    /// (ack `+`, or `-` and wait for the resend), expand run-length encoding.
    fn recv_until(&mut self, deadline: Instant, what: &str) -> Result<Vec<u8>, GdbError> {
        loop {
            while self.next_byte(deadline, what)? != b'$' {}
            let mut body = Vec::new();
            loop {
                match self.next_byte(deadline, what)? {
                    b'#' => break,
                    b => body.push(b),
                }
            }
            let cs = [
                self.next_byte(deadline, what)?,
                self.next_byte(deadline, what)?,
            ];
            let ok = unhex(&cs).and_then(|v| v.first().copied()) == Some(checksum(&body));
            self.write_raw(if ok { b"+" } else { b"-" }, what)?;
            if ok {
                return expand_rle(&body)
                    .ok_or_else(|| self.protocol(what, &body, "bad run-length encoding"));
            }
        }
    }

    fn write_raw(&mut self, bytes: &[u8], what: &str) -> Result<(), GdbError> {
        let addr = self.addr.clone();
        self.stream
            .write_all(bytes)
            .and_then(|_| self.stream.flush())
            .map_err(|source| match source.kind() {
                ErrorKind::BrokenPipe | ErrorKind::ConnectionReset => GdbError::Closed {
                    addr,
                    what: what.to_owned(),
                },
                _ => GdbError::Io { addr, source },
            })
    }

    fn next_byte(&mut self, deadline: Instant, what: &str) -> Result<u8, GdbError> {
        if self.pending.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return Err(self.timed_out(what));
            }
            let _ = self.stream.set_read_timeout(Some(deadline - now));
            let mut buf = [0u8; 4096];
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    return Err(GdbError::Closed {
                        addr: self.addr.clone(),
                        what: what.to_owned(),
                    })
                }
                Ok(n) => self.pending.extend(&buf[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(self.timed_out(what))
                }
                Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                    return Err(GdbError::Closed {
                        addr: self.addr.clone(),
                        what: what.to_owned(),
                    })
                }
                Err(source) => {
                    return Err(GdbError::Io {
                        addr: self.addr.clone(),
                        source,
                    })
                }
            }
        }
        self.pending.pop_front().ok_or_else(|| self.timed_out(what))
    }

    fn timed_out(&self, what: &str) -> GdbError {
        GdbError::Timeout {
            addr: self.addr.clone(),
            what: what.to_owned(),
            secs: self.timeout.as_secs_f64(),
        }
    }
}

/// The payload's byte sum mod 256.
fn checksum(payload: &[u8]) -> u8 {
    payload.iter().fold(0u8, |s, &b| s.wrapping_add(b))
}

/// Hex digit pairs to bytes (`None` on an odd length or a non-hex digit).
fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    text.chunks(2)
        .map(|p| {
            let s = std::str::from_utf8(p).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

/// Undo run-length encoding: `X*n` is `X` followed by `n - 29` more copies of it.
fn expand_rle(body: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(body.len());
    let mut i = 0;
    while let Some(&b) = body.get(i) {
        if b == b'*' {
            let prev = *out.last()?;
            let count = body.get(i + 1)?.checked_sub(29)?;
            out.extend(std::iter::repeat_n(prev, usize::from(count)));
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Some(out)
}

/// `PacketSize=HEX` from a `qSupported` reply.
fn packet_size(features: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(features).ok()?;
    text.split(';')
        .find_map(|f| f.strip_prefix("PacketSize="))
        .and_then(|hex| usize::from_str_radix(hex, 16).ok())
        .filter(|&n| n >= 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_and_run_length_encoding_follow_the_gdb_manual() {
        // The manual's example: `$m4015bc,2#5a`.
        assert_eq!(checksum(b"m4015bc,2"), 0x5a);
        // "0* " is "0000": `*` followed by ' ' (32) repeats 32 - 29 = 3 more times.
        assert_eq!(expand_rle(b"0* ").unwrap(), b"0000");
        assert_eq!(expand_rle(b"*!"), None, "a run with nothing to repeat");
        assert_eq!(
            packet_size(b"PacketSize=1000;qXfer:features:read+"),
            Some(4096)
        );
        assert_eq!(unhex(b"48534d42").unwrap(), b"HSMB");
        assert_eq!(unhex(b"4"), None);
    }
}

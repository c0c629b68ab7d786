//! The workload: a message router with a clear memory story.
//!
//! * long-lived buffers, allocated once at start-up: [`alloc_rx_ring`], [`alloc_route_table`];
//! * per-message temporaries, freed before the turn ends: [`receive_frame`],
//!   [`decode_message`], [`encode_reply`];
//! * a slow leak: [`remember_message`] keeps a copy of every "hello" message's header in a
//!   list that nothing ever prunes. This is what `heapsnap diff` and the viewer should point at;
//!   it is still reachable (the router, a static, holds it): `heapsnap retain` names the holder.
//! * a lost one: [`queue_ping_ack`] hands some pings' acks to the "DMA" as a raw pointer
//!   that the next ack overwrites without freeing: every ack but the last is unreachable,
//!   what `heapsnap leaks` reports as definitely lost. The router counts them itself
//!   ([`Router::lost_blocks`], [`Router::lost_bytes`]), the ground truth the check is
//!   compared with.
//!
//! Every function that allocates is `#[inline(never)]` with a memorable name, so the
//! symbolized stacks read like the story above.

use alloc::boxed::Box;
use alloc::vec::Vec;

/// Bytes in the receive ring (long-lived).
pub const RX_RING_BYTES: usize = 1024;
/// Routes the table is sized for at start-up (long-lived).
pub const ROUTES: usize = 48;

/// A decoded message; its payload lives only for one main-loop turn.
pub struct Message {
    pub dest: u16,
    pub kind: Kind,
    pub payload: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Data,
    Hello,
    Ping,
}

#[derive(Clone, Copy, Default)]
pub struct Route {
    pub dest: u16,
    pub port: u8,
    pub hits: u32,
}

/// Router state: two long-lived buffers and the leaking "seen" list.
pub struct Router {
    rx_ring: Box<[u8]>,
    rx_head: usize,
    routes: Vec<Route>,
    seen: Vec<Box<[u8]>>,
    /// The ack "in flight" on the DMA (null before the first): a raw pointer, as a
    /// driver would hold it.
    pending_ack: *mut [u8],
    rng: u32,
    /// Messages forwarded (so the work cannot be optimized away).
    pub forwarded: u32,
    /// Checksum over every reply, printed at the end.
    pub checksum: u32,
    /// Acks overwritten without being freed: lost blocks and their requested bytes.
    pub lost_blocks: u32,
    pub lost_bytes: u32,
}

impl Router {
    /// Start-up: the long-lived allocations.
    #[inline(never)]
    pub fn new(seed: u32) -> Self {
        Router {
            rx_ring: alloc_rx_ring(),
            rx_head: 0,
            routes: alloc_route_table(),
            seen: Vec::new(),
            pending_ack: core::ptr::slice_from_raw_parts_mut(core::ptr::null_mut(), 0),
            rng: seed | 1,
            forwarded: 0,
            checksum: 0,
            lost_blocks: 0,
            lost_bytes: 0,
        }
    }

    /// Messages remembered (leaked) so far.
    pub fn leaked(&self) -> usize {
        self.seen.len()
    }

    /// One main-loop turn: receive, decode, route one message.
    #[inline(never)]
    pub fn handle_message(&mut self) {
        let frame = receive_frame(&mut self.rx_ring, &mut self.rx_head, &mut self.rng);
        let Some(msg) = decode_message(&frame) else {
            return;
        };
        drop(frame);
        route_message(self, &msg);
    }
}

/// xorshift32: the firmware's deterministic message source.
fn next(rng: &mut u32) -> u32 {
    let mut x = *rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *rng = x;
    x
}

/// The DMA receive ring: 1 KiB for the lifetime of the firmware.
#[inline(never)]
pub fn alloc_rx_ring() -> Box<[u8]> {
    alloc::vec![0u8; RX_RING_BYTES].into_boxed_slice()
}

/// The routing table, sized once at start-up.
#[inline(never)]
pub fn alloc_route_table() -> Vec<Route> {
    let mut routes = Vec::with_capacity(ROUTES);
    for i in 0..ROUTES {
        routes.push(Route {
            dest: i as u16 * 7,
            port: (i % 4) as u8,
            hits: 0,
        });
    }
    routes
}

/// "Receive" a frame into the ring and copy it out into a fresh buffer (a temporary).
/// Frame: `[dest lo, dest hi, kind, len, payload…]`.
#[inline(never)]
pub fn receive_frame(ring: &mut [u8], head: &mut usize, rng: &mut u32) -> Vec<u8> {
    let r = next(rng);
    let len = 8 + (r % 56) as usize;
    let kind = match (r >> 8) % 4 {
        0 | 1 => 0, // data
        2 => 1,     // hello
        _ => 2,     // ping
    };
    let dest = ((r >> 12) % (ROUTES as u32 * 7)) as u16;
    let mut frame = Vec::with_capacity(4 + len);
    frame.extend_from_slice(&[dest as u8, (dest >> 8) as u8, kind, len as u8]);
    for i in 0..len {
        let b = (next(rng) >> 24) as u8;
        let slot = (*head + i) % ring.len();
        ring[slot] = b;
        frame.push(b);
    }
    *head = (*head + len) % ring.len();
    frame
}

/// Parse a frame into a [`Message`]; the payload is copied (another temporary).
#[inline(never)]
pub fn decode_message(frame: &[u8]) -> Option<Message> {
    let (&[lo, hi, kind, len], rest) = frame.split_first_chunk::<4>()?;
    let payload = rest.get(..len as usize)?;
    let kind = match kind {
        0 => Kind::Data,
        1 => Kind::Hello,
        2 => Kind::Ping,
        _ => return None,
    };
    Some(Message {
        dest: u16::from_le_bytes([lo, hi]),
        kind,
        payload: parse_payload(payload),
    })
}

/// Unescape the payload into its own buffer.
#[inline(never)]
fn parse_payload(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    out.extend(raw.iter().map(|b| b ^ 0x5a));
    out
}

/// Forward a message: look up the route, build the reply, and remember hellos.
#[inline(never)]
pub fn route_message(router: &mut Router, msg: &Message) {
    let route = router.routes.iter_mut().find(|r| r.dest >= msg.dest);
    let port = match route {
        Some(r) => {
            r.hits += 1;
            r.port
        }
        None => 0,
    };
    match msg.kind {
        Kind::Hello => remember_message(&mut router.seen, msg),
        Kind::Ping if msg.dest % 4 == 0 => queue_ping_ack(router, msg),
        Kind::Data | Kind::Ping => {}
    }
    let reply = encode_reply(msg, port);
    router.checksum = reply
        .iter()
        .fold(router.checksum, |c, &b| c.rotate_left(5) ^ b as u32);
    router.forwarded += 1;
}

/// THE LEAK: keeps the header and the first bytes of every hello message, forever.
/// (Meant as a "recently seen peers" cache; the pruning was never written.)
#[inline(never)]
pub fn remember_message(seen: &mut Vec<Box<[u8]>>, msg: &Message) {
    let keep = msg.payload.len().min(24);
    let mut copy = Vec::with_capacity(3 + keep);
    copy.extend_from_slice(&msg.dest.to_le_bytes());
    copy.push(msg.kind as u8);
    copy.extend_from_slice(&msg.payload[..keep]);
    seen.push(copy.into_boxed_slice());
}

/// THE LOST LEAK: the ack goes to the "DMA" as a raw pointer, replacing the one before
/// it, which nobody frees (the completion handler was never written). Counts what it
/// loses.
#[inline(never)]
pub fn queue_ping_ack(router: &mut Router, msg: &Message) {
    let keep = msg.payload.len().min(12);
    let mut ack = Vec::with_capacity(4 + keep);
    ack.extend_from_slice(&[0xac, msg.kind as u8]);
    ack.extend_from_slice(&msg.dest.to_le_bytes());
    ack.extend_from_slice(&msg.payload[..keep]);
    let old = core::mem::replace(
        &mut router.pending_ack,
        Box::into_raw(ack.into_boxed_slice()),
    );
    if !old.is_null() {
        router.lost_blocks += 1;
        router.lost_bytes += old.len() as u32;
    }
}

/// The leak-check run's batch held by `main`'s own stack frame, in a local no static
/// points at (`blocks` boxes of `bytes` bytes each, in a Vec): only a stack walk finds
/// it, and the check must name the local that holds it.
#[inline(never)]
pub fn hold_batch(blocks: usize, bytes: usize) -> Vec<Box<[u8]>> {
    let mut batch = Vec::with_capacity(blocks);
    for i in 0..blocks {
        batch.push(alloc::vec![i as u8; bytes].into_boxed_slice());
    }
    batch
}

/// The reply frame sent back on `port` (a temporary).
#[inline(never)]
pub fn encode_reply(msg: &Message, port: u8) -> Vec<u8> {
    let mut reply = Vec::with_capacity(msg.payload.len() + 4);
    reply.extend_from_slice(&[port, msg.kind as u8]);
    reply.extend_from_slice(&msg.dest.to_le_bytes());
    reply.extend_from_slice(&msg.payload);
    reply
}

// Writes a large synthetic heap profile (pprof protobuf) for the viewer benchmark:
// N samples over S distinct stacks, shaped like a real heap profile (stacks share
// prefixes, one sample per (stack, object size) as Go writes them, a `bytes` label,
// some inlined frames). Deterministic (fixed PRNG seed).
import zlib from 'node:zlib';

class Writer {
  constructor(cap = 1 << 20) { this.buf = Buffer.alloc(cap); this.len = 0; }
  ensure(n) {
    if (this.len + n <= this.buf.length) return;
    let cap = this.buf.length * 2;
    while (cap < this.len + n) cap *= 2;
    const b = Buffer.alloc(cap); this.buf.copy(b, 0, 0, this.len); this.buf = b;
  }
  varint(v) {
    this.ensure(10);
    while (v >= 0x80) { this.buf[this.len++] = (v % 0x80) | 0x80; v = Math.floor(v / 0x80); }
    this.buf[this.len++] = v;
  }
  key(field, wire) { this.varint(field * 8 + wire); }
  uint(field, v) { if (v) { this.key(field, 0); this.varint(v); } }
  bytes(field, b) { this.key(field, 2); this.varint(b.length); this.ensure(b.length); b.copy ? b.copy(this.buf, this.len) : this.buf.set(b, this.len); this.len += b.length; }
  msg(field, fn) { const w = new Writer(256); fn(w); this.bytes(field, w.buf.subarray(0, w.len)); }
  packed(field, vals) { const w = new Writer(vals.length * 4 + 8); for (const v of vals) w.varint(v); this.bytes(field, w.buf.subarray(0, w.len)); }
  out() { return this.buf.subarray(0, this.len); }
}

function rng(seed) {
  let s = BigInt(seed);
  return () => {
    s ^= s << 13n; s &= 0xffffffffffffffffn; s ^= s >> 7n; s ^= s << 17n; s &= 0xffffffffffffffffn;
    return Number(s >> 11n) / 2 ** 53;
  };
}

/// Returns { raw: Buffer, gz: Buffer, samples, stacks }. `depth`: every stack exactly
/// that many frames (default: 18 to 46).
export function generate({ samples = 550_000, stacks = 50_000, functions = 6_000, locations = 24_000, seed = 42, depth: fixedDepth = 0 } = {}) {
  const rand = rng(seed);
  const strings = [''];
  const sid = new Map([['', 0]]);
  const str = (s) => { let i = sid.get(s); if (i === undefined) { i = strings.length; strings.push(s); sid.set(s, i); } return i; };
  const w = new Writer(64 << 20);
  for (const [t, u] of [['alloc_objects', 'count'], ['alloc_space', 'bytes'], ['inuse_objects', 'count'], ['inuse_space', 'bytes']]) {
    w.msg(1, (m) => { m.uint(1, str(t)); m.uint(2, str(u)); });
  }
  // Distinct stacks: a random walk down a synthetic call tree (few choices near the
  // root, more deeper), so stacks share prefixes as real ones do.
  const stackList = [];
  const seen = new Set();
  const mix = (a, b) => (Math.imul(a ^ (b + 0x9e3779b9), 0x85ebca6b) >>> 0);
  while (stackList.length < stacks) {
    const depth = fixedDepth || 18 + Math.floor(rand() * 29);
    const st = [];
    let h = 17;
    for (let d = 0; d < depth; d++) {
      const fan = d < 3 ? 2 : d < 8 ? 4 : 12;
      h = mix(h, Math.floor(rand() * fan) + d * 1000);
      st.push(1 + (h % locations));
    }
    const k = st.join(',');
    if (seen.has(k)) continue;
    seen.add(k);
    stackList.push(st.reverse()); // leaf first
  }
  const bytesKey = str('bytes');
  for (let i = 0; i < samples; i++) {
    // Every stack at least once, then skewed towards a few hot ones.
    const s = stackList[i < stacks ? i : Math.floor(stacks * rand() ** 2)];
    const size = [16, 32, 48, 64, 128, 256, 512, 1024, 4096, 65536][Math.floor(rand() * 10)];
    const n = 1 + Math.floor(rand() * 40);
    const live = Math.floor(n * rand());
    w.msg(2, (m) => {
      m.packed(1, s);
      m.packed(2, [n, n * size, live, live * size]);
      m.msg(3, (l) => { l.uint(1, bytesKey); l.uint(3, size); });
    });
  }
  w.msg(3, (m) => { m.uint(1, 1); m.uint(2, 0x400000); m.uint(3, 0x4000000); m.uint(5, str('/usr/bin/bench-app')); m.uint(7, 1); m.uint(8, 1); m.uint(9, 1); m.uint(10, 1); });
  for (let l = 1; l <= locations; l++) {
    w.msg(4, (m) => {
      m.uint(1, l); m.uint(2, 1); m.uint(3, 0x400000 + l * 16);
      const f = 1 + (mix(l, 7) % functions);
      if (l % 7 === 0) m.msg(4, (ln) => { ln.uint(1, 1 + (mix(l, 9) % functions)); ln.uint(2, 10 + (l % 300)); }); // inlined
      m.msg(4, (ln) => { ln.uint(1, f); ln.uint(2, 10 + (l % 500)); });
    });
  }
  for (let f = 1; f <= functions; f++) {
    w.msg(5, (m) => { m.uint(1, f); m.uint(2, str(`app/pkg${f % 97}.Func${f}`)); m.uint(3, str(`app/pkg${f % 97}.Func${f}`)); m.uint(4, str(`/src/app/pkg${f % 97}/file${f % 13}.go`)); m.uint(5, 10); });
  }
  w.msg(11, (m) => { m.uint(1, str('space')); m.uint(2, str('bytes')); });
  w.uint(12, 524288);
  for (const s of strings) w.bytes(6, Buffer.from(s, 'utf8'));
  const raw = Buffer.from(w.out());
  return { raw, gz: zlib.gzipSync(raw, { level: 6 }), samples, stacks };
}

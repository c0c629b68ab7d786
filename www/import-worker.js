// Reads a dropped file that the viewer's pprof decoder does not take (a heapsnap
// snapshot or serial capture, gperftools/jemalloc/Go heap text, folded stacks)
// through the importer module (viewer-import: the profile library's importers and the
// CLI's symbolizer), snapshots symbolized with the ELFs among the files dropped beside
// it, and posts back a pprof profile (or says the file is an ELF, or is pprof).
// A worker of its own, ended after each file: the importer's wasm and the memory a big
// snapshot or ELF took are returned to the browser, and the page stays responsive.
// A serial capture with several good frames is the exception: it is read as a series
// (`SeriesReader`), answered with its last frame and the series' points, and the
// worker stays alive for the chart (www/series.js), which asks it for other frames.
// A capture file (not gzipped) is streamed, a slice at a time, and never held: a
// point's frame is read from the file again when the chart asks for it, so a capture
// of any size (up to 4 GiB: 32-bit offsets) is charted in memory bounded by its
// largest frame.
// So are three snapshot or profile files (or more) opened together (`many`: the files
// `beside`), ordered as the CLI's `timeline FILES…` orders them.
// See viewer-wasm/src/load.rs.
import init, { Importer, SeriesReader, sniff_len } from './pkg/viewer_import.js';

// What is being read, for the page (a large capture or ELF takes seconds).
function progress(text) {
  self.postMessage({ progress: text });
}

const MB = (n) => `${(n / 1048576).toFixed(1)} MB`;

// The bytes of a Blob, inflated if gzipped, refused past `limit` bytes before (or,
// inflating, while) reading; with `head`, only its first `head` bytes (inflated).
async function bytesOf(blob, what, [limitName, limit], head = Infinity) {
  const magic = new Uint8Array(await blob.slice(0, 2).arrayBuffer());
  const gzipped = magic[0] === 0x1f && magic[1] === 0x8b;
  if (!gzipped) {
    if (head !== Infinity) return new Uint8Array(await blob.slice(0, head).arrayBuffer());
    if (blob.size > limit) throw new Error(`${what}: ${blob.size} bytes, over the ${limitName} limit of ${limit} bytes`);
    return new Uint8Array(await blob.arrayBuffer());
  }
  const reader = blob.stream().pipeThrough(new DecompressionStream('gzip')).getReader();
  const parts = [];
  let total = 0;
  let told = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    parts.push(value);
    if (head === Infinity && total - told > (8 << 20)) {
      told = total;
      progress(`inflating ${what}: ${MB(total)}`);
    }
    if (total >= head) {
      reader.cancel();
      break;
    }
    if (total > limit) {
      reader.cancel();
      throw new Error(`${what}: inflates to more than ${limit} bytes, the ${limitName} limit`);
    }
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return head === Infinity ? out : out.subarray(0, head);
}

// How long each step took (ms), handed to the page with a series (the benchmark
// prints them).
const phases = {};

// The importer's wasm exports (its memory, reported with a series).
let wasm;

self.onmessage = async (e) => {
  // (A chart's request, `id`, is the series' own handler's: never a file to read.)
  if (e.data.id !== undefined) return;
  const { input, name, beside, whole, many } = e.data;
  try {
    const started = performance.now();
    wasm = await init();
    phases.wasm = performance.now() - started;
    const importer = new Importer();
    if (many) {
      await manyFiles(beside, importer);
      return;
    }
    // The format decides from the head: a pprof file goes back to the viewer's own
    // decoder (and its message) without being read here, unless the viewer asks for
    // the whole-file decoder's verdict (`whole`: what its stream cannot name).
    const head = await bytesOf(input, name, ['', Infinity], sniff_len());
    const format = Importer.format(head);
    if (format.startsWith('pprof') && !whole) {
      self.postMessage({ pprof: true });
      return;
    }
    // An ELF symbolizes the snapshots beside it, and is no profile itself.
    if (isElf(head)) {
      self.postMessage({ elf: true });
      return;
    }
    const elves = [];
    for (const file of beside) {
      if (!isElf(new Uint8Array(await file.slice(0, 4).arrayBuffer()))) continue;
      progress(`reading ${file.name} (${MB(file.size)})`);
      elves.push([file.name, await bytesOf(file, file.name, ['elf-size', importer.elf_limit()])]);
    }
    const limit = importer.input_limit();
    const capture = SeriesReader.is_capture(head);
    // Streamed, or else (gzipped) held whole.
    const streamed = capture && !isGzip(new Uint8Array(await input.slice(0, 2).arrayBuffer()));
    if (streamed) {
      if (input.size >= 2 ** 32) {
        throw new Error(`${name}: ${input.size} bytes: the page reads captures up to 4 GiB (\`heapsnap timeline\` reads any size)`);
      }
      // A capture the plain path can hold that is not a series (fewer than two good
      // frames) goes that way, for its message.
      const fill = (reader) => streamCapture(reader, input, name);
      if (await series(name, fill, elves, format, false, input.size > limit, input)) return;
    }
    progress(`reading ${name} (${MB(input.size)})`);
    const reading = performance.now();
    const bytes = await bytesOf(input, name, ['input-size', limit]);
    phases.read = performance.now() - reading;
    if (capture && !streamed && await series(name, held([[name, bytes]]), elves, format)) return;
    for (const [n, b] of elves) importer.add_elf(n, b);
    const profile = importer.convert(bytes);
    self.postMessage({ profile, format }, [profile.buffer]);
  } catch (err) {
    self.postMessage({ error: String((err && err.message) || err) });
  }
};

// Three files or more (the ELFs among them set aside) as one series; fewer: `pprof`
// (null to the page), which reads them one by one as usual.
async function manyFiles(files, importer) {
  const elves = [];
  const inputs = [];
  for (const file of files) {
    if (isElf(new Uint8Array(await file.slice(0, 4).arrayBuffer()))) {
      progress(`reading ${file.name} (${MB(file.size)})`);
      elves.push([file.name, await bytesOf(file, file.name, ['elf-size', importer.elf_limit()])]);
    } else {
      inputs.push(file);
    }
  }
  if (inputs.length < 3) {
    self.postMessage({ pprof: true });
    return;
  }
  const reading = performance.now();
  const read = [];
  for (const file of inputs) {
    progress(`reading ${file.name} (${MB(file.size)})`);
    read.push([file.name, await bytesOf(file, file.name, ['input-size', importer.input_limit()])]);
  }
  phases.read = performance.now() - reading;
  await series(`${read.length} files`, held(read), elves, 'series', true);
}

function isElf(b) {
  return b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46;
}

function isGzip(b) {
  return b[0] === 0x1f && b[1] === 0x8b;
}

// Files whose bytes the series holds.
const held = (files) => async (reader) => {
  for (const [n, b] of files) reader.add_file(n, b);
};

// Feeds the capture `input` to the reader as the file's stream hands it over (none of
// it held here).
async function streamCapture(reader, input, name) {
  const reading = performance.now();
  reader.begin_capture(name, input.size);
  phases.feed = 0;
  const stream = input.stream().getReader();
  let [at, told] = [0, 0];
  for (;;) {
    const { done, value } = await stream.read();
    if (done) break;
    const feeding = performance.now();
    reader.feed(value);
    phases.feed += performance.now() - feeding;
    at += value.length;
    if (at - told >= 64 << 20) {
      told = at;
      progress(`decoding the frames of ${name}: ${MB(at)} of ${MB(input.size)}`);
    }
  }
  // Reading the file, apart from decoding its frames (counted in `decode`).
  phases.read = performance.now() - reading - phases.feed;
}

// Files as a series (a capture, or `many` files), given to the reader by `fill`:
// answers with the points (the chart), then its last good point (the views), then keeps
// answering the chart's requests until it is ended. False (nothing posted) when a
// capture has fewer than two good frames: the plain path shows it as its last snapshot,
// with its message; unless the capture is too big for that path (`huge`, streamed):
// then its one good frame is shown, or its error. Files that are not a series (`many`)
// are an error naming the file. `captureFile`: the file a streamed capture's frames are read
// from again when asked for.
async function series(name, fill, elves, format, many = false, huge = false, captureFile = null) {
  const reader = new SeriesReader();
  const parsing = performance.now();
  for (const [n, b] of elves) {
    progress(`parsing ${n}`);
    reader.add_elf(n, b);
  }
  phases.elf = performance.now() - parsing;
  progress(`decoding the frames of ${name}`);
  const decoding = performance.now();
  await fill(reader);
  let summary;
  try {
    summary = JSON.parse(reader.read());
  } catch (err) {
    if (many || huge) throw err;
    summary = { points: [] };
  }
  // (A streamed capture is read while it is decoded: that reading is `read`.)
  phases.decode = performance.now() - decoding - (captureFile ? phases.read : 0);
  phases.memory = wasm.memory.buffer.byteLength;
  summary.phases = phases;
  summary.name = name;
  // The bytes of the points `from..to` of a streamed capture, handed to the reader
  // (none when it holds its files).
  const need = async (...ranges) => {
    reader.forget();
    for (const [from, to] of ranges) {
      const spans = reader.spans(from, to);
      for (let k = 0; k < spans.length; k += 2) {
        reader.provide(spans[k], new Uint8Array(await captureFile.slice(spans[k], spans[k + 1]).arrayBuffer()));
      }
    }
  };
  const last = summary.points.length - 1;
  if (summary.points.length < 2 && !(huge && last === 0)) {
    reader.free();
    return false;
  }
  // The chart's requests, one at a time in order (each waits for the one before it:
  // reading a streamed capture's frames is asynchronous): a point's profile, the
  // growing functions, their values over a range of points (a range per request, so a
  // click waits for one range at most).
  const answer = async ({ id, frame, growing, areas }) => {
    try {
      if (growing) {
        await need([0, 1], [last, last + 1]);
        self.postMessage({ id, growing: JSON.parse(reader.growing()) });
      } else if (areas) {
        // (With the last point: what the symbols are matched to, if not yet decoded.)
        await need(areas, [last, last + 1]);
        self.postMessage({ id, values: JSON.parse(reader.areas(areas[0], areas[1])) });
      } else {
        await need([frame, frame + 1]);
        // How long the conversion took here (the benchmark compares it with the CLI's).
        const converting = performance.now();
        const p = reader.profile(frame);
        self.postMessage({ id, profile: p, took: performance.now() - converting }, [p.buffer]);
      }
    } catch (err) {
      self.postMessage({ id, error: String((err && err.message) || err) });
    } finally {
      try { reader.forget(); } catch { /* the answer above says what went wrong */ }
    }
  };
  // Taken from the moment the chart is posted: the chart asks at once, and a streamed
  // capture's last frame is still being read then (an `await` on the file), so a
  // request must not reach the handler that reads files (it failed the page with
  // "Cannot read properties of undefined"). Answered once the last frame is out.
  let ready;
  let queue = new Promise((r) => { ready = r; });
  if (last > 0) {
    self.onmessage = (e) => {
      queue = queue.then(() => answer(e.data));
    };
    self.postMessage({ series: summary, format });
  }
  // The chart first: it needs no symbols. Then the last frame, for the views.
  progress(`symbolizing the last frame of ${name}`);
  await need([last, last + 1]);
  const first = performance.now();
  const profile = reader.profile(last);
  // The first conversion: the importer's code not yet optimized by the browser.
  self.postMessage({ profile, format, first: performance.now() - first }, [profile.buffer]);
  if (last === 0) {
    reader.free();
    return true;
  }
  ready();
  return true;
}

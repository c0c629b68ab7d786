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

self.onmessage = async (e) => {
  const { input, name, beside, whole, many } = e.data;
  try {
    const started = performance.now();
    await init();
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
    progress(`reading ${name} (${MB(input.size)})`);
    const reading = performance.now();
    const bytes = await bytesOf(input, name, ['input-size', importer.input_limit()]);
    phases.read = performance.now() - reading;
    if (SeriesReader.is_capture(head) && await series(name, [[name, bytes]], elves, format)) return;
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
  await series(`${read.length} files`, read, elves, 'series', true);
}

function isElf(b) {
  return b[0] === 0x7f && b[1] === 0x45 && b[2] === 0x4c && b[3] === 0x46;
}

// Files as a series (a capture, or `many` files): answers with the points (the chart),
// then its last good point (the views), then keeps answering the chart's requests until
// it is ended. False (nothing posted) when a capture has fewer than two good frames: the
// plain path shows it as its last snapshot, with its message. Files that are not a
// series (`many`) are an error naming the file.
async function series(name, files, elves, format, many = false) {
  const reader = new SeriesReader();
  const parsing = performance.now();
  for (const [n, b] of elves) {
    progress(`parsing ${n}`);
    reader.add_elf(n, b);
  }
  phases.elf = performance.now() - parsing;
  for (const [n, b] of files) reader.add_file(n, b);
  progress(`decoding the frames of ${name}`);
  let summary;
  const decoding = performance.now();
  try {
    summary = JSON.parse(reader.read());
  } catch (err) {
    if (many) throw err;
    summary = { points: [] };
  }
  phases.decode = performance.now() - decoding;
  summary.phases = phases;
  summary.name = name;
  if (summary.points.length < 2) {
    reader.free();
    return false;
  }
  // The chart first: it needs no symbols. Then the last frame, for the views.
  self.postMessage({ series: summary, format });
  progress(`symbolizing the last frame of ${name}`);
  const profile = reader.profile(summary.points.length - 1);
  self.postMessage({ profile, format }, [profile.buffer]);
  // The chart's requests, one at a time in order: a point's profile, the growing
  // functions, their values over a range of points (a range per request, so a click
  // waits for one range at most).
  self.onmessage = (e) => {
    const { id, frame, growing, areas } = e.data;
    try {
      if (growing) {
        self.postMessage({ id, growing: JSON.parse(reader.growing()) });
      } else if (areas) {
        self.postMessage({ id, values: JSON.parse(reader.areas(areas[0], areas[1])) });
      } else {
        const p = reader.profile(frame);
        self.postMessage({ id, profile: p }, [p.buffer]);
      }
    } catch (err) {
      self.postMessage({ id, error: String((err && err.message) || err) });
    }
  };
  return true;
}

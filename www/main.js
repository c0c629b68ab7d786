// Loads the viewer (built by `cargo xtask viewer` into pkg/). Kept out of index.html so
// the Content-Security-Policy can forbid inline scripts.
import init from './pkg/viewer.js';

function showError(text) {
  const app = document.getElementById('app');
  const div = document.createElement('div');
  div.className = 'error';
  div.dataset.testid = 'error';
  div.setAttribute('role', 'alert');
  div.textContent = text;
  app.prepend(div);
}

// The release build compiles a Rust panic to a wasm trap (no message, see
// xtask/src/viewer.rs). A trap leaves the app's state half-updated, so say so in the
// page instead of freezing silently.
let trapped = false;
function onTrap(event) {
  const err = event.error || event.reason;
  if (trapped || !(err instanceof WebAssembly.RuntimeError)) return;
  trapped = true;
  showError(`The viewer hit an internal error (${err.message}). Reload the page to continue; ` +
    'if a particular file causes this, please report it.');
}
window.addEventListener('error', onTrap);
window.addEventListener('unhandledrejection', onTrap);

/// Opens files as if the user had picked them with "Open profile…" (two at once: the
/// older, by modification time, is the base): how a preloaded capture and the chart's
/// points (www/series.js) reach the viewer, by the path a user's files take.
export function openFiles(files) {
  const input = document.querySelector('[data-testid=file-input]');
  if (!input) throw new Error('the viewer is not running');
  const dt = new DataTransfer();
  for (const f of files) dt.items.add(f);
  input.files = dt.files;
  input.dispatchEvent(new Event('change', { bubbles: true }));
}

// `#capture=URL&elf=URL` (or `?capture=…`): a serial capture and the ELF that
// symbolizes it, fetched from this origin at start and opened together (how
// `cargo xtask demo` opens on the heap-over-time chart). Read before the app writes
// its own state into the hash.
const preload = new URLSearchParams(location.hash.slice(1) || location.search.slice(1));
async function preloadCapture() {
  const urls = ['capture', 'elf'].map((k) => preload.get(k)).filter(Boolean);
  if (!preload.get('capture')) return;
  const files = await Promise.all(urls.map(async (u) => {
    const r = await fetch(u);
    if (!r.ok) throw new Error(`cannot fetch ${u}: HTTP ${r.status}`);
    return new File([await r.blob()], u.split('/').pop() || u);
  }));
  openFiles(files);
}

init().then((wasm) => {
  // The wasm exports (its memory size is read by the benchmark).
  window.__heapsnapWasm = wasm;
  preloadCapture().catch((e) => showError(String(e.message || e)));
}).catch((e) => {
  showError(`The viewer failed to start: ${e}. Was it built (cargo xtask viewer)?`);
});

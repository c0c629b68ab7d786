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

init().then((wasm) => {
  // The wasm exports (its memory size is read by the benchmark).
  window.__heapsnapWasm = wasm;
}).catch((e) => {
  showError(`The viewer failed to start: ${e}. Was it built (cargo xtask viewer)?`);
});

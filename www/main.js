// Loads the viewer (built by `cargo xtask viewer` into pkg/). Kept out of index.html so
// the Content-Security-Policy can forbid inline scripts.
import init from './pkg/viewer.js';

init().then((wasm) => {
  // The wasm exports (its memory size is read by the benchmark).
  window.__heapsnapWasm = wasm;
}).catch((e) => {
  const app = document.getElementById('app');
  const div = document.createElement('div');
  div.className = 'error';
  div.dataset.testid = 'error';
  div.textContent = `The viewer failed to start: ${e}. Was it built (cargo xtask viewer)?`;
  app.prepend(div);
});

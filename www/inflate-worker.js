// Inflates a gzipped profile off the main thread: the page posts the file (a Blob),
// this worker pipes it through the browser's DecompressionStream and posts the output
// back piece by piece (transferred, not copied), so the viewer decodes piece n while
// piece n+1 is being inflated, on another core. See viewer-wasm/src/load.rs.
self.onmessage = async (e) => {
  try {
    const reader = e.data.stream().pipeThrough(new DecompressionStream('gzip')).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      self.postMessage({ chunk: value }, [value.buffer]);
    }
    self.postMessage({ done: true });
  } catch (err) {
    self.postMessage({ error: String(err) });
  }
};

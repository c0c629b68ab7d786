//! viewer-wasm: the Yew app behind `www/`.

//! `bench-floor < PROFILE`: reads an uncompressed pprof profile from stdin (`gzip -dc
//! FILE | bench-floor`) and makes the one pass of [`bench_floor::pass`] over it;
//! prints the number of samples and the checksum. Exits 1 when it is not protobuf.

use std::io::Read;

fn main() -> std::process::ExitCode {
    let mut raw = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut raw) {
        eprintln!("bench-floor: reading stdin: {e}");
        return std::process::ExitCode::FAILURE;
    }
    match bench_floor::pass(&raw) {
        Some((sum, samples)) => {
            println!("{samples} samples, {} bytes, checksum {sum:x}", raw.len());
            std::process::ExitCode::SUCCESS
        }
        None => {
            eprintln!("bench-floor: stdin is not a protobuf message");
            std::process::ExitCode::FAILURE
        }
    }
}

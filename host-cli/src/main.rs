//! `heapsnap`: the terminal front end of host-cli.

fn main() {
    eprintln!("heapsnap: not implemented yet");
    std::process::exit(1);
}

//! The `ukvs` command line: see `ukvs --help`.

mod cli;
mod serve;

/// mimalloc, not the system's allocator: see Cargo.toml.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}

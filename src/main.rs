//! The `ukvs` command line: see `ukvs --help`.

mod cli;
mod serve;

#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}

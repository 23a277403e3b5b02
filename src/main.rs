//! The `ukvs` command line: see `ukvs --help`.

mod cli;
mod serve;

fn main() -> std::process::ExitCode {
    cli::main()
}

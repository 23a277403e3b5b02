//! The `ukvs` command line: see `ukvs --help`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}

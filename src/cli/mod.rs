//! Command-line front end: one module per subcommand.
//!
//! This is the only place that knows about clap, rayon, memory maps and
//! progress bars. Each subcommand module exposes `Args` and
//! `run(args) -> anyhow::Result<ExitCode>`.
//!
//! Exit codes: 0 success, 1 nothing found (lookups), 2 error. A broken pipe
//! on stdout ends the run quietly with 0, as `head` users expect.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cat;
mod index;
mod lookup;
mod mementomap;
mod merge;
mod output;
mod sort;
mod surt;
mod validate;
mod zipnum;

/// Index web archives into sorted UKVS, CDXJ and CDX capture indexes.
#[derive(Debug, Parser)]
#[command(name = "ukvs", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    Index(index::Args),
    Surt(surt::Args),
    Validate(validate::Args),
    Cat(cat::Args),
    Sort(sort::Args),
    Merge(merge::Args),
    Lookup(lookup::Args),
    #[command(subcommand)]
    Zipnum(zipnum::Command),
    Mementomap(mementomap::Args),
}

/// Parses the command line, runs the subcommand and maps errors to exit codes.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Index(args) => index::run(args),
        Command::Surt(args) => surt::run(args),
        Command::Validate(args) => validate::run(args),
        Command::Cat(args) => cat::run(args),
        Command::Sort(args) => sort::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Lookup(args) => lookup::run(args),
        Command::Zipnum(cmd) => zipnum::run(cmd),
        Command::Mementomap(args) => mementomap::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ukvs: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// True when the error chain ends in a broken pipe (the reader went away).
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

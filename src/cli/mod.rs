//! Command-line front end: one module per subcommand.
//!
//! This is the only place that knows about clap and progress bars. Each
//! subcommand module exposes `Args` and `run(args) -> anyhow::Result<ExitCode>`;
//! files, maps and answers to queries come from the engine
//! ([`ukvs::engine`]).
//!
//! Exit codes: 0 success, 1 nothing found (lookups), 2 error. A broken pipe
//! on stdout ends the run quietly with 0, as `head` users expect.

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cat;
mod digests;
mod fold;
mod index;
mod lookup;
mod mementomap;
mod merge;
mod serve;
mod sort;
mod stats;
mod surt;
mod table;
mod validate;
mod wacz;
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
    Fold(fold::Args),
    Lookup(lookup::Args),
    #[command(subcommand)]
    Zipnum(zipnum::Command),
    Mementomap(mementomap::Args),
    Serve(serve::Args),
    Stats(stats::Args),
    Digests(digests::Args),
    #[command(subcommand)]
    Wacz(wacz::Command),
    Table(table::Args),
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
        Command::Fold(args) => fold::run(args),
        Command::Lookup(args) => lookup::run(args),
        Command::Zipnum(cmd) => zipnum::run(cmd),
        Command::Mementomap(args) => mementomap::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Stats(args) => stats::run(args),
        Command::Digests(args) => digests::run(args),
        Command::Wacz(cmd) => wacz::run(cmd),
        Command::Table(args) => table::run(args),
    };
    match result {
        Ok(code) => code,
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            ukvs::report!("ukvs: {err:#}");
            ExitCode::from(2)
        }
    }
}

/// True when a cause of the error is a broken pipe (the reader went away).
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(broken_pipe_cause)
}

/// Whether one cause is, or carries, a broken pipe. `source()` alone
/// misses some: an `#[error(transparent)]` variant (`ukvs::ukvs::Error::Io`)
/// and an `io::Error` wrapping another error both forward `source()` past
/// the error they hold, so that error never shows up in the chain and must
/// be reached by downcasting.
fn broken_pipe_cause(cause: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = cause.downcast_ref::<io::Error>() {
        return e.kind() == io::ErrorKind::BrokenPipe
            || e.get_ref().is_some_and(|inner| broken_pipe_cause(inner));
    }
    if let Some(e) = cause.downcast_ref::<ukvs::engine::sort::Error>() {
        return e.output_error().is_some_and(|e| broken_pipe_cause(e));
    }
    if let Some(e) = cause.downcast_ref::<ukvs::engine::stats::Error>() {
        return e.output_error().is_some_and(|e| broken_pipe_cause(e));
    }
    if let Some(e) = cause.downcast_ref::<ukvs::engine::index::Error>() {
        return e.output_error().is_some_and(|e| broken_pipe_cause(e));
    }
    if let Some(e) = cause.downcast_ref::<ukvs::engine::validate::Error>() {
        return e.output_error().is_some_and(|e| broken_pipe_cause(e));
    }
    if let Some(e) = cause.downcast_ref::<ukvs::engine::cat::Error>() {
        return e.output_error().is_some_and(|e| broken_pipe_cause(e));
    }
    if let Some(e) = cause.downcast_ref::<ukvs::engine::lookup::BatchError>() {
        return e.output_error().is_some_and(|e| broken_pipe_cause(e));
    }
    // A step's chain kept whole: its top is not in the outer chain.
    if let Some(ukvs::engine::mementomap::Error::Job(chain)) = cause.downcast_ref() {
        return chain.causes().any(broken_pipe_cause);
    }
    match cause.downcast_ref::<ukvs::ukvs::Error>() {
        Some(ukvs::ukvs::Error::Io(e)) => broken_pipe_cause(e),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_is_found_through_wrapping_errors() {
        let pipe = || io::Error::from(io::ErrorKind::BrokenPipe);
        let plain = anyhow::Error::from(pipe()).context("writing stdout");
        assert!(is_broken_pipe(&plain));
        let transparent =
            anyhow::Error::from(ukvs::ukvs::Error::Io(pipe())).context("cannot write a line");
        assert!(is_broken_pipe(&transparent));
        let wrapped = anyhow::Error::from(io::Error::other(ukvs::ukvs::Error::Io(pipe())));
        assert!(is_broken_pipe(&wrapped));
        let sorting = anyhow::Error::from(ukvs::engine::sort::Error::Output(pipe()));
        assert!(is_broken_pipe(&sorting));
        let report = anyhow::Error::from(ukvs::engine::stats::Error::Output(pipe()));
        assert!(is_broken_pipe(&report));
        let index = anyhow::Error::from(ukvs::engine::index::Error::Output(pipe()));
        assert!(is_broken_pipe(&index));
        let validating = anyhow::Error::from(ukvs::engine::validate::Error::Output(pipe()));
        assert!(is_broken_pipe(&validating));
        let cat = anyhow::Error::from(ukvs::engine::cat::Error::Output(pipe()));
        assert!(is_broken_pipe(&cat));
        let batch = anyhow::Error::from(ukvs::engine::lookup::BatchError::Output(pipe()));
        assert!(is_broken_pipe(&batch));
        let map = ukvs::engine::mementomap::Error::from(anyhow::Error::from(pipe()));
        assert!(is_broken_pipe(&anyhow::Error::from(map)));
        let other = anyhow::Error::from(ukvs::ukvs::Error::Io(io::Error::other("disk full")));
        assert!(!is_broken_pipe(&other));
    }
}

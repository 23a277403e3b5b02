//! `ukvs sort`: arguments in, the engine's sort job runs.

use std::path::PathBuf;
use std::process::ExitCode;

use ukvs::engine::sort::{self as job, SortJob};

/// Sort index lines (UKVS, CDXJ, CDX) in byte order with bounded memory.
///
/// Header lines (`!...`, ` CDX ...`) at the top of every input are kept on
/// top of the output, in byte order with duplicates dropped. The rest is
/// sorted as `LC_ALL=C sort` would: runs of up to `--mem` bytes (in total,
/// over all threads) are sorted in parallel, spilled to `--tmp-dir` and
/// merged. The output is the same bytes for any `-j` and any `--mem`.
/// Inputs may be gzip- or zstd-compressed (known by their bytes, whatever
/// the name); an archive given as an input is refused. `-` or no input
/// reads stdin. The output file appears whole or not at all.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Input files (`-` for stdin; stdin when none).
    inputs: Vec<PathBuf>,
    /// Output file (`-` for stdout).
    #[arg(short, long, default_value = "-")]
    output: PathBuf,
    /// Memory bound for the sort, e.g. `512M`, `2G` (suffixes K, M, G, T
    /// are powers of 1024).
    #[arg(long, default_value = "1G", value_parser = parse_size)]
    mem: u64,
    /// Drop repeated identical lines.
    #[arg(short, long)]
    unique: bool,
    /// Directory for the temporary run files (the system's by default).
    #[arg(long)]
    tmp_dir: Option<PathBuf>,
    /// Threads sorting runs (0 = all cores).
    #[arg(short = 'j', long, default_value_t = 0)]
    threads: usize,
}

/// Parses `123`, `64K`, `512M`, `1G`, `2T` (binary units; optional `B`/`iB`).
pub(super) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size like 512M or 2G"))?;
    if !n.is_finite() || n < 0.0 {
        return Err(format!("{s:?} is not a size like 512M or 2G"));
    }
    Ok((n * mult as f64) as u64)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    job::sort(&SortJob {
        inputs: args.inputs,
        output: args.output,
        mem: args.mem,
        unique: args.unique,
        tmp_dir: args.tmp_dir,
        threads: args.threads,
    })?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    /// One size syntax for `sort --mem` and `index --mem`.
    #[test]
    fn sizes() {
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("512m"), Ok(512 << 20));
        assert_eq!(parse_size("512MB"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("1X").is_err());
        assert!(parse_size("G").is_err());
        assert!(parse_size("-1G").is_err());
    }
}

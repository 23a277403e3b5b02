//! Checking UKVS files (`ukvs validate`): one pass over each file, mapped
//! or streamed, through [`crate::ukvs::Validator`], problems and a summary
//! written to the writer the front end gives.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use anyhow::Context;

use super::fs::{for_each_line, open_input};
use crate::ukvs::Validator;

/// How files are checked.
#[derive(Clone, Debug)]
pub struct ValidateJob {
    /// Problems printed per file (all are counted).
    pub max_problems: u64,
    /// Only problems, no summaries.
    pub quiet: bool,
    /// Read plain files instead of mapping them.
    pub no_mmap: bool,
}

/// Validates one file; `Ok(false)` when it has problems.
pub fn check_file(path: &Path, args: &ValidateJob, out: &mut impl Write) -> anyhow::Result<bool> {
    let name = path.display().to_string();
    let mut v = Validator::new();
    let mut printed = 0u64;
    let mut feed = |line: &[u8], out: &mut dyn Write| -> io::Result<()> {
        for p in v.line(line) {
            if printed < args.max_problems {
                writeln!(out, "{name}:{}: {}", p.line, p.kind)?;
            }
            printed += 1;
        }
        Ok(())
    };
    if let Some(map) = map_plain_file(path, args.no_mmap)? {
        // Lines straight out of the map: no copy from the page cache.
        let data: &[u8] = &map;
        let mut pos = 0;
        while pos < data.len() {
            let end = memchr::memchr(b'\n', &data[pos..]).map_or(data.len(), |i| pos + i);
            feed(&data[pos..end], out)?;
            pos = end + 1;
        }
    } else {
        let rdr = open_input(path)?;
        for_each_line(&name, rdr, |line, _| Ok(feed(line, out).map(|()| true)?))?;
    }
    let s = v.finish();
    if printed > args.max_problems {
        writeln!(
            out,
            "{name}: ... {} more problems not shown (--max-problems)",
            printed - args.max_problems
        )?;
    }
    if !args.quiet {
        writeln!(
            out,
            "{name}: {} lines ({} headers, {} records), {} keys, {} duplicate keys, {} identical lines, {}{}, {} problems: {}",
            s.lines,
            s.headers,
            s.records,
            s.keys,
            s.duplicate_keys,
            s.identical_lines,
            if s.sorted { "sorted" } else { "NOT sorted" },
            if s.mementomap { ", MementoMap" } else { "" },
            s.problems,
            if s.problems == 0 { "valid" } else { "INVALID" },
        )?;
    }
    Ok(s.problems == 0)
}

/// Maps a plain (not compressed), non-empty regular file read-only;
/// `None` for stdin, compressed files, empty files, non-regular files and
/// `--no-mmap`, which are streamed instead. A file that holds no index
/// lines is refused.
fn map_plain_file(path: &Path, no_mmap: bool) -> anyhow::Result<Option<memmap2::Mmap>> {
    if no_mmap || path.as_os_str() == "-" {
        return Ok(None);
    }
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    if super::fs::index_content_of(path, &file)? != super::fs::Content::Plain {
        return Ok(None);
    }
    super::fs::map_file(&file, memmap2::Advice::Sequential)
        .with_context(|| format!("cannot map {}", path.display()))
}

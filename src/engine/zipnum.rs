//! ZipNum cluster jobs: `ukvs zipnum build`.

use std::io::{self, Write};
use std::path::PathBuf;

use super::error::Kind;
use super::fs::{input_name, open_input};
use super::output::{Output, OutputDir};
use crate::sorted::lines::is_header;
use crate::sorted::zipnum::{Block, BlockWriter};

/// Why a cluster was not built (no cluster is then left behind).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The sorted index cannot be opened, read or decompressed (the
    /// line and byte are named where known).
    #[error(transparent)]
    Input(#[from] super::fs::Error),
    /// The index is not sorted: sort it first (`ukvs sort`).
    #[error(
        "{name}: line {line} is out of order ({key:?} sorts before the line above it); sort it \
         first (`ukvs sort`)"
    )]
    OutOfOrder {
        name: String,
        line: u64,
        key: String,
    },
    /// The gzip level is not 0-9.
    #[error("--level must be 0-9")]
    Level,
    /// Several shards need the input read twice, which stdin cannot be.
    #[error("--shards > 1 reads the input twice; give a file, not stdin")]
    ShardsOfStdin,
    /// A WACZ index has one data file.
    #[error("a WACZ index is one data file: drop --shards")]
    WaczShards,
    /// The cluster's files cannot be created, written or put in place.
    #[error(transparent)]
    Output(#[from] io::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Input(e) => e.kind(),
            Error::OutOfOrder { .. } => Kind::BadInput,
            Error::Level | Error::ShardsOfStdin | Error::WaczShards => Kind::Usage,
            Error::Output(e) => Kind::of_io(e),
        }
    }
}

super::error::output_variant!(Error);

/// How a cluster's files are named.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// pywb's: `index.idx`, `index.loc`, shards `index-NN.cdx.gz`.
    #[default]
    Pywb,
    /// Common Crawl's: `cluster.idx` naming shards `cdx-NNNNN.gz` beside
    /// it, no `.loc`.
    Cc,
    /// WACZ's `cdxj-gzip-1.0`: `index.cdx.gz` and `index.idx`, as py-wacz
    /// writes them into `indexes/` (see [`build_wacz`]).
    Wacz,
}

impl Layout {
    /// The idx's file name.
    pub fn idx_name(self) -> &'static str {
        match self {
            Layout::Pywb | Layout::Wacz => "index.idx",
            Layout::Cc => "cluster.idx",
        }
    }

    /// The name of shard `i` (from 0) in the idx's shard column.
    fn shard_name(self, i: usize) -> String {
        match self {
            Layout::Pywb => format!("index-{:02}", i + 1),
            Layout::Cc => format!("cdx-{i:05}.gz"),
            Layout::Wacz => "index.cdx.gz".to_owned(),
        }
    }

    /// The file of shard `i`.
    fn shard_file(self, i: usize) -> String {
        match self {
            Layout::Pywb => format!("{}.cdx.gz", self.shard_name(i)),
            Layout::Cc | Layout::Wacz => self.shard_name(i),
        }
    }
}

/// A sorted index cut into a ZipNum cluster.
#[derive(Clone, Debug)]
pub struct BuildJob {
    /// The sorted index (plain, gzip or zstd; `-` = stdin).
    pub input: PathBuf,
    /// The cluster's directory, replaced whole.
    pub output: PathBuf,
    pub lines_per_block: usize,
    /// Shard files the blocks are spread over.
    pub shards: usize,
    /// gzip level 0-9.
    pub level: u32,
    /// File names: pywb's or Common Crawl's.
    pub layout: Layout,
}

/// Data lines (headers skipped) of the input, checked to ascend.
fn for_each_line(
    input: &std::path::Path,
    mut f: impl FnMut(&[u8]) -> Result<(), Error>,
) -> Result<u64, Error> {
    let name = input_name(input);
    let mut prev = Vec::new();
    let (mut count, mut at_top) = (0u64, true);
    super::fs::for_each_line::<Error>(&name, open_input(input)?, |line, no| {
        if at_top && is_header(line) {
            return Ok(true);
        }
        if !at_top && line < prev.as_slice() {
            return Err(Error::OutOfOrder {
                name: name.clone(),
                line: no,
                key: String::from_utf8_lossy(line).into_owned(),
            });
        }
        at_top = false;
        f(line)?;
        count += 1;
        prev.clear();
        prev.extend_from_slice(line);
        Ok(true)
    })?;
    Ok(count)
}

/// Cuts a sorted index into a cluster (see [`BuildJob`]).
pub fn build(args: &BuildJob) -> Result<(), Error> {
    if args.level > 9 {
        return Err(Error::Level);
    }
    if args.layout == Layout::Wacz {
        return build_wacz(args);
    }
    let shards = args.shards.max(1);
    let lpb = args.lines_per_block.max(1);
    // The cluster is built beside the target and put in its place whole.
    let dir = OutputDir::create(&args.output, is_cluster_file)?;
    let blocks_per_shard = if shards > 1 {
        if args.input == std::path::Path::new("-") {
            return Err(Error::ShardsOfStdin);
        }
        let lines = for_each_line(&args.input, |_| Ok(()))?;
        let blocks = lines.div_ceil(lpb as u64);
        blocks.div_ceil(shards as u64).max(1)
    } else {
        u64::MAX
    };

    let layout = args.layout;
    let shard_name = |i: usize| layout.shard_name(i);
    let shard_file = |i: usize| dir.file(&layout.shard_file(i));

    let mut idx = dir.file(layout.idx_name())?;
    let mut shard_no = 0usize;
    let mut shard = shard_file(0)?;
    let mut finished_shards: Vec<Output> = Vec::new();
    let mut offset = 0u64;
    let mut block_no = 0u64;
    let mut in_shard = 0u64;
    let mut writer = BlockWriter::new(lpb, args.level);

    let mut emit = |block: crate::sorted::zipnum::FinishedBlock| -> Result<(), Error> {
        if in_shard == blocks_per_shard {
            let next = shard_file(shard_no + 1)?;
            let full = std::mem::replace(&mut shard, next);
            finished_shards.push(full);
            shard_no += 1;
            in_shard = 0;
            offset = 0;
        }
        shard.write_all(&block.gzip)?;
        block_no += 1;
        in_shard += 1;
        let entry = Block {
            first_key: block.first_key,
            shard: shard_name(shard_no),
            offset,
            length: block.gzip.len() as u64,
            block_no,
        };
        idx.write_all(&entry.to_line())?;
        idx.write_all(b"\n")?;
        offset += entry.length;
        Ok(())
    };
    for_each_line(&args.input, |line| {
        if let Some(block) = writer.push(line)? {
            emit(block)?;
        }
        Ok(())
    })?;
    if let Some(block) = writer.flush()? {
        emit(block)?;
    }
    finished_shards.push(shard);
    if layout == Layout::Pywb {
        let mut loc = dir.file("index.loc")?;
        for i in 0..finished_shards.len() {
            writeln!(loc, "{}\t{}", shard_name(i), layout.shard_file(i))?;
        }
        loc.commit()?;
    }
    for shard in finished_shards {
        shard.commit()?;
    }
    idx.commit()?;
    dir.commit()?;
    Ok(())
}

/// The files a cluster directory holds: `index.idx`, `index.loc` and
/// `index-NN.cdx.gz` shards, or `cluster.idx` and `cdx-NNNNN.gz` shards.
fn is_cluster_file(name: &str) -> bool {
    let numbered = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit());
    name == "index.idx"
        || name == "index.loc"
        || name == "cluster.idx"
        || name
            .strip_prefix("index-")
            .and_then(|r| r.strip_suffix(".cdx.gz"))
            .is_some_and(numbered)
        || name
            .strip_prefix("cdx-")
            .and_then(|r| r.strip_suffix(".gz"))
            .is_some_and(numbered)
}

/// Writes the `cdxj-gzip-1.0` index of a WACZ package (`index.cdx.gz`
/// and `index.idx`) from a sorted index, byte for byte as py-wacz writes
/// it for the same lines: blocks of `lines_per_block` lines (py-wacz:
/// 1024), each line with its LF, gzipped by zlib at `level` (py-wacz: 6),
/// a line repeated right after itself written once (py-wacz's sort drops
/// such repeats), and the blocks' SHA-256 in the `.idx`. One shard only.
pub fn build_wacz(args: &BuildJob) -> Result<(), Error> {
    if args.shards > 1 {
        return Err(Error::WaczShards);
    }
    let dir = OutputDir::create(&args.output, |n| n == "index.idx" || n == "index.cdx.gz")?;
    let idx = dir.file("index.idx")?;
    let data = dir.file("index.cdx.gz")?;
    let level = args.level;
    let mut wtr = crate::wacz::IdxWriter::new(idx, data, "index.cdx.gz", |block: &[u8]| {
        crate::wacz::zlib::gzip_member(block, level)
    })
    .lines_per_block(args.lines_per_block);
    let mut prev: Option<Vec<u8>> = None;
    for_each_line(&args.input, |line| {
        if prev.as_deref() == Some(line) {
            return Ok(());
        }
        wtr.push(line)?;
        let p = prev.get_or_insert_with(Vec::new);
        p.clear();
        p.extend_from_slice(line);
        Ok(())
    })?;
    let (idx, data) = wtr.finish()?;
    data.commit()?;
    idx.commit()?;
    dir.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::error::fixtures::cut_gzip_index;

    fn job(input: PathBuf, output: PathBuf) -> BuildJob {
        BuildJob {
            input,
            output,
            lines_per_block: 100,
            shards: 1,
            level: 6,
            layout: Layout::Pywb,
        }
    }

    #[test]
    fn errors_say_their_kind_and_name_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("cluster");
        let absent = dir.path().join("absent.cdxj");
        let err = build(&job(absent.clone(), out.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::Missing, "{err:?}");
        assert!(
            err.to_string().contains(&*absent.to_string_lossy()),
            "{err}"
        );

        let cut = cut_gzip_index(dir.path());
        let err = build(&job(cut.clone(), out.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::Damaged, "{err:?}");
        let named = format!("cannot read {} after line ", cut.display());
        assert!(err.to_string().starts_with(&named), "{err}");

        let unsorted = dir.path().join("unsorted.cdxj");
        std::fs::write(&unsorted, "b 2020\na 2020\n").unwrap();
        let err = build(&job(unsorted.clone(), out.clone())).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput);
        assert_eq!(
            err.to_string(),
            format!(
                "{}: line 2 is out of order (\"a 2020\" sorts before the line above it); sort \
                 it first (`ukvs sort`)",
                unsorted.display()
            )
        );
        assert!(!out.exists(), "no cluster is left behind");

        let sorted = dir.path().join("sorted.cdxj");
        std::fs::write(&sorted, "a 2020\nb 2020\n").unwrap();
        let level = BuildJob {
            level: 10,
            ..job(sorted.clone(), out.clone())
        };
        let err = build(&level).unwrap_err();
        assert_eq!(err.kind(), Kind::Usage);
        assert_eq!(err.to_string(), "--level must be 0-9");
        let stdin = BuildJob {
            shards: 2,
            ..job("-".into(), out.clone())
        };
        let err = build(&stdin).unwrap_err();
        assert_eq!(err.kind(), Kind::Usage);
        assert!(err
            .to_string()
            .starts_with("--shards > 1 reads the input twice"));
        let wacz = BuildJob {
            shards: 2,
            layout: Layout::Wacz,
            ..job(sorted.clone(), out.clone())
        };
        assert_eq!(build(&wacz).unwrap_err().kind(), Kind::Usage);
        // The same input builds.
        build(&job(sorted, out.clone())).unwrap();
        assert!(out.join("index.idx").is_file());
    }
}

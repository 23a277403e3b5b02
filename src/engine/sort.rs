//! Sorting and merging index files: `ukvs sort` and `ukvs merge`, and the
//! line inputs (plain, gzip, stdin) and header rules they share with the
//! other jobs that read index files.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{mpsc, Mutex};

use anyhow::{bail, Context};

use super::fs::{for_each_line, input_name, open_input, open_input_unbuffered};
use super::output::Output;
use crate::sorted::{self, Merge, Run};

/// An external sort of index lines in byte order with bounded memory.
#[derive(Clone, Debug)]
pub struct SortJob {
    /// Inputs (`-` for stdin; stdin when none), plain or gzip.
    pub inputs: Vec<PathBuf>,
    /// Output file (`-` for stdout), written whole or not at all.
    pub output: PathBuf,
    /// Memory for runs, in bytes, over all threads.
    pub mem: u64,
    /// Drop repeated identical lines.
    pub unique: bool,
    /// Directory for temporary runs (the system's when `None`).
    pub tmp_dir: Option<PathBuf>,
    /// Threads sorting runs (0 = every core).
    pub threads: usize,
}

/// A k-way merge of sorted index files.
#[derive(Clone, Debug)]
pub struct MergeJob {
    pub inputs: Vec<PathBuf>,
    /// Output file (`-` for stdout).
    pub output: PathBuf,
    /// Drop repeated identical lines.
    pub unique: bool,
}

/// The header block of a combined file: the headers of every input (with
/// the file each came from), a trailing CR dropped, in byte order without
/// duplicates. Inputs that declare different `!fields`, `!context` or CDX
/// legends describe their lines differently and cannot share one file:
/// that is an error naming both.
pub fn combine_headers(headers: Vec<(Vec<u8>, String)>) -> anyhow::Result<Vec<Vec<u8>>> {
    fn kind(h: &[u8]) -> Option<&'static str> {
        let word = h.split(|&b| b == b' ').next().unwrap_or_default();
        match word {
            b"!fields" => Some("`!fields`"),
            b"!context" => Some("`!context`"),
            _ if h.starts_with(b" CDX") => Some("CDX legend"),
            _ => None,
        }
    }
    let mut declared: Vec<(&'static str, &[u8], &str)> = Vec::new();
    let mut out = Vec::with_capacity(headers.len());
    for (h, name) in &headers {
        let h = h.strip_suffix(b"\r").unwrap_or(h);
        if let Some(k) = kind(h) {
            match declared.iter().find(|(dk, _, _)| *dk == k) {
                Some((_, first, first_name)) if *first != h => bail!(
                    "{first_name} and {name} declare different {k} headers ({:?} and {:?}); \
                     their lines cannot share one file",
                    String::from_utf8_lossy(first),
                    String::from_utf8_lossy(h)
                ),
                Some(_) => {}
                None => declared.push((k, h, name)),
            }
        }
        out.push(h.to_vec());
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// Memory kept aside from the run budget for I/O buffers and the merge.
const RESERVE: u64 = 16 << 20;

/// Sorts index lines (see [`SortJob`]).
pub fn sort(args: &SortJob) -> anyhow::Result<()> {
    let threads = super::thread_count(args.threads);
    let inputs = if args.inputs.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.inputs.clone()
    };
    if let Some(dir) = &args.tmp_dir {
        if !dir.is_dir() {
            bail!("--tmp-dir {} is not a directory", dir.display());
        }
    }
    // The filling run plus one run per sorting thread share the bound.
    let usable = args.mem.saturating_sub(RESERVE.min(args.mem / 2)).max(4096);
    let slots = if threads > 1 { threads + 1 } else { 1 };
    let budget = usize::try_from(usable / slots as u64).unwrap_or(usize::MAX);
    let tmp_dir = args.tmp_dir.as_deref();

    let (free_tx, free_rx) = mpsc::channel::<Run>();
    let (work_tx, work_rx) = mpsc::channel::<(usize, Run)>();
    let work_rx = Mutex::new(work_rx);
    let spilled: Mutex<Vec<(usize, File)>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<io::Error>> = Mutex::new(None);
    let mut headers: Vec<(Vec<u8>, String)> = Vec::new();
    let mut last_run = Run::default();
    let mut run_count = 0usize;

    std::thread::scope(|scope| -> anyhow::Result<()> {
        if threads > 1 {
            for _ in 0..threads {
                let (work_rx, free_tx, spilled, failure) =
                    (&work_rx, free_tx.clone(), &spilled, &failure);
                scope.spawn(move || loop {
                    let job = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((no, mut run)) = job else { return };
                    run.sort();
                    match sorted::spill(&run, tmp_dir) {
                        Ok(file) => {
                            if let Ok(mut s) = spilled.lock() {
                                s.push((no, file));
                            }
                        }
                        Err(e) => {
                            if let Ok(mut f) = failure.lock() {
                                f.get_or_insert(e);
                            }
                        }
                    }
                    run.clear();
                    // The filler may have finished and gone: nothing to do.
                    let _ = free_tx.send(run);
                });
            }
            for _ in 0..threads {
                let _ = free_tx.send(Run::with_capacity(0));
            }
        }
        let mut run = Run::default();
        let mut send = |run: &mut Run| -> anyhow::Result<()> {
            if threads > 1 {
                let next = free_rx.recv().context("run sorter stopped")?;
                let full = std::mem::replace(run, next);
                work_tx
                    .send((run_count, full))
                    .context("run sorter stopped")?;
            } else {
                run.sort();
                let file = sorted::spill(run, tmp_dir).context("writing a temporary run")?;
                spilled
                    .lock()
                    .map_err(|_| anyhow::anyhow!("lock"))?
                    .push((run_count, file));
                run.clear();
            }
            run_count += 1;
            Ok(())
        };
        for path in &inputs {
            let name = input_name(path);
            let mut at_top = true;
            for_each_line(&name, open_input_unbuffered(path)?, |line, _| {
                // A CDX legend is never data: one in the middle is the
                // legend of a concatenated file, not a line to sort.
                if (at_top && sorted::lines::is_header(line)) || line.starts_with(b" CDX ") {
                    headers.push((line.to_vec(), name.clone()));
                    return Ok(true);
                }
                at_top = false;
                if !run.is_empty() && run.mem_after_push(line.len()) > budget {
                    send(&mut run)?;
                }
                run.push(line);
                Ok(true)
            })?;
        }
        drop(work_tx);
        last_run = run;
        Ok(())
    })?;
    if let Some(err) = failure.into_inner().ok().flatten() {
        return Err(err).context("writing a temporary run");
    }
    let headers = combine_headers(headers)?;

    let mut out = Output::create(&args.output)?;
    for h in &headers {
        out.write_all(h)?;
        out.write_all(b"\n")?;
    }
    let mut spilled = spilled.into_inner().map_err(|_| anyhow::anyhow!("lock"))?;
    if spilled.is_empty() && threads > 1 {
        // Everything fitted in one run: the sorting threads are idle, and
        // this run is all the work left.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .context("starting threads")?;
        pool.install(|| last_run.par_sort());
    } else {
        last_run.sort();
    }
    if spilled.is_empty() {
        let mut prev: Option<&[u8]> = None;
        for line in last_run.iter() {
            if args.unique && prev == Some(line) {
                continue;
            }
            out.write_all(line)?;
            out.write_all(b"\n")?;
            prev = Some(line);
        }
    } else {
        if !last_run.is_empty() {
            spilled.push((run_count, sorted::spill(&last_run, tmp_dir)?));
        }
        drop(last_run);
        // Run order does not change the bytes (equal lines are equal), but
        // keeping it makes a run's position in an error message stable.
        spilled.sort_by_key(|(no, _)| *no);
        let files = spilled.into_iter().map(|(_, f)| f).collect();
        let files = sorted::reduce_runs(files, tmp_dir).context("merging temporary runs")?;
        let mut merge = sorted::merge_runs(files)?;
        merge.write_to(&mut out, args.unique)?;
    }
    out.commit()?;
    Ok(())
}

/// Merges sorted index files (see [`MergeJob`]).
pub fn merge(args: &MergeJob) -> anyhow::Result<()> {
    let mut inputs = Vec::new();
    for path in &args.inputs {
        inputs.push((input_name(path), open_input(path)?));
    }
    let mut merge = Merge::new(inputs, true)?;
    let headers = combine_headers(merge.input_headers().to_vec())?;
    let mut out = Output::create(&args.output)?;
    for h in &headers {
        out.write_all_line(h)?;
    }
    // Only a file is left untouched by a failure; a stream has had lines.
    let stopped = match &out {
        Output::Temp { target, .. } => format!("merge stopped; {} not written", target.display()),
        _ => format!("merge stopped; the output to {} is incomplete", out.name()),
    };
    merge.write_to(&mut out, args.unique).context(stopped)?;
    out.commit()?;
    Ok(())
}

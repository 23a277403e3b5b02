//! Sorting and merging index files: `ukvs sort` and `ukvs merge`, and the
//! line inputs (plain, gzip, stdin) and header rules they share with the
//! other jobs that read index files.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::{mpsc, Mutex};

use super::error::Kind;
use super::fs::{for_each_line, input_name, open_input, open_input_unbuffered};
use super::output::Output;
use crate::sorted::{self, Merge, Run};

/// Why a sort or merge failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An input cannot be opened or read, or is not index lines.
    #[error(transparent)]
    Input(#[from] super::fs::Error),
    /// `--tmp-dir` names no directory: give one that exists.
    #[error("--tmp-dir {} is not a directory", .0.display())]
    TmpDir(PathBuf),
    /// Two inputs describe their lines differently (`!fields`,
    /// `!context`, CDX legends): convert one, or keep them apart.
    #[error(
        "{first_name} and {name} declare different {header} headers ({first:?} and {got:?}); \
         their lines cannot share one file"
    )]
    Headers {
        /// The input that declared it first, and its header.
        first_name: String,
        first: String,
        /// The input that declares it otherwise, and its header.
        name: String,
        got: String,
        /// Which header: `` `!fields` ``, `` `!context` `` or `CDX legend`.
        header: &'static str,
    },
    /// A temporary run cannot be written or merged (`what` says which):
    /// see the cause; `--tmp-dir` puts them elsewhere.
    #[error("{what}")]
    Temp {
        what: &'static str,
        #[source]
        cause: io::Error,
    },
    /// The threads that sort runs stopped, or could not be started.
    #[error("{0}")]
    Threads(&'static str),
    /// An input is not sorted, or its lines broke off (the input and
    /// line are named).
    #[error(transparent)]
    Sorted(#[from] sorted::Error),
    /// A merge stopped part way; `stopped` says what became of the output.
    #[error("{stopped}")]
    Stopped {
        stopped: String,
        #[source]
        cause: sorted::Error,
    },
    /// The output cannot be written (the error names it).
    #[error(transparent)]
    Output(#[from] io::Error),
}

impl Error {
    /// What kind of failure this is, for a front end to answer.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Input(e) => e.kind(),
            Error::TmpDir(_) | Error::Headers { .. } => Kind::BadInput,
            Error::Temp { cause, .. } | Error::Output(cause) => Kind::of_io(cause),
            Error::Threads(_) => Kind::Io,
            Error::Sorted(e) | Error::Stopped { cause: e, .. } => Kind::of_sorted(e),
        }
    }
}

super::error::output_variant!(Error);

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
pub fn combine_headers(headers: Vec<(Vec<u8>, String)>) -> Result<Vec<Vec<u8>>, Error> {
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
                Some((_, first, first_name)) if *first != h => {
                    return Err(Error::Headers {
                        first_name: first_name.to_string(),
                        first: String::from_utf8_lossy(first).into_owned(),
                        name: name.clone(),
                        got: String::from_utf8_lossy(h).into_owned(),
                        header: k,
                    })
                }
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
pub fn sort(args: &SortJob) -> Result<(), Error> {
    let threads = super::thread_count(args.threads);
    let inputs = if args.inputs.is_empty() {
        vec![PathBuf::from("-")]
    } else {
        args.inputs.clone()
    };
    if let Some(dir) = &args.tmp_dir {
        if !dir.is_dir() {
            return Err(Error::TmpDir(dir.clone()));
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

    std::thread::scope(|scope| -> Result<(), Error> {
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
        let mut send = |run: &mut Run| -> Result<(), Error> {
            let stopped = |_| Error::Threads("run sorter stopped");
            if threads > 1 {
                let next = free_rx.recv().map_err(stopped)?;
                let full = std::mem::replace(run, next);
                work_tx
                    .send((run_count, full))
                    .map_err(|_| Error::Threads("run sorter stopped"))?;
            } else {
                run.sort();
                let file = sorted::spill(run, tmp_dir).map_err(temp_run)?;
                spilled
                    .lock()
                    .map_err(|_| Error::Threads("lock"))?
                    .push((run_count, file));
                run.clear();
            }
            run_count += 1;
            Ok(())
        };
        for path in &inputs {
            let name = input_name(path);
            let mut at_top = true;
            for_each_line::<Error>(&name, open_input_unbuffered(path)?, |line, _| {
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
        return Err(temp_run(err));
    }
    let headers = combine_headers(headers)?;

    let mut out = Output::create(&args.output)?;
    for h in &headers {
        out.write_all(h)?;
        out.write_all(b"\n")?;
    }
    let mut spilled = spilled.into_inner().map_err(|_| Error::Threads("lock"))?;
    if spilled.is_empty() && threads > 1 {
        // Everything fitted in one run: the sorting threads are idle, and
        // this run is all the work left.
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|_| Error::Threads("starting threads"))?;
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
        let files = sorted::reduce_runs(files, tmp_dir).map_err(|cause| Error::Temp {
            what: "merging temporary runs",
            cause,
        })?;
        let mut merge = sorted::merge_runs(files)?;
        merge.write_to(&mut out, args.unique)?;
    }
    out.commit()?;
    Ok(())
}

/// Merges sorted index files (see [`MergeJob`]).
pub fn merge(args: &MergeJob) -> Result<(), Error> {
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
    merge
        .write_to(&mut out, args.unique)
        .map_err(|cause| Error::Stopped { stopped, cause })?;
    out.commit()?;
    Ok(())
}

/// A temporary run that cannot be written.
fn temp_run(cause: io::Error) -> Error {
    Error::Temp {
        what: "writing a temporary run",
        cause,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_that_disagree_name_both_inputs_as_bad_input() {
        let headers = vec![
            (b"!fields a b\r".to_vec(), "one.cdxj".to_string()),
            (b"!meta {}".to_vec(), "two.cdxj".to_string()),
            (b"!fields a b".to_vec(), "two.cdxj".to_string()),
        ];
        // The same `!fields` (a CR aside) combine into one.
        let combined = combine_headers(headers).unwrap();
        assert_eq!(
            combined,
            vec![b"!fields a b".to_vec(), b"!meta {}".to_vec()]
        );
        let headers = vec![
            (b"!fields a b".to_vec(), "one.cdxj".to_string()),
            (b"!fields a c".to_vec(), "two.cdxj".to_string()),
        ];
        let err = combine_headers(headers).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput);
        assert_eq!(
            err.to_string(),
            "one.cdxj and two.cdxj declare different `!fields` headers (\"!fields a b\" and \
             \"!fields a c\"); their lines cannot share one file"
        );
    }

    #[test]
    fn a_missing_tmp_dir_is_bad_input_and_a_missing_input_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let job = SortJob {
            inputs: vec![dir.path().join("absent.cdxj")],
            output: dir.path().join("out.cdxj"),
            mem: 1 << 20,
            unique: false,
            tmp_dir: Some(dir.path().join("no-such-dir")),
            threads: 1,
        };
        let err = sort(&job).unwrap_err();
        assert_eq!(err.kind(), Kind::BadInput);
        assert!(
            err.to_string().ends_with("no-such-dir is not a directory"),
            "{err}"
        );
        let err = sort(&SortJob {
            tmp_dir: None,
            ..job
        })
        .unwrap_err();
        assert_eq!(err.kind(), Kind::Missing);
        assert!(err.to_string().starts_with("cannot open "), "{err}");
        assert!(!dir.path().join("out.cdxj").exists());
    }
}

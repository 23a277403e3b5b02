//! Output files that appear whole or not at all.
//!
//! Every subcommand that writes a file goes through [`Output`]: the bytes
//! go to a temporary file in the target's directory (so the final rename
//! stays on one file system), and [`Output::commit`] renames it over the
//! target. An error or a panic before that drops the temporary file, which
//! deletes it; the target keeps its old content.
//!
//! Two things a plain `NamedTempFile::persist` gets wrong are handled here:
//!
//! * Mode: the temporary file is created with mode 0666, which the kernel
//!   narrows by the umask exactly as for `File::create` (`tempfile`'s
//!   default 0600 would make every index private).
//! * Targets that are not regular files (a FIFO, `/dev/null`, a terminal,
//!   `/dev/stdout`): renaming over them would replace the device node or
//!   the pipe with a regular file (as root, `-o /dev/null` would replace
//!   `/dev/null`). Such targets are opened and written directly; there is
//!   nothing to make atomic about a stream.
//!
//! A symbolic link to a regular file is resolved first, so the file it
//! points to is replaced and the link kept.
//!
//! A process killed before it can delete its temporary file (SIGKILL, a
//! power cut) leaves it behind; its name says which process wrote it, and
//! the next output into the same directory removes it once that process is
//! gone.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Buffer size of every output: large writes, few system calls.
const BUF: usize = 1 << 20;

/// Start of the name of every temporary output file. The writer's process
/// id follows (`.ukvs-tmp-PID-XXXXXX`), so that the file of a process that
/// was killed can be told from one a running process is writing.
const TMP_PREFIX: &str = ".ukvs-tmp-";

/// Removes from `dir` the temporary output files of processes that no
/// longer run (killed before they could delete them). Where running
/// processes cannot be listed (no `/proc`), nothing is removed.
fn remove_leftovers(dir: &Path) {
    let proc_dir = Path::new("/proc");
    if !proc_dir.join("self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some((pid, _)) = name
            .strip_prefix(TMP_PREFIX)
            .and_then(|r| r.split_once('-'))
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let dead = pid != std::process::id() && !proc_dir.join(pid.to_string()).exists();
        match e.file_type() {
            Ok(t) if dead && t.is_file() => {
                let _ = fs::remove_file(e.path());
            }
            // The directory of a cluster being built ([`OutputDir`]).
            Ok(t) if dead && t.is_dir() => {
                let _ = fs::remove_dir_all(e.path());
            }
            _ => {}
        }
    }
}

/// Standard output, a temporary file renamed over the target by
/// [`Output::commit`], or a stream target written directly.
pub enum Output {
    Stdout(BufWriter<io::Stdout>),
    Temp {
        wtr: BufWriter<tempfile::NamedTempFile>,
        target: PathBuf,
        sync: bool,
        /// The name messages give (the target, or where a directory being
        /// built will put it).
        shown: PathBuf,
    },
    Direct {
        wtr: BufWriter<File>,
        target: PathBuf,
    },
}

impl Output {
    /// Starts writing `path`; `-` is standard output.
    pub fn create(path: &Path) -> io::Result<Output> {
        if path == Path::new("-") {
            return Ok(Output::Stdout(BufWriter::with_capacity(BUF, io::stdout())));
        }
        Output::file(path)
    }

    /// Starts writing the file `path` (`-` is a file name here).
    pub fn file(path: &Path) -> io::Result<Output> {
        match fs::metadata(path) {
            // FIFOs, devices, sockets: write through, never replace.
            Ok(meta) if !meta.is_file() && !meta.is_dir() => {
                let file = OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| with_name(e, "cannot open", path))?;
                return Ok(Output::Direct {
                    wtr: BufWriter::with_capacity(BUF, file),
                    target: path.to_path_buf(),
                });
            }
            Ok(meta) if meta.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("cannot write {}: it is a directory", path.display()),
                ))
            }
            _ => {}
        }
        // Replace the file a link points to, not the link.
        let target = match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                fs::canonicalize(path).map_err(|e| with_name(e, "cannot resolve the link", path))?
            }
            _ => path.to_path_buf(),
        };
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        remove_leftovers(dir);
        let prefix = format!("{TMP_PREFIX}{}-", std::process::id());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix);
        // 0666 as `File::create` asks for it; the kernel applies the umask.
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
        let tmp = builder
            .tempfile_in(dir)
            .map_err(|e| with_name(e, "cannot create a temporary file in", dir))?;
        Ok(Output::Temp {
            wtr: BufWriter::with_capacity(BUF, tmp),
            shown: target.clone(),
            target,
            sync: false,
        })
    }

    /// Makes [`Output::commit`] flush the file to the disk before the
    /// rename, so that after a crash the target is the old or the new file
    /// whole, never a renamed but empty one.
    pub fn durable(mut self) -> Output {
        if let Output::Temp { sync, .. } = &mut self {
            *sync = true;
        }
        self
    }

    /// The target, for messages.
    pub fn name(&self) -> String {
        match self {
            Output::Stdout(_) => "stdout".into(),
            Output::Temp { shown, .. } => shown.display().to_string(),
            Output::Direct { target, .. } => target.display().to_string(),
        }
    }

    /// Writes a line and its LF.
    pub fn write_all_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_all(line)?;
        self.write_all(b"\n")
    }

    /// Appends `bytes`, a large slice: what is buffered is written first,
    /// then `bytes` straight from where they are, without a copy into the
    /// buffer (nor the faults of the buffer's fresh pages).
    pub fn append_bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        fn straight<W: Write>(w: &mut BufWriter<W>, bytes: &[u8]) -> io::Result<()> {
            w.flush()?;
            w.get_mut().write_all(bytes)
        }
        let r = match self {
            Output::Stdout(w) => straight(w, bytes),
            Output::Temp { wtr, .. } => straight(wtr, bytes),
            Output::Direct { wtr, .. } => straight(wtr, bytes),
        };
        r.map_err(|e| self.named(e))
    }

    /// Appends what is left of `src` from its position. Into a file, what
    /// is buffered is written first and the kernel copies the rest
    /// (`io::copy` between files uses `copy_file_range`), so the bytes do
    /// not pass through this process.
    pub fn append_file(&mut self, src: &mut File) -> io::Result<u64> {
        let r = self.append_file_inner(src);
        r.map_err(|e| self.named(e))
    }

    fn append_file_inner(&mut self, src: &mut File) -> io::Result<u64> {
        match self {
            Output::Stdout(w) => io::copy(src, w),
            Output::Temp { wtr, .. } => {
                wtr.flush()?;
                io::copy(src, wtr.get_mut().as_file_mut())
            }
            Output::Direct { wtr, .. } => {
                wtr.flush()?;
                io::copy(src, wtr.get_mut())
            }
        }
    }

    /// Flushes and moves the finished file into place.
    pub fn commit(self) -> io::Result<()> {
        match self {
            Output::Stdout(mut w) => w
                .flush()
                .map_err(|e| with_name(e, "cannot write to", Path::new("stdout"))),
            Output::Direct { mut wtr, target } => wtr
                .flush()
                .map_err(|e| with_name(e, "cannot write", &target)),
            Output::Temp {
                wtr,
                target,
                sync,
                shown,
            } => {
                let failed = |e: io::Error| with_name(e, "cannot write", &shown);
                let tmp = wtr.into_inner().map_err(|e| failed(e.into_error()))?;
                if sync {
                    tmp.as_file().sync_all().map_err(failed)?;
                }
                // On failure the error holds the temporary file and drops
                // it, which deletes it.
                tmp.persist(&target)
                    .map_err(|e| with_name(e.error, "cannot rename the output into", &target))?;
                Ok(())
            }
        }
    }
}

impl Output {
    /// A write error that names the target (not the temporary file): the
    /// user knows the one, not the other.
    fn named(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("cannot write {}: {}", self.name(), cause(&e)),
        )
    }
}

/// `e` in the system's words, after `what` and the path it concerns.
fn with_name(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(
        e.kind(),
        format!("{what} {}: {}", path.display(), cause(&e)),
    )
}

/// The system's words for a write error, without the temporary file's
/// path that `tempfile` adds.
fn cause(e: &io::Error) -> String {
    let mut os = e.raw_os_error();
    let mut src: Option<&(dyn std::error::Error + 'static)> =
        e.get_ref().map(|r| r as &(dyn std::error::Error + 'static));
    while let (None, Some(s)) = (os, src) {
        os = s
            .downcast_ref::<io::Error>()
            .and_then(io::Error::raw_os_error);
        src = s.source();
    }
    match os {
        Some(n) => io::Error::from_raw_os_error(n).to_string(),
        None => {
            let text = e.to_string();
            text.split(" at path \"")
                .next()
                .unwrap_or_default()
                .to_string()
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let r = match self {
            Output::Stdout(w) => w.write(buf),
            Output::Temp { wtr, .. } => wtr.write(buf),
            Output::Direct { wtr, .. } => wtr.write(buf),
        };
        r.map_err(|e| self.named(e))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        let r = match self {
            Output::Stdout(w) => w.write_all(buf),
            Output::Temp { wtr, .. } => wtr.write_all(buf),
            Output::Direct { wtr, .. } => wtr.write_all(buf),
        };
        r.map_err(|e| self.named(e))
    }

    fn flush(&mut self) -> io::Result<()> {
        let r = match self {
            Output::Stdout(w) => w.flush(),
            Output::Temp { wtr, .. } => wtr.flush(),
            Output::Direct { wtr, .. } => wtr.flush(),
        };
        r.map_err(|e| self.named(e))
    }
}

/// Bytes [`write_behind`] hands to its writing thread at a time.
const BEHIND_CHUNK: usize = 1 << 20;

/// Chunks made and not yet written that [`write_behind`] lets wait.
const BEHIND_QUEUED: usize = 4;

/// Whether [`write_behind`] leaves what it writes in the page cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cache {
    /// Through the page cache (`write(2)`), as every output is written.
    Keep,
    /// Around it (`O_DIRECT`) where the file system takes that, for a
    /// durable file (a temporary file made [`Output::durable`]; any
    /// other output is written through the cache): the file's blocks go
    /// to the disk from a buffer of this process, with no copy into the
    /// page cache, and the fsync that makes the file durable finds
    /// little to write. For a large file that is read a block at a time
    /// (a base a server maps) or not soon: a fold of ten million lines
    /// into ten million writes 5 GB, whose copy into the page cache took
    /// its writing thread longer than the fjall reads (the disk of
    /// `scripts/bench_fold.sh` took 5 GB in 1.7 s this way against 6.2 s
    /// copied and fsync'd), and would push out of the cache what the
    /// server's lookups read.
    Bypass,
}

/// Runs `make` with a writer whose bytes a thread of their own writes to
/// `out`, so that making the bytes and copying them into the page cache
/// (`write(2)`, a fifth of a fold's time on its one thread) take two
/// cores; `cache` says whether they go through the page cache. Gives
/// what `make` gave and `out` with every byte written (or the first
/// write error). When `out` fails, the writer's next write fails too,
/// and `make` should stop.
pub fn write_behind<T>(
    out: Output,
    cache: Cache,
    make: impl FnOnce(&mut Behind) -> T,
) -> (T, io::Result<Output>) {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(BEHIND_QUEUED);
        // Written chunks come back to be filled again: a fresh one would
        // fault in its pages anew.
        let (done, spare) = std::sync::mpsc::channel::<Vec<u8>>();
        let writer = s.spawn(move || {
            let mut out = match cache {
                Cache::Keep => Sink::Cached(out),
                Cache::Bypass => Uncached::start(out)?,
            };
            for mut chunk in rx {
                out.write_all(&chunk)?;
                chunk.clear();
                let _ = done.send(chunk);
            }
            out.finish()
        });
        let mut behind = Behind {
            buf: Vec::with_capacity(BEHIND_CHUNK),
            tx: Some(tx),
            spare,
        };
        let made = make(&mut behind);
        // The last chunk; then the writer ends with the channel.
        let _ = behind.send();
        drop(behind);
        let out = writer
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (made, out)
    })
}

/// Where [`write_behind`]'s thread writes.
enum Sink {
    Cached(Output),
    Uncached(Uncached),
}

impl Sink {
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Sink::Cached(out) => out.write_all(bytes),
            Sink::Uncached(u) => u.write_all(bytes),
        }
    }

    fn finish(self) -> io::Result<Output> {
        match self {
            Sink::Cached(out) => Ok(out),
            Sink::Uncached(u) => u.finish(),
        }
    }
}

/// Bytes an uncached write takes at a time, and the alignment of its
/// offsets and lengths (`O_DIRECT` asks for the device's block size,
/// 4 KiB or a divisor of it).
const UNCACHED_STAGE: usize = 4 << 20;
const UNCACHED_ALIGN: u64 = 4096;

/// A durable temporary file written with `O_DIRECT`, a stage of
/// [`UNCACHED_STAGE`] bytes at a time from a page-aligned buffer at
/// aligned offsets; the last bytes, less than a stage, through the page
/// cache. Where the file system refuses `O_DIRECT` (tmpfs, some network
/// file systems: `EINVAL`) the rest goes through the page cache.
struct Uncached {
    tmp: tempfile::NamedTempFile,
    target: PathBuf,
    shown: PathBuf,
    stage: memmap2::MmapMut,
    filled: usize,
    /// Where the stage goes in the file.
    at: u64,
    direct: bool,
}

impl Uncached {
    /// Takes over `out` when it is a durable temporary file (its
    /// buffered bytes, the headers, go first); any other output is
    /// written through the cache.
    fn start(out: Output) -> io::Result<Sink> {
        let Output::Temp {
            wtr,
            target,
            sync: true,
            shown,
        } = out
        else {
            return Ok(Sink::Cached(out));
        };
        let (tmp, pending) = wtr.into_parts();
        let named = |e: io::Error| with_name(e, "cannot write", &shown);
        let at = io::Seek::stream_position(&mut tmp.as_file()).map_err(named)?;
        let stage = memmap2::MmapMut::map_anon(UNCACHED_STAGE).map_err(named)?;
        let mut u = Uncached {
            tmp,
            target,
            shown,
            stage,
            filled: 0,
            at,
            direct: false,
        };
        // Offsets stay aligned from an aligned start (the headers are
        // still in the buffer, unless they were a megabyte or more).
        u.direct = at % UNCACHED_ALIGN == 0 && u.set_direct(true).is_ok();
        // The buffer gave its bytes back, unwritten (`Err` only after a
        // panic in a write, which this process would not outlive).
        u.write_all(&pending.unwrap_or_default())?;
        Ok(Sink::Uncached(u))
    }

    /// `e`, naming the file written.
    fn named(&self, e: io::Error) -> io::Error {
        with_name(e, "cannot write", &self.shown)
    }

    fn set_direct(&self, on: bool) -> io::Result<()> {
        use rustix::fs::OFlags;
        let file = self.tmp.as_file();
        let flags = rustix::fs::fcntl_getfl(file)?;
        let flags = match on {
            true => flags | OFlags::DIRECT,
            false => flags - OFlags::DIRECT,
        };
        rustix::fs::fcntl_setfl(file, flags)?;
        Ok(())
    }

    fn write_all(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let n = bytes.len().min(UNCACHED_STAGE - self.filled);
            self.stage[self.filled..self.filled + n].copy_from_slice(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled == UNCACHED_STAGE {
                self.write_stage()?;
            }
        }
        Ok(())
    }

    /// Writes the stage's bytes at `at`: whole stages straight to the
    /// disk, while the file system takes that.
    fn write_stage(&mut self) -> io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut done = 0;
        while done < self.filled {
            let at = self.at + done as u64;
            match self
                .tmp
                .as_file()
                .write_at(&self.stage[done..self.filled], at)
            {
                Ok(0) => {
                    let e = io::Error::new(io::ErrorKind::WriteZero, "the disk took no bytes");
                    return Err(self.named(e));
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Refused (a file system without O_DIRECT, or a short
                // write that left the rest unaligned): the cache then.
                Err(e) if self.direct && e.raw_os_error() == Some(libc::EINVAL) => {
                    self.set_direct(false).map_err(|e| self.named(e))?;
                    self.direct = false;
                }
                Err(e) => return Err(self.named(e)),
            }
        }
        self.at += done as u64;
        self.filled = 0;
        Ok(())
    }

    /// Writes the last bytes through the cache and gives the output
    /// back, at the file's end, for [`Output::commit`] to sync and
    /// rename.
    fn finish(mut self) -> io::Result<Output> {
        if self.direct {
            self.set_direct(false).map_err(|e| self.named(e))?;
            self.direct = false;
        }
        self.write_stage()?;
        io::Seek::seek(&mut self.tmp.as_file(), io::SeekFrom::Start(self.at))
            .map_err(|e| self.named(e))?;
        Ok(Output::Temp {
            wtr: BufWriter::with_capacity(BUF, self.tmp),
            target: self.target,
            sync: true,
            shown: self.shown,
        })
    }
}

/// The writer of [`write_behind`].
pub struct Behind {
    buf: Vec<u8>,
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    spare: std::sync::mpsc::Receiver<Vec<u8>>,
}

impl Behind {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BEHIND_CHUNK));
        let chunk = std::mem::replace(&mut self.buf, next);
        match &self.tx {
            Some(tx) if tx.send(chunk).is_ok() => Ok(()),
            // The writer stopped at an error, which it gives.
            _ => {
                self.tx = None;
                Err(io::Error::other("the output's writer stopped"))
            }
        }
    }
}

impl Write for Behind {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        if self.buf.len() + buf.len() > BEHIND_CHUNK {
            self.send()?;
        }
        self.buf.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// An output that is a directory of files (a ZipNum cluster): built whole
/// in a temporary directory beside the target, then put in its place by
/// [`OutputDir::commit`], so that the target is always the old directory
/// or the new one, never a mix (on Linux the two are exchanged in one
/// step; elsewhere the old one is moved aside first, and for an instant
/// the target is absent). An error, a panic or a kill before that leaves
/// the target as it was; the next output into the same directory removes
/// what a killed run left.
pub struct OutputDir {
    tmp: tempfile::TempDir,
    target: PathBuf,
}

impl OutputDir {
    /// Starts building the directory `target`. An existing target must
    /// hold only files and directories that `owned` accepts (those this
    /// output writes): the whole directory is replaced.
    pub fn create(target: &Path, owned: impl Fn(&str) -> bool) -> io::Result<OutputDir> {
        match fs::symlink_metadata(target) {
            Ok(m) if m.is_dir() => {
                for e in fs::read_dir(target).map_err(|e| with_name(e, "cannot list", target))? {
                    let e = e.map_err(|e| with_name(e, "cannot list", target))?;
                    let name = e.file_name().to_string_lossy().into_owned();
                    // Directories too: a table's `crawl=...` partitions.
                    if !owned(&name) || !e.file_type().is_ok_and(|t| t.is_file() || t.is_dir()) {
                        return Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            format!(
                                "{} holds {name:?}, which this output would delete with the \
                                 directory it replaces: give a new directory or one this \
                                 command wrote",
                                target.display()
                            ),
                        ));
                    }
                }
            }
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("cannot write {}: it is not a directory", target.display()),
                ))
            }
            Err(_) => {}
        }
        let parent = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        fs::create_dir_all(parent).map_err(|e| with_name(e, "cannot create", parent))?;
        remove_leftovers(parent);
        let prefix = format!("{TMP_PREFIX}{}-", std::process::id());
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .tempdir_in(parent)
            .map_err(|e| with_name(e, "cannot create a temporary directory in", parent))?;
        Ok(OutputDir {
            tmp,
            target: target.to_path_buf(),
        })
    }

    /// Where the files go until [`OutputDir::commit`].
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Starts writing the file `name` of the directory; messages name it
    /// where it will be once the directory is in place.
    pub fn file(&self, name: &str) -> io::Result<Output> {
        let mut out = Output::file(&self.tmp.path().join(name))?;
        if let Output::Temp { shown, .. } = &mut out {
            *shown = self.target.join(name);
        }
        Ok(out)
    }

    /// The target, for messages.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Flushes the files to the disk and puts the directory in place of
    /// the target.
    pub fn commit(self) -> io::Result<()> {
        let named = |e: io::Error| with_name(e, "cannot put the output in place at", &self.target);
        for e in fs::read_dir(self.tmp.path())?.flatten() {
            File::open(e.path())
                .and_then(|f| f.sync_all())
                .map_err(named)?;
        }
        // The directory's entries too, before it is put in place (its
        // parent, as a file's, is the caller's to sync: a fold does).
        File::open(self.tmp.path())
            .and_then(|d| d.sync_all())
            .map_err(named)?;
        let tmp = self.tmp.keep();
        if !self.target.exists() {
            return fs::rename(&tmp, &self.target).map_err(named);
        }
        #[cfg(target_os = "linux")]
        {
            let swapped = rustix::fs::renameat_with(
                rustix::fs::CWD,
                &tmp,
                rustix::fs::CWD,
                &self.target,
                rustix::fs::RenameFlags::EXCHANGE,
            );
            if swapped.is_ok() {
                // `tmp` now holds the old directory.
                return fs::remove_dir_all(&tmp).map_err(named);
            }
        }
        let aside = tmp.with_extension("old");
        fs::rename(&self.target, &aside).map_err(named)?;
        fs::rename(&tmp, &self.target).map_err(named)?;
        fs::remove_dir_all(&aside).map_err(named)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `n` lines of lengths cycling below `pad` to `w` and adds
    /// them to `want`; gives `n`.
    fn write_lines(w: &mut Behind, n: u32, pad: u32, want: &mut Vec<u8>) -> u32 {
        for i in 0..n {
            let line = format!("line {i} {}\n", "x".repeat((i % pad) as usize));
            want.extend_from_slice(line.as_bytes());
            w.write_all(line.as_bytes()).unwrap();
        }
        n
    }

    /// A durable file written around the page cache holds the bytes
    /// written before (headers, unaligned) and every byte after, in
    /// order, on a file system that takes O_DIRECT (that of the
    /// temporary directory here) and on one that may refuse it
    /// (`/dev/shm`, tmpfs), where the bytes go through the cache.
    #[test]
    fn write_behind_around_the_cache_writes_every_byte_in_order() {
        let shm = Path::new("/dev/shm");
        let disk = tempfile::tempdir().unwrap();
        let mem = shm.is_dir().then(|| tempfile::tempdir_in(shm).unwrap());
        for dir in [Some(&disk), mem.as_ref()].into_iter().flatten() {
            let path = dir.path().join("out.txt");
            let mut out = Output::create(&path).unwrap().durable();
            out.write_all_line(b"!header").unwrap();
            let mut want = b"!header\n".to_vec();
            let (lines, out) = write_behind(out, Cache::Bypass, |w| {
                write_lines(w, 500_000, 89, &mut want)
            });
            assert_eq!(lines, 500_000);
            assert!(want.len() > 4 * UNCACHED_STAGE);
            assert!(want.len() % UNCACHED_STAGE != 0);
            out.unwrap().commit().unwrap();
            assert!(std::fs::read(&path).unwrap() == want, "{}", path.display());
        }
    }

    /// Many chunks' worth of lines written behind arrive whole and in
    /// order; a target that fails (a full device) fails the writes that
    /// follow and gives the device's error, not a panic or a hang.
    #[test]
    fn write_behind_writes_every_byte_in_order_and_gives_the_first_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let mut want = Vec::new();
        let (lines, out) = write_behind(Output::create(&path).unwrap(), Cache::Keep, |w| {
            write_lines(w, 300_000, 97, &mut want)
        });
        assert_eq!(lines, 300_000);
        assert!(want.len() > 4 * BEHIND_CHUNK);
        out.unwrap().commit().unwrap();
        assert!(std::fs::read(&path).unwrap() == want);

        let full = Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let (written, out) = write_behind(Output::create(full).unwrap(), Cache::Keep, |w| {
            let line = [b'x'; 1000];
            (0..100_000)
                .take_while(|_| w.write_all(&line).is_ok())
                .count()
        });
        assert!(written < 100_000, "the writes stop");
        let err = out.err().expect("the device's error");
        assert!(err.to_string().contains("No space left"), "{err}");
    }
}

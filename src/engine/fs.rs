//! Input files: mapped into memory (the one place that maps files), or
//! opened as streams (a path or `-` for stdin, gzip found by its magic
//! bytes whatever the name).

// Mapping a file and dropping mapped pages are unsafe calls; each says
// why it holds.
#![allow(unsafe_code)]

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use flate2::read::MultiGzDecoder;

/// Maps a non-empty regular file read-only; `None` for anything else
/// (pipes, terminals, empty files), which callers read instead. `advice`
/// tells the kernel how the map will be read (`Normal` gives none).
///
/// Every command that maps a whole file maps it here. The map is only
/// read. If another process truncates the file while it is mapped,
/// reading past the new end raises SIGBUS, which [`super::sigbus`] turns
/// into a message naming the file and exit code 2 (the output, written
/// atomically, is then not committed; the next run removes the temporary
/// file left behind); if it rewrites bytes, the result may mix old and
/// new contents. Files this tool writes are replaced by rename, never
/// changed in place (a rename leaves a map on the old file), so neither
/// happens to them. Commands that map their inputs take `--no-mmap` to
/// read files that may be changed instead.
pub fn map_file(file: &File, advice: memmap2::Advice) -> io::Result<Option<memmap2::Mmap>> {
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(None);
    }
    // SAFETY: see above; the map is never written, and a concurrent change
    // of the file is the documented exception.
    let map = unsafe { memmap2::Mmap::map(file) }?;
    super::sigbus::watch(&map, file);
    #[cfg(unix)]
    if advice != memmap2::Advice::Normal {
        let _ = map.advise(advice);
    }
    Ok(Some(map))
}

/// Bytes of a mapped input released at a time (see [`Behind`]).
const RELEASE_STEP: usize = 8 << 20;

/// The pages of a mapped input that reading has moved past, given back in
/// steps while the file is read.
///
/// Unmapping a large file costs time in proportion to its mapped pages; at
/// the end of a file, that time would hold up the end of the run. Released
/// in steps as reading goes on, it is spread over the run and done in
/// parallel with other files' work. Releasing only drops the mappings: the
/// bytes stay in the page cache and the map stays valid (a later read of a
/// released page maps it again), so a wrong offset costs time, never data.
pub struct Behind {
    map: Arc<memmap2::Mmap>,
    /// Bytes from the start released so far.
    done: usize,
}

impl Behind {
    pub fn new(map: Arc<memmap2::Mmap>) -> Behind {
        Behind { map, done: 0 }
    }

    /// Releases the pages wholly below `offset` once a step of them has
    /// gathered; the caller needs no byte below `offset` any more.
    pub fn release_below(&mut self, offset: u64) {
        let upto = usize::try_from(offset).map_or(self.map.len(), |o| o.min(self.map.len()));
        let upto = upto - upto % PAGE;
        if upto < self.done + RELEASE_STEP {
            return;
        }
        // SAFETY: MADV_DONTNEED on a read-only shared file mapping drops
        // page mappings only; the range stays mapped and reads the file's
        // bytes again on the next access, so no reference into the map is
        // invalidated. (On a private mapping it would throw away written
        // pages; this map is never written.)
        #[cfg(unix)]
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                self.done,
                upto - self.done,
            )
        };
        self.done = upto;
    }
}

/// Page size assumed for rounding release ranges (a larger page only
/// makes a range's last page a partial one, which is harmless).
const PAGE: usize = 4096;

// ------------------------------------------------------------- streams

/// The first bytes of gzip data.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// A display name for an input path (`<stdin>` for `-`).
pub fn input_name(path: &Path) -> String {
    if is_stdin(path) {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    }
}

/// Whether `path` names standard input (`-`).
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Opens an input to read: a path, or `-` for stdin, through a buffer of
/// 1 MiB. Gzip content (found by its magic bytes, whatever the name) is
/// decompressed, concatenated members as one stream.
pub fn open_input(path: &Path) -> anyhow::Result<Box<dyn BufRead + Send>> {
    open_input_with(path, 1 << 20)
}

/// [`open_input`] with a buffer of `capacity` bytes (a small one to read
/// only the headers at a file's start).
pub fn open_input_with(path: &Path, capacity: usize) -> anyhow::Result<Box<dyn BufRead + Send>> {
    let raw: Box<dyn Read + Send> = match is_stdin(path) {
        true => Box::new(io::stdin()),
        false => {
            Box::new(File::open(path).with_context(|| format!("cannot open {}", path.display()))?)
        }
    };
    let mut rdr = BufReader::with_capacity(capacity, raw);
    let magic = rdr
        .fill_buf()
        .with_context(|| format!("cannot read {}", path.display()))?;
    if magic.starts_with(&GZIP_MAGIC) {
        Ok(Box::new(BufReader::with_capacity(
            capacity,
            MultiGzDecoder::new(rdr),
        )))
    } else {
        Ok(Box::new(rdr))
    }
}

/// [`open_input`] for a reader that reads large blocks itself (a
/// `LineReader`): a plain file is given as it is, with no buffer in
/// between that would copy every byte once more.
pub fn open_input_unbuffered(path: &Path) -> anyhow::Result<Box<dyn Read + Send>> {
    if is_stdin(path) {
        return Ok(open_input(path)?);
    }
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    match is_gzip(&file).with_context(|| format!("cannot read {}", path.display()))? {
        true => Ok(Box::new(MultiGzDecoder::new(BufReader::with_capacity(
            1 << 20,
            file,
        )))),
        false => Ok(Box::new(file)),
    }
}

/// Whether `file` starts with the gzip magic bytes (read where they are,
/// without moving the file's position).
pub fn is_gzip(file: &File) -> io::Result<bool> {
    let mut magic = [0u8; 2];
    let got = read_full_at(file, &mut magic, 0)?;
    Ok(got == magic.len() && magic == GZIP_MAGIC)
}

/// Reads into `buf` from offset `at` of `file` (positioned reads, which
/// leave the file's position as it is) until `buf` is full or the file
/// ends; the bytes read.
pub fn read_full_at(file: &File, buf: &mut [u8], at: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The format of an archive whose file starts with `first` (a few KiB):
/// `WARC` (plain, gzip or zstd) or `ARC` (its first record a
/// `filedesc://`, plain or gzip); `None` for anything else.
pub fn archive_format(first: &[u8]) -> Option<&'static str> {
    if crate::warc::is_warc(first) {
        return Some("WARC");
    }
    const FILEDESC: &[u8] = b"filedesc://";
    let mut head = [0u8; FILEDESC.len()];
    let mut got = 0;
    if first.starts_with(&GZIP_MAGIC) {
        let mut dec = MultiGzDecoder::new(first);
        while got < head.len() {
            match dec.read(&mut head[got..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
    } else {
        got = first.len().min(head.len());
        head[..got].copy_from_slice(&first[..got]);
    }
    (head[..got] == *FILEDESC).then_some("ARC")
}

/// Refuses an archive given where an index is expected, naming the file
/// and what to run first: its records would otherwise be read as index
/// lines, most of them skipped as bad, some taken for keys. Stdin and
/// files that cannot be read are left to the reader, which reports them.
pub fn refuse_archive(path: &Path) -> anyhow::Result<()> {
    if is_stdin(path) {
        return Ok(());
    }
    let Ok(file) = File::open(path) else {
        return Ok(());
    };
    let mut first = [0u8; 4096];
    let Ok(got) = read_full_at(&file, &mut first, 0) else {
        return Ok(());
    };
    match archive_format(&first[..got]) {
        Some(format) => anyhow::bail!(
            "{} holds {format} records, not index lines: index it first (`ukvs index {} -o INDEX`), then give INDEX",
            path.display(),
            path.display()
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn released_pages_read_the_same_bytes() {
        let data: Vec<u8> = (0..3 * RELEASE_STEP + 1234)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
            .collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&data).unwrap();
        let map = Arc::new(
            map_file(&file, memmap2::Advice::Normal)
                .unwrap()
                .expect("a regular file maps"),
        );
        let mut behind = Behind::new(map.clone());
        // Less than a step: nothing yet.
        behind.release_below(RELEASE_STEP as u64 - 1);
        assert_eq!(behind.done, 0);
        behind.release_below(RELEASE_STEP as u64 + 100);
        assert_eq!(behind.done, RELEASE_STEP);
        assert_eq!(&map[..], &data[..], "released pages map again");
        // Past the end: up to the last whole page.
        behind.release_below(u64::MAX);
        assert_eq!(behind.done, data.len() - data.len() % PAGE);
        assert_eq!(&map[..], &data[..]);
        // Going back releases nothing more.
        behind.release_below(0);
        assert_eq!(behind.done, data.len() - data.len() % PAGE);
    }

    #[test]
    fn archives_are_told_from_indexes() {
        let samples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
        for (name, format) in [
            ("example.warc.gz", Some("WARC")),
            ("example.arc.gz", Some("ARC")),
            ("example.arc", Some("ARC")),
            ("expected.ukvs", None),
        ] {
            let bytes = std::fs::read(samples.join(name)).unwrap();
            let first = &bytes[..bytes.len().min(4096)];
            assert_eq!(archive_format(first), format, "{name}");
        }
        assert_eq!(archive_format(b""), None);
        assert_eq!(archive_format(b"com,example)/ 20140101000000 {}\n"), None);
        let err = refuse_archive(&samples.join("example.warc.gz")).unwrap_err();
        let err = err.to_string();
        assert!(
            err.contains("example.warc.gz holds WARC records, not index lines"),
            "{err}"
        );
        assert!(refuse_archive(&samples.join("expected.ukvs")).is_ok());
    }

    #[test]
    fn empty_files_are_not_mapped() {
        let file = tempfile::tempfile().unwrap();
        assert!(map_file(&file, memmap2::Advice::Normal).unwrap().is_none());
    }
}

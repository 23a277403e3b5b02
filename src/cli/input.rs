//! Input files mapped into memory.

use std::fs::File;
use std::io;

/// Maps a non-empty regular file read-only; `None` for anything else
/// (pipes, terminals, empty files), which callers read instead.
///
/// The map is only read. If another process truncates the file while it is
/// mapped, reading past the new end raises SIGBUS and ends the run (its
/// output, written atomically, is then not committed); if it rewrites
/// bytes, the result may mix old and new contents. Files this tool writes
/// are replaced by rename, never changed in place, so neither happens to
/// them. Commands that map their inputs take `--no-mmap` to read files
/// that may be changed instead.
pub(super) fn map_file(file: &File) -> io::Result<Option<memmap2::Mmap>> {
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() == 0 {
        return Ok(None);
    }
    // SAFETY: see above; the map is never written, and a concurrent change
    // of the file is the documented exception.
    let map = unsafe { memmap2::Mmap::map(file) }?;
    // Read ahead in large steps: the inputs are read once, front to back.
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    Ok(Some(map))
}

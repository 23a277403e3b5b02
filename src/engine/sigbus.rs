//! Input files that shrink while they are mapped: reported by name.
//!
//! Reading a page of a mapped file past its end, after another process cut
//! the file short, raises SIGBUS. Its default action kills the process
//! with no word of which file it was. [`watch`] notes each map's address
//! range and file name; a SIGBUS whose faulting address lies in a noted
//! map prints `ukvs: FILE: the file was cut short while it was read ...`
//! and ends the process with exit code 2. An output given with `-o` is
//! then not committed (it is written atomically), and the temporary file
//! the run leaves is removed by the next run that writes beside it
//! ([`crate::engine::output`]). A SIGBUS at any other address keeps the
//! default action.
//!
//! The handler may only do what is async-signal-safe: it reads the table
//! below through atomics (no lock, no allocation), writes with `write(2)`
//! and leaves with `_exit(2)`. The table is a ring of the latest
//! 256 maps (`SLOTS`), searched newest first, so a range that a later map
//! reuses names the later file; live maps are always among the latest
//! (a run holds a few at a time).

// Installing a signal handler and what it does are unsafe calls; each
// says why it holds.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Once;

/// Maps remembered.
const SLOTS: usize = 256;
/// Bytes of a file name kept (longer names are cut, with `...`).
const NAME: usize = 480;

struct Slot {
    start: AtomicUsize,
    /// 0 while the slot is being written.
    len: AtomicUsize,
    name_len: AtomicUsize,
    name: [AtomicU8; NAME],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            name_len: AtomicUsize::new(0),
            name: [const { AtomicU8::new(0) }; NAME],
        }
    }
}

static RING: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
/// Maps noted so far; the newest is in slot `(NEXT - 1) % SLOTS`.
static NEXT: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();

/// Notes that `map` holds the bytes of `file` (named by what the open file
/// is: the name it was opened by, unless it was renamed since), so that
/// a SIGBUS in it is reported by that name.
pub fn watch(map: &[u8], file: &std::fs::File) {
    if map.is_empty() {
        return;
    }
    INSTALL.call_once(install);
    let name = file_name(file);
    let slot = &RING[NEXT.fetch_add(1, Ordering::AcqRel) % SLOTS];
    slot.len.store(0, Ordering::Release);
    let (shown, cut) = if name.len() > NAME {
        (&name[..NAME - 3], true)
    } else {
        (&name[..], false)
    };
    for (dst, &b) in slot.name.iter().zip(shown) {
        dst.store(b, Ordering::Relaxed);
    }
    let mut n = shown.len();
    if cut {
        for dst in &slot.name[n..n + 3] {
            dst.store(b'.', Ordering::Relaxed);
        }
        n += 3;
    }
    slot.name_len.store(n, Ordering::Relaxed);
    slot.start.store(map.as_ptr() as usize, Ordering::Relaxed);
    slot.len.store(map.len(), Ordering::Release);
}

/// The path an open file was opened by (Linux: `/proc/self/fd/N`).
fn file_name(file: &std::fs::File) -> Vec<u8> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::io::AsRawFd;
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        if let Ok(p) = std::fs::read_link(link) {
            return p.as_os_str().as_bytes().to_vec();
        }
    }
    let _ = file;
    b"an input file".to_vec()
}

#[cfg(unix)]
fn install() {
    // SAFETY: a plain sigaction with a handler that is async-signal-safe
    // (see the module's documentation); the previous action is the
    // default one, which the handler restores for faults it does not own.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = handler as *const () as usize;
        act.sa_flags = libc::SA_SIGINFO | libc::SA_NODEFER | libc::SA_RESETHAND;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
    }
}

#[cfg(not(unix))]
fn install() {}

#[cfg(unix)]
extern "C" fn handler(_sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: `info` is the kernel's siginfo for this SIGBUS (SA_SIGINFO).
    let addr = unsafe { (*info).si_addr() } as usize;
    let newest = NEXT.load(Ordering::Acquire);
    for k in 0..SLOTS.min(newest) {
        let slot = &RING[(newest - 1 - k) % SLOTS];
        let len = slot.len.load(Ordering::Acquire);
        let start = slot.start.load(Ordering::Relaxed);
        if len == 0 || addr < start || addr - start >= len {
            continue;
        }
        let mut name = [0u8; NAME];
        let n = slot.name_len.load(Ordering::Relaxed).min(NAME);
        for (dst, src) in name.iter_mut().zip(&slot.name[..n]) {
            *dst = src.load(Ordering::Relaxed);
        }
        let say = |b: &[u8]| {
            // SAFETY: write(2) is async-signal-safe; a short or failed
            // write only shortens the message.
            unsafe { libc::write(2, b.as_ptr().cast(), b.len()) };
        };
        say(b"ukvs: ");
        say(&name[..n]);
        say(
            b": the file was cut short while it was read (it is mapped into memory); \
              nothing was committed; --no-mmap reads files that may change\n",
        );
        // SAFETY: _exit(2) is async-signal-safe and ends the process at once.
        unsafe { libc::_exit(2) };
    }
    // Not a map noted here: SA_RESETHAND restored the default action, and
    // returning runs the faulting access again under it.
}

//! The `ukvs` command line: see `ukvs --help`.

/// mimalloc, not glibc's malloc: its heaps are per thread, where glibc's
/// arenas are shared behind locks that the server's lookup threads were
/// found sleeping on, most of all when freeing what the store's block
/// cache evicts (ARCHITECTURE.md, "Live collections").
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;
mod serve;

/// mimalloc's `mi_option_purge_delay` as its v3 numbers its options (the
/// binding names only v2's); a test below checks it holds the option's
/// default (1,000 ms in the v3 built).
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> std::process::ExitCode {
    // Freed pages go back to the system at once, not a second later:
    // with the delay, a server taking a 128 MB POST grew twice as much as
    // with glibc's malloc (102-106 MB against 48-63), without it as much
    // (55-66 MB), with ingest still 1.07-1.09x glibc's rate.
    // SAFETY: sets a number in mimalloc's option table; no allocation is
    // live that the option changes.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) };
    cli::main()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_purge_delay_option_is_mimallocs() {
        // SAFETY: reads mimalloc's option table.
        let delay = unsafe { libmimalloc_sys::mi_option_get(super::PURGE_DELAY) };
        assert_eq!(delay, 1000, "not mimalloc's purge delay (default 1,000 ms)");
    }
}

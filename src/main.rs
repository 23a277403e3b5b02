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

/// The purge delay this binary runs with unless `MIMALLOC_PURGE_DELAY`
/// gives one (mimalloc reads its options from the environment): a
/// minute, in ms.
const PURGE_MS: std::ffi::c_long = 60_000;

fn main() -> std::process::ExitCode {
    // A live collection's writes fill memtables (256 MiB by default) that
    // the store frees seconds later, once it has written them out. Given
    // back to the system at once (a delay of 0), their pages were faulted
    // in and zeroed again for the next memtables; kept a minute, they
    // are taken again while writes go on, and given back once they stop.
    // Ten million lines (`scripts/bench_live.sh`, ARCHITECTURE.md, "Live
    // collections") then took 0.81-0.85x the server's CPU a line, for
    // 1.2-1.3x its peak memory (1.08 GB against 0.90); a second's delay
    // (mimalloc's default) kept too few of them. `MIMALLOC_PURGE_DELAY=0`
    // gives them back at once.
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a number in mimalloc's option table; no
        // allocation is live that the option changes.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_MS) };
    }
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

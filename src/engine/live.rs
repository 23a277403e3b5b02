//! The delta of a live collection: captures added and deleted while the
//! server runs, kept in an embedded crash-safe store beside the immutable
//! bases (sorted files, ZipNum clusters) that the rest of the engine
//! reads in place.
//!
//! The store is [fjall](https://docs.rs/fjall) 2.11 (an LSM tree: a
//! journal, sorted tables compressed with lz4); this
//! module is the only one that names it. One collection's delta is one
//! directory:
//!
//! ```text
//! DIR/NAME/LOCK            held (flock) by the one process that opens it
//! DIR/NAME/store/          the fjall keyspace:
//!     meta                   layout, current, floor, bases, dig_bases,
//!                            intent/*
//!     gen_F .. gen_C         generations F (floor) to C (current):
//!                            capture id -> entry
//!     dig_F .. dig_C         each one's digests: `ALGO:` + the digest's
//!                            bytes + capture id -> empty
//!     dig_N (N < F),         the same keys of the captures folds wrote
//!     dig_base_N             into the bases: folded generations' digest
//!                            partitions, kept as they are, or merged
//!                            into one by the fold up to generation N
//!                            (`dig_base` in stores of layout 2)
//! DIR/NAME/base-N.EXT      a base a fold wrote (a cluster: base-N/)
//! DIR/NAME/journal-*.ops   a large POST being rolled forward
//! ```
//!
//! A capture id is `key datetime\0filename\0offset` ([`capture_id`]):
//! OutbackCDX's identity of a capture, laid out so that ids sort as their
//! lines do (up to the order of lines sharing key and datetime, which a
//! reader restores) and a query's [`KeyRange`] finds them. An entry is
//! the capture's line (less its `key datetime `, which the id holds), or
//! empty for a deleted capture. A capture is stored once; posting it
//! again overwrites its entry, with no read.
//!
//! Every entry of a generation hides the bases' line of its capture and
//! the older generations' entry of it (a tombstone, or a replacement). A
//! read merges every live generation, newest winning for an id. A query
//! reads its range once: [`Delta::hider`] holds the range's entries,
//! which are the tombstones for the bases' lines and the delta's lines
//! ([`Hider::lines`]) at once.
//!
//! A put also writes, in the same batch, a key per digest of its line
//! to the generation's digest partition ([`Delta::digest_lines`]).
//! Deletes and replacements write none there: a digest key stands while
//! the capture's newest entry is a put of a line with that digest, which
//! a lookup checks (a few point reads: a digest has few captures). A
//! fold keeps its frozen generations' digest partitions as digest
//! partitions of the bases (recorded in `dig_bases` with the new base),
//! and past [`DIG_BASES`] of them merges them all into one in one sorted
//! pass ([`Frozen::index_digests`], fjall's bulk ingest: no journal, no
//! merges) beside the writing of the new base. Their keys stand while
//! the bases hold a line of the capture with that digest
//! (`engine::digests::captures_with` checks).
//!
//! Writes go to the current generation. A fold ([`Delta::freeze`],
//! [`Frozen::commit`], driven by `engine::fold`) starts a new one in
//! one small durable write, streams the bases and the now frozen
//! generations into a new base, and in one more durable write records
//! that base (superseding the bases it was given) and raises the floor
//! past the frozen generations, whose partitions are dropped once no
//! reader holds a view that reads them.
//!
//! A batch ([`Delta::apply`]) is one durable fjall batch, atomic, when
//! its ops fit in [`BATCH_BYTES`]. Past that it rolls forward: the ops
//! go to a named journal file (fsync'd), an intent to apply it is
//! recorded durably, it is applied in chunks, and the last chunk clears
//! the intent. Opening a store replays every pending intent whole before
//! anything reads it. So after a crash a batch is all there or absent,
//! and one `apply` answered is all there; a reader may see a large batch
//! in part before `apply` returns. Batches committed together share
//! one fsync of the journal (group commit: `Store::commit_durable`), each
//! `apply` returning once a sync begun after its commit is done.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use fjall::{AbstractTree, PartitionCreateOptions, PartitionHandle, PersistMode};

use crate::digest::Digest;
use crate::sorted::KeyRange;
pub use crate::ukvs::post::capture_id;

/// The store's directory in a collection's delta directory.
pub const STORE_DIR: &str = "store";

/// Whether `dir` holds a delta (of this layout or an older one, which
/// [`Delta::open`] refuses with a clear error).
pub fn is_delta_dir(dir: &Path) -> bool {
    dir.join(STORE_DIR).is_dir() || dir.join(OLD_STORE_FILE).is_file()
}

/// The file a delta of the first layout (redb) was kept in; a directory
/// holding one is refused.
const OLD_STORE_FILE: &str = "delta.redb";

/// The lock file of a delta directory.
const LOCK_FILE: &str = "LOCK";

/// The layout of the stores this module makes, kept in `meta`: 5
/// spells its digest keys [`DigestKeys::Tagged`] and keeps its entries
/// [`EntryForm::Short`].
const LAYOUT: &[u8] = b"ukvs-live 5";

/// The layout before: entries [`EntryForm::Headless`]. Read and written as
/// it is, so that the builds before read what this one writes there.
const LAYOUT_4: &[u8] = b"ukvs-live 4";

/// The layout before that: digest keys [`DigestKeys::Named`];
/// `dig_bases` records the partitions of the bases' digests. Read and
/// written as it is.
const LAYOUT_3: &[u8] = b"ukvs-live 3";

/// The layout before those: the bases' digests in the one partition
/// `dig_base`, which folds wrote into. Read as it is; its first fold
/// that indexes digests records the partitions and layout 3.
const LAYOUT_2: &[u8] = b"ukvs-live 2";

/// How long a partition to drop must have been idle first
/// (`Store::drop_unread`).
const IDLE_BEFORE_DROP: std::time::Duration = std::time::Duration::from_secs(1);

/// Digest partitions of the bases past which a fold merges them into
/// one: a lookup by digest reads each. A fold that keeps its frozen
/// generations' partitions writes no digest key; one that merges writes
/// every key of the bases once, beside the base it writes
/// (`scripts/bench_fold.sh`, ten million lines folded into ten million:
/// the figures are in ARCHITECTURE.md).
const DIG_BASES: usize = 8;

/// Bytes of ops a batch holds in memory before it rolls forward through
/// a journal file (a POST of 5,000 CDX lines is about 1 MiB).
pub const BATCH_BYTES: usize = 8 << 20;

/// Bytes of ops in each chunk of a batch that rolls forward. fjall
/// halts writes once its memtables pass the memory they are given, but
/// checks only after a batch is in: a chunk is all it can go past by,
/// and held twice over while it is built (the batch, then the memtable
/// entries it becomes).
const CHUNK_BYTES: usize = 1 << 20;

/// Whether a delta indexes its captures by payload digest, so that
/// `/NAME/digest` and `ukvs lookup --digest` find the captures it holds
/// (a crawler's deduplication). Chosen when the store is made and kept
/// for its life (the meta key `digests`): the index is a second entry
/// per put, which costs about as much as the capture's own, so a
/// collection that is only replayed (OutbackCDX keeps no such index)
/// takes lines 1.4-1.6x as fast without it, with lookups running, and
/// about 1.7x with POSTs alone (`scripts/bench_live.sh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Digests {
    On,
    Off,
}

/// Memory the store may use for its block cache: an exact lookup reads a
/// block of every sorted run of the delta, so the cache decides the read
/// rate once the delta outgrows it (`scripts/bench_live.sh`: 1,000,000
/// lines, 113 MB on disk, 3,700 lookups/s with 16 MiB, 10,500 with 256).
const CACHE_BYTES: u64 = 256 << 20;

/// Memory a store's memtables may hold by default
/// ([`Settings::write_memory`]).
pub const WRITE_MEMORY: u64 = 256 << 20;

/// Journal on disk before memtables are written out to free it, at
/// least: twice the memtables' memory when that is more, so that the
/// journal does not write them out before they are full.
const JOURNAL_BYTES: u64 = 128 << 20;

/// Memtables fjall writes out each time its flush worker wakes (its
/// "flush workers", which are a count of memtables a wake takes from the
/// queue, each written out on a thread of its own, not threads kept).
/// fjall wakes the worker once per memtable rotation, and at open once
/// per partition with memtables it rebuilt from its journals, however
/// many that partition has: at
/// its default (one a core, 2 here) a store reopened after ingest of ten
/// million lines kept two of a digest partition's rebuilt memtables
/// queued for good behind the newer ones, so that the journal they hold
/// was never freed, and once writes filled it (`ukvs fold`'s copy of
/// the digest keys, `scripts/bench_fold.sh`) every write halted.
const FLUSH_TASKS: usize = 16;

/// Whether a store merges its tables in the background while it is
/// open ([`Settings::upkeep`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upkeep {
    /// fjall's compactions run, one thread a core: a store that takes
    /// writes for its life (a server's) needs them to keep lookups fast
    /// and its disk bounded.
    Compact,
    /// None run: for a process that opens a store for one job and ends
    /// (`ukvs fold`, and `lookup`, `cat`, `stats` and `mementomap` with
    /// `--data`). A store a server stopped has the merges that fell
    /// behind its ingest still to do; run beside an offline fold, which
    /// drops the generations they merge, they took 29% of its CPU (ten
    /// million lines folded into ten million, `scripts/bench_fold.sh`).
    /// The next server to open the store runs them. Its meta, which a
    /// fold writes, is merged at open once it holds many tables, and a
    /// store with a large batch to replay at open compacts as ever.
    None,
}

/// How a store is opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Whether a store made here indexes digests (one that exists keeps
    /// what it was made with).
    pub digests: Digests,
    /// Memory the store's memtables may hold before they are written
    /// out: past it, fjall stalls writes until a flush frees some. A
    /// generation's memtable and its digests' are written out at a
    /// quarter of it each, so that it holds both and the two being
    /// written out; generations made before keep the size they were
    /// made with. Larger memtables mean fewer, larger tables: every
    /// table fjall writes out or merges is recorded by rewriting and
    /// fsyncing the partition's manifest while lookups of the partition
    /// wait (fjall 2.11 holds the lock that reads take through it).
    /// With 64 MiB memtables (`scripts/bench_live.sh`, 10,000,000
    /// lines, lookups paced at 1,000/s, the same input, a quiet machine)
    /// lookups kept a p99 of 13.0 and 20.2 ms during ingest against 28.6
    /// and 30.2 with 8 MiB, and lines went in at 1.07x the rate (112,300
    /// and 108,000 against 102,100 and 102,900 lines/s); with 128 MiB,
    /// 13.0 ms and 99,300 lines/s. With every fsync a no-op
    /// (`eatmydata`) the p99 was 8.2 ms: the rest is the disk's. Over a
    /// million lines, 4.6 ms (2 runs) against 5.0-11.8 (3), for 0.97x
    /// the rate.
    pub write_memory: u64,
    /// Whether fjall merges the store's tables in the background.
    pub upkeep: Upkeep,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            digests: Digests::On,
            write_memory: WRITE_MEMORY,
            upkeep: Upkeep::Compact,
        }
    }
}

impl Settings {
    /// The settings of a process that opens a store for one job and
    /// ends: the defaults, with no compactions ([`Upkeep::None`]).
    pub fn one_job() -> Settings {
        Settings {
            upkeep: Upkeep::None,
            ..Settings::default()
        }
    }

    /// A partition's memtable size: a quarter of the memory, within
    /// fjall's bounds.
    fn memtable(&self) -> u32 {
        (self.write_memory / 4).clamp(1 << 20, u32::MAX as u64) as u32
    }
}

/// Tables of the store's meta past which a store opened without
/// compactions merges them at open (fjall slows writes from 20 tables in
/// its first level and halts them from 32).
const META_TABLES: usize = 8;

/// Whether `dir` holds the journal of a batch that may be pending.
fn has_journals(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.flatten().any(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("journal-") && name.ends_with(".ops")
        })
    })
}

/// How much lower (in nice steps) the threads that write a delta run
/// than those that answer lookups: the store's flushes and compactions
/// and a server's POSTs, so that a lookup during ingest waits less for
/// a core. Not lower: nice 10 (a tenth of a core's share against
/// nice 0) starved the writes behind a closed loop of lookups and
/// every other process (`scripts/bench_live.sh`, load 7: 25,000
/// lines/s, lookup p99 35 ms; nice 4: 44,000 and 52 ms; nice 0: 50,000
/// and 77 ms). Nice 7 took about 1.5 ms off the p99 during ingest of
/// a million lines, but over ten million (the same input) it cut the
/// ingest rate to 0.80x (31,500 against 39,200 lines/s) for a p99 of
/// 28.0 against 28.8 ms: the merges a large delta needs fell behind.
const WRITE_NICE: i32 = 4;

/// Lowers the calling thread's CPU priority by [`WRITE_NICE`] (on Linux
/// a nice value is a thread's own; threads it starts inherit it). Where
/// it cannot be lowered, nothing happens: only the lookups' latency
/// under load depends on it.
pub fn write_priority() {
    let tid = rustix::thread::gettid();
    if let Ok(now) = rustix::process::getpriority_process(Some(tid)) {
        let _ = rustix::process::setpriority_process(Some(tid), (now + WRITE_NICE).min(19));
    }
}

/// A delta that cannot be opened, read or written: the store's
/// directory, what failed and the store's message (a full disk, a
/// directory another process holds, a damaged store to restore from a
/// copy).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
#[error("{}: {what}: {message}", path.display())]
pub struct Error {
    pub path: PathBuf,
    pub what: &'static str,
    pub message: String,
}

/// One change of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Adds `line` as the capture `id`, replacing the line that held it
    /// and hiding the bases' lines of it.
    Put { id: Vec<u8>, line: Vec<u8> },
    /// Removes the capture `id` from the delta and hides it in the bases.
    Delete { id: Vec<u8> },
}

/// What a fold recorded: the bases it wrote, and the paths they
/// supersede (see [`Delta::bases`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Folded {
    /// Paths given as bases that the folded bases replace.
    pub given: Vec<PathBuf>,
    /// The bases folds wrote, in `DIR/NAME/`.
    pub bases: Vec<PathBuf>,
}

/// One collection's delta, as a reader sees it: the store and the oldest
/// generation this view reads (the floor when it was made). A view made
/// before a fold keeps reading the folded generations (beside the bases
/// it was opened with) until it is dropped.
pub struct Delta {
    store: Arc<Store>,
    floor: u64,
}

struct Store {
    dir: PathBuf,
    keyspace: fjall::Keyspace,
    meta: PartitionHandle,
    /// Whether puts write their digest keys ([`Digests`], fixed when
    /// the store was made).
    digests: Digests,
    /// How they spell them (fixed when the store was made).
    digest_keys: DigestKeys,
    /// How puts keep their lines (fixed when the store was made).
    entries: EntryForm,
    /// The memtable size of the generations it makes ([`Settings`]).
    memtable: u32,
    state: RwLock<State>,
    /// Writes hold it shared, a fold's switch to a new generation
    /// exclusively: a generation is frozen once no write holds it.
    switch: RwLock<()>,
    /// One fold at a time.
    folding: Mutex<()>,
    /// Views by floor: how many are open.
    pins: Mutex<BTreeMap<u64, usize>>,
    /// Held for the store's life: the directory's lock.
    _lock: std::fs::File,
    journals: std::sync::atomic::AtomicU64,
    /// Whether generations no view reads are kept for a later drop
    /// (see `Store::drop_unread`).
    drops_kept: std::sync::atomic::AtomicBool,
    /// Held while a batch is sorted and put into the memtables (not
    /// while it waits for its sync, which batches still share): one
    /// batch at a time takes a core from the lookups rather than one per
    /// POST in flight. With 4 posters (`scripts/bench_live.sh`, 1M
    /// lines, the same input, alternated with the build before, load
    /// 2-3): lookups paced at 1,000/s (`LOOKUP_RATE=1000`, 3 runs each)
    /// had a p99 during ingest of 8.3-9.5 ms against 8.9-15.9 (0.78x on
    /// average), for 0.88x the ingest rate (122,000-126,000 lines/s
    /// against 135,000-151,000); in the closed loop 9.0 ms against 11.6,
    /// for 0.96x (90,800 against 94,900). Ten million lines were not
    /// measured with it.
    applying: Mutex<()>,
    /// Batches committed and made durable, for group commit.
    syncs: Mutex<Syncs>,
    synced: std::sync::Condvar,
    /// A reference to every table of the store's partitions, as last
    /// seen ([`Store::measure`]), so that the tables a compaction
    /// retires are deleted by [`reap`], not by fjall. lsm-tree 2.10
    /// deletes them (closing the file, and so dropping its pages from
    /// the page cache: tens of ms for a table of 64 MiB) while it holds
    /// the partition's lock that every read takes to open a range: in
    /// the live bench at 10M lines (`scripts/bench_live.sh`) every
    /// lookup stalled so for 90-280 ms every few seconds of ingest.
    kept: Mutex<Vec<lsm_tree::segment::Segment>>,
    /// The bytes of the tables of the generations from the floor, as
    /// last measured ([`Store::measure`]), which [`Delta::is_cached`]
    /// answers from: asked on a connection's thread for every lookup,
    /// it takes no lock of the store (measuring takes the partitions'
    /// locks, and a connection's thread held there would hold every
    /// connection it serves).
    table_bytes: AtomicU64,
}

/// How often a store whose tables are merged in the background is
/// measured again ([`Store::measure`]) besides after each write:
/// flushes and compactions change its tables between writes.
const MEASURE_MS: u64 = 1_000;

/// Drops `tables`, no longer in the store's partitions (retired by a
/// compaction, or of a partition dropped after a fold), on a thread of
/// its own at the writes' priority (see `Store::kept`); inline if that
/// thread cannot start. Each table's file is held open while it is
/// dropped: lsm-tree then deletes it and closes its own descriptors
/// while it holds the lock of its table of descriptors, which every
/// read of a block takes, and the last close of a deleted file is what
/// frees it (its pages in the page cache and its blocks on disk, tens
/// of ms for a table of 64 MiB). That close is then this thread's, with
/// no lock held.
fn reap(tables: Vec<lsm_tree::segment::Segment>) {
    type Reaper = std::sync::mpsc::Sender<Vec<lsm_tree::segment::Segment>>;
    static REAPER: std::sync::OnceLock<Option<Reaper>> = std::sync::OnceLock::new();
    let reaper = REAPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Vec<lsm_tree::segment::Segment>>();
        std::thread::Builder::new()
            .name("ukvs-reap".into())
            .spawn(move || {
                write_priority();
                for tables in rx {
                    for table in tables {
                        let held = std::fs::File::open(&table.path);
                        drop(table);
                        drop(held);
                    }
                }
            })
            .ok()
            .map(|_| tx)
    });
    let tables = match reaper {
        Some(tx) => match tx.send(tables) {
            Ok(()) => return,
            Err(e) => e.0,
        },
        None => tables,
    };
    drop(tables);
}

/// Group commit: batches are written to the journal one after another,
/// and one fsync of it makes every batch written before it durable. A
/// writer whose batch is written waits for a sync that began after it
/// (doing it itself when none is under way), so that writers arriving
/// together share one fsync.
#[derive(Default)]
struct Syncs {
    /// Batches written to the journal.
    written: u64,
    /// Batches known durable: the first `synced` written.
    synced: u64,
    /// Whether a writer is syncing the journal now.
    syncing: bool,
    /// Syncs made (at most one per batch; fewer when writers share).
    fsyncs: u64,
}

struct State {
    /// Every generation not yet dropped (some may be below the floor,
    /// kept for views made before a fold).
    gens: BTreeMap<u64, PartitionHandle>,
    /// Each generation's digest partition (`dig_N`): `ALGO:` and the
    /// digest's bytes, then the capture id, of every capture put there.
    digs: BTreeMap<u64, PartitionHandle>,
    current: u64,
    floor: u64,
    folded: Folded,
    /// Digest keys of captures folded into the bases: folded
    /// generations' digest partitions, or one a fold merged them into.
    dig_bases: Vec<PartitionHandle>,
    /// Base files superseded by a fold, removed with the generations
    /// below the floor given.
    retired: Vec<(u64, PathBuf)>,
    /// Partitions of the bases' digests superseded by a fold, dropped
    /// once idle (`Store::drop_unread`).
    retired_digs: Vec<PartitionHandle>,
    /// When each partition to drop was first seen idle, by name.
    idle_since: HashMap<String, std::time::Instant>,
}

/// The stores open in this process, by directory: a store opens once.
fn registry() -> &'static Mutex<HashMap<PathBuf, Weak<Store>>> {
    static OPEN: std::sync::OnceLock<Mutex<HashMap<PathBuf, Weak<Store>>>> =
        std::sync::OnceLock::new();
    OPEN.get_or_init(Default::default)
}

fn gen_name(n: u64) -> String {
    format!("gen_{n}")
}

fn dig_name(n: u64) -> String {
    format!("dig_{n}")
}

/// The partition a fold up to generation `n` merged the bases' digest
/// partitions into.
fn dig_base_name(n: u64) -> String {
    format!("dig_base_{n}")
}

/// The partition of the bases' digests of layout 2.
const DIG_BASE_2: &str = "dig_base";

/// A generation's tables: lz4, compacted leveled. A lookup opens a
/// block of every table whose keys may hold its range: in a level past
/// the first the tables hold disjoint ranges, so a lookup opens one
/// table per level plus the first level's few (4 to 9 tables for a
/// million lines), where size-tiered compaction kept every run of a
/// tier overlapping (21 tables for the same lines, and 10,000 short
/// range scans 10 times slower in `scripts/bench_store.sh`), for about
/// the same ingest rate there. The first level merges into the next at
/// fjall's 4 tables: at 16 a million-line ingest took a fifth less CPU
/// a line, but only because most of its merges were still to come; ten
/// million lines then went in at 0.59x the rate, in 1.5x the disk
/// (`scripts/bench_live.sh`, the same input for both builds).
/// Blocks stay at fjall's 4 KiB: with 16 KiB (and digest partitions
/// without bloom filters) ten million lines went in at 0.95x the rate
/// (14.6 against 13.4 us of CPU a line) and idle lookups after them ran
/// at 6,200/s against 10,200-14,200, for 1.05x the text on disk against
/// 1.15x (`scripts/bench_live.sh`, one run each, the same input).
/// The compaction strategy is recorded with
/// a partition when it is made: generations made before keep theirs
/// until a fold retires them, and read the same.
fn gen_options(memtable: u32) -> PartitionCreateOptions {
    PartitionCreateOptions::default()
        .compression(fjall::CompressionType::Lz4)
        .max_memtable_size(memtable)
        .compaction_strategy(fjall::compaction::Strategy::Leveled(
            fjall::compaction::Leveled::default(),
        ))
}

/// A digest partition's tables: lz4, compacted size-tiered. Its keys
/// come in digest order, which is random, so leveled compaction would
/// rewrite most of it at every level for the rare digest lookups.
/// Those read by prefix, which bloom filters (of whole keys) cannot
/// answer, so its tables have none; and in blocks of 16 KiB, not 4, its
/// keys, unrelated to their neighbours, find more to share. Ten million
/// CDX11 lines (`scripts/bench_live.sh`, the same input, two runs each
/// alternated) went in at 11.3 us of server CPU a line against
/// 11.8-12.1, in 0.86x their text on disk against 0.91x; lookups by
/// digest of a million took as long (130-139 us over the loopback).
fn dig_options(memtable: u32) -> PartitionCreateOptions {
    PartitionCreateOptions::default()
        .compression(fjall::CompressionType::Lz4)
        .block_size(16 << 10)
        .bloom_filter_bits(None)
        .max_memtable_size(memtable)
        .compaction_strategy(fjall::compaction::Strategy::SizeTiered(
            fjall::compaction::SizeTiered::default(),
        ))
}

fn get_u64(v: Option<fjall::Slice>) -> u64 {
    v.and_then(|v| <[u8; 8]>::try_from(&v[..]).ok())
        .map_or(0, u64::from_le_bytes)
}

/// `p` absolute and its links resolved, or as it is when it cannot be.
fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

fn encode_paths(paths: &[PathBuf]) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut out = Vec::new();
    for p in paths {
        out.extend_from_slice(p.as_os_str().as_bytes());
        out.push(0);
    }
    out
}

/// Partition names, as `dig_bases` keeps them (NUL-separated).
fn decode_names(v: &[u8]) -> Vec<String> {
    v.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect()
}

fn decode_paths(v: &[u8]) -> Vec<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    v.split(|&b| b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| PathBuf::from(std::ffi::OsStr::from_bytes(p)))
        .collect()
}

/// The entry of a put of `line` ([`EntryForm`]); a delete's is empty.
fn entry_of(id: &[u8], line: &[u8], form: EntryForm) -> Vec<u8> {
    let head = id_head(id);
    let Some(rest) = line.strip_prefix(head).and_then(|r| r.strip_prefix(b" ")) else {
        return [&[0u8][..], line].concat();
    };
    if form == EntryForm::Short {
        let (filename, offset) = id_tail(id);
        if let Some(kept) = rest
            .strip_suffix(filename)
            .and_then(|r| r.strip_suffix(b" "))
            .and_then(|r| r.strip_suffix(offset))
            .and_then(|r| r.strip_suffix(b" "))
        {
            let mut entry = Vec::with_capacity(1 + kept.len());
            match packed_digest(kept) {
                Some((at, raw)) => {
                    entry.push(3);
                    entry.extend_from_slice(&kept[..at]);
                    entry.extend_from_slice(&raw);
                    entry.extend_from_slice(&kept[at + SPELLED..]);
                }
                None => {
                    entry.push(2);
                    entry.extend_from_slice(kept);
                }
            }
            return entry;
        }
    }
    let mut entry = Vec::with_capacity(1 + rest.len());
    entry.push(1);
    entry.extend_from_slice(rest);
    entry
}

/// A base32 SHA-1 digest's length, as CDX lines spell it (the room
/// [`Entry::line_parts`] spells a packed digest into).
pub const SPELLED: usize = 32;

/// Its length in bytes.
const PACKED: usize = 20;

/// Where the digest column of a CDX line less its `key datetime ` starts
/// (`url mime status digest ...`): after its third space.
fn digest_column(kept: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b' ', kept).nth(2).map(|at| at + 1)
}

/// Where `kept`'s digest column starts and its bytes, when it is a
/// base32 SHA-1 spelled as its bytes spell again: 32 characters of the
/// upper-case alphabet carry 160 bits and no more, so the strict decode
/// accepts only the one spelling of each digest.
fn packed_digest(kept: &[u8]) -> Option<(usize, [u8; PACKED])> {
    let at = digest_column(kept)?;
    let column = &kept[at..];
    let end = memchr::memchr(b' ', column).unwrap_or(column.len());
    if end != SPELLED {
        return None;
    }
    let mut raw = [0u8; PACKED];
    let decoded = data_encoding::BASE32_NOPAD.decode_mut(&column[..SPELLED], &mut raw);
    decoded.is_ok().then_some((at, raw))
}

/// The line of an entry in pieces, to write one after the other (a
/// packed digest spelled into `spelled`); `None` for a deleted capture.
/// An entry no build writes (a damaged store) gives its bytes as they
/// are.
fn line_parts<'a>(
    id: &'a [u8],
    entry: &'a [u8],
    spelled: &'a mut [u8; SPELLED],
) -> Option<[&'a [u8]; 9]> {
    let none: &[u8] = b"";
    Some(match entry.split_first()? {
        (1, rest) => [id_head(id), b" ", rest, none, none, none, none, none, none],
        (2, kept) => {
            let (filename, offset) = id_tail(id);
            [
                id_head(id),
                b" ",
                kept,
                b" ",
                offset,
                b" ",
                filename,
                none,
                none,
            ]
        }
        (3, packed) => {
            let (filename, offset) = id_tail(id);
            let Some((before, raw, after)) = digest_column(packed).and_then(|at| {
                let raw = packed.get(at..at + PACKED)?;
                Some((&packed[..at], raw, &packed[at + PACKED..]))
            }) else {
                return Some([entry, none, none, none, none, none, none, none, none]);
            };
            data_encoding::BASE32_NOPAD.encode_mut(raw, spelled);
            let spelled: &[u8] = spelled;
            let head = id_head(id);
            [
                head, b" ", before, spelled, after, b" ", offset, b" ", filename,
            ]
        }
        (_, line) => [line, none, none, none, none, none, none, none, none],
    })
}

/// The line of an entry (`None` for a deleted capture).
fn line_of(id: &[u8], entry: &[u8]) -> Option<Vec<u8>> {
    line_parts(id, entry, &mut [0; SPELLED]).map(|parts| parts.concat())
}

/// The part of an id that orders it as its line: `key datetime`.
fn id_head(id: &[u8]) -> &[u8] {
    &id[..memchr::memchr(0, id).unwrap_or(id.len())]
}

/// The filename and offset an id ends with ([`capture_id`]: both empty
/// for one that has none).
///
/// [`capture_id`]: crate::ukvs::post::capture_id
fn id_tail(id: &[u8]) -> (&[u8], &[u8]) {
    let Some(first) = memchr::memchr(0, id) else {
        return (b"", b"");
    };
    let tail = &id[first + 1..];
    match memchr::memchr(0, tail) {
        Some(second) => (&tail[..second], &tail[second + 1..]),
        None => (tail, b""),
    }
}

impl Store {
    /// The form of the digest keys its puts write, if they write any.
    fn dig_keys(&self) -> Option<DigestKeys> {
        (self.digests == Digests::On).then_some(self.digest_keys)
    }

    fn fail(&self, what: &'static str, e: impl std::fmt::Display) -> Error {
        Error {
            path: self.dir.clone(),
            what,
            message: e.to_string(),
        }
    }

    fn open(dir: &Path, settings: Settings) -> Result<Store, Error> {
        let digests = settings.digests;
        let memtable = settings.memtable();
        std::fs::create_dir_all(dir).map_err(|e| Error {
            path: dir.to_path_buf(),
            what: "cannot create the directory",
            message: e.to_string(),
        })?;
        // Absolute: folds record paths in it.
        let dir = &canonical(dir);
        let fail = |what, e: &dyn std::fmt::Display| Error {
            path: dir.to_path_buf(),
            what,
            message: e.to_string(),
        };
        if dir.join(OLD_STORE_FILE).exists() {
            return Err(fail(
                "holds a delta of an older layout",
                &format!(
                    "{OLD_STORE_FILE} (redb) is not read by this version; \
                     re-POST its lines to a new collection, or remove it"
                ),
            ));
        }
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(LOCK_FILE))
            .map_err(|e| fail("cannot open its lock file", &e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(
            |_| {
                fail(
                    "is held by another process",
                    &"a running `ukvs serve --data` (or fold) has it open; \
                      stop it, or fold through the server (POST /NAME/fold)",
                )
            },
        )?;
        sweep_unfinished_partitions(&dir.join(STORE_DIR));
        let mut config = fjall::Config::new(dir.join(STORE_DIR))
            .flush_workers(FLUSH_TASKS)
            .cache_size(CACHE_BYTES)
            .max_write_buffer_size(settings.write_memory)
            .max_journaling_size(JOURNAL_BYTES.max(2 * settings.write_memory));
        // A batch to replay (its journal file is there) fills memtables
        // that fjall halts writes on past 32 tables in a level, until
        // compactions merge them.
        let compact = settings.upkeep == Upkeep::Compact || has_journals(dir);
        if !compact {
            config = config.compaction_workers(0);
        }
        // Opened on a thread of the writes' priority: the store's
        // background threads (flushes, compactions), which it starts
        // here, take it, so that they yield to the lookups.
        let keyspace = std::thread::scope(|s| {
            s.spawn(|| {
                write_priority();
                config.open()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
        .map_err(|e| fail("cannot open the store", &e))?;
        let meta = keyspace
            .open_partition("meta", PartitionCreateOptions::default())
            .map_err(|e| fail("cannot open the store's meta", &e))?;
        if !compact && meta.segment_count() > META_TABLES {
            // Without compactions its tables would only grow, one a
            // process that writes it, to where fjall halts its writes.
            meta.major_compact()
                .map_err(|e| fail("cannot merge the store's meta", &e))?;
        }
        let read = |k: &str| {
            meta.get(k)
                .map_err(|e| fail("cannot read the store's meta", &e))
        };
        // Layouts 4 and 5 spell their digest keys with the digest first;
        // a store of layout 2 or 3 keeps the algorithm's name first.
        // Layout 5 keeps its entries short (`EntryForm::Short`).
        let (digest_keys, entries) = match read("layout")? {
            Some(l) if &l[..] == LAYOUT => (DigestKeys::Tagged, EntryForm::Short),
            Some(l) if &l[..] == LAYOUT_4 => (DigestKeys::Tagged, EntryForm::Headless),
            Some(l) if &l[..] == LAYOUT_3 || &l[..] == LAYOUT_2 => {
                (DigestKeys::Named, EntryForm::Headless)
            }
            Some(l) => {
                return Err(fail(
                    "holds a store of another layout",
                    &format!(
                        "{:?}, not {:?}",
                        String::from_utf8_lossy(&l),
                        String::from_utf8_lossy(LAYOUT)
                    ),
                ))
            }
            None => {
                let mut b = keyspace.batch().durability(Some(PersistMode::SyncAll));
                b.insert(&meta, "layout", LAYOUT);
                b.insert(&meta, "current", 0u64.to_le_bytes());
                b.insert(&meta, "floor", 0u64.to_le_bytes());
                if digests == Digests::Off {
                    b.insert(&meta, "digests", "off");
                }
                b.commit()
                    .map_err(|e| fail("cannot write the store's meta", &e))?;
                (DigestKeys::Tagged, EntryForm::Short)
            }
        };
        // Stores made before the choice existed index digests.
        let digests = match read("digests")? {
            Some(v) if &v[..] == b"off" => Digests::Off,
            _ => Digests::On,
        };
        let current = get_u64(read("current")?);
        let floor = get_u64(read("floor")?);
        let folded = Folded {
            given: read("given")?.map(|v| decode_paths(&v)).unwrap_or_default(),
            // Recorded by name: the directory may move.
            bases: read("bases")?
                .map(|v| decode_paths(&v))
                .unwrap_or_default()
                .iter()
                .map(|name| dir.join(name))
                .collect(),
        };
        let dig_base_names = match read("dig_bases")? {
            Some(v) => decode_names(&v),
            None => vec![DIG_BASE_2.to_string()],
        };
        let mut dig_bases = Vec::new();
        for name in &dig_base_names {
            dig_bases.push(
                keyspace
                    .open_partition(name, dig_options(memtable))
                    .map_err(|e| fail("cannot open the store's digests", &e))?,
            );
        }
        // Merged partitions of the bases' digests but those recorded are
        // what a fold left (one it superseded, or one it did not
        // record): dropped once idle (`Store::drop_unread`).
        let mut retired_digs = Vec::new();
        for name in keyspace.list_partitions() {
            if name.starts_with(DIG_BASE_2) && !dig_base_names.iter().any(|n| *n == *name) {
                retired_digs.push(
                    keyspace
                        .open_partition(&name, dig_options(memtable))
                        .map_err(|e| fail("cannot open the store's digests", &e))?,
                );
            }
        }
        // Generations outside floor..=current are what a fold left:
        // folded ones, dropped as those a fold leaves are, once idle
        // (`Store::drop_unread`): fjall may be writing one out as it
        // opens (what a partition holds in a sealed journal comes back
        // as a memtable queued to be written out, and any partition's
        // memtable rotation seals the journal all write to), and one
        // deleted under that flush would panic fjall's flush worker. A
        // new one a fold did not record was never written to: dropped.
        let mut gens = BTreeMap::new();
        let mut digs = BTreeMap::new();
        for name in keyspace.list_partitions() {
            let n = name
                .strip_prefix("gen_")
                .or_else(|| name.strip_prefix("dig_"))
                .and_then(|n| n.parse::<u64>().ok());
            let kept = dig_base_names.iter().any(|n| *n == *name);
            let Some(n) = n.filter(|&n| (n < floor || n > current) && !kept) else {
                continue;
            };
            let h = keyspace
                .open_partition(&name, dig_options(memtable))
                .map_err(|e| fail("cannot open a generation", &e))?;
            if n > current {
                keyspace
                    .delete_partition(h)
                    .map_err(|e| fail("cannot drop a generation", &e))?;
            } else if name.starts_with("gen_") {
                gens.insert(n, h);
            } else {
                digs.insert(n, h);
            }
        }
        for n in floor..=current {
            let h = keyspace
                .open_partition(&gen_name(n), gen_options(memtable))
                .map_err(|e| fail("cannot open a generation", &e))?;
            gens.insert(n, h);
            let d = keyspace
                .open_partition(&dig_name(n), dig_options(memtable))
                .map_err(|e| fail("cannot open a generation's digests", &e))?;
            digs.insert(n, d);
        }
        let store = Store {
            dir: dir.to_path_buf(),
            keyspace,
            meta,
            digests,
            digest_keys,
            entries,
            memtable,
            state: RwLock::new(State {
                gens,
                digs,
                current,
                floor,
                folded,
                dig_bases,
                retired: Vec::new(),
                retired_digs,
                idle_since: HashMap::new(),
            }),
            switch: RwLock::new(()),
            folding: Mutex::new(()),
            pins: Mutex::new(BTreeMap::new()),
            _lock: lock,
            journals: Default::default(),
            drops_kept: Default::default(),
            applying: Mutex::new(()),
            syncs: Default::default(),
            synced: Default::default(),
            kept: Mutex::new(Vec::new()),
            table_bytes: AtomicU64::new(u64::MAX),
        };
        store.replay_intents()?;
        store.clean_files()?;
        store.drop_unread();
        store.measure();
        Ok(store)
    }

    /// Removes what a fold or a large batch left behind: bases not
    /// recorded, journals without an intent, temporary files.
    fn clean_files(&self) -> Result<(), Error> {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        let entries = std::fs::read_dir(&self.dir).map_err(|e| self.fail("cannot list", e))?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            let stale = (name.starts_with("base-") && !st.folded.bases.contains(&path))
                || name.starts_with("journal-")
                || name.starts_with(".ukvs-tmp-");
            if stale {
                let _ = match e.file_type() {
                    Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
                    _ => std::fs::remove_file(&path),
                };
            }
        }
        Ok(())
    }

    fn pin(&self, floor: u64) {
        *self
            .pins
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(floor)
            .or_default() += 1;
    }

    /// A view is gone: generations (and superseded bases) below every
    /// open view's floor and the committed floor are dropped.
    fn unpin(&self, floor: u64) {
        {
            let mut pins = self.pins.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(n) = pins.get_mut(&floor) {
                *n -= 1;
                if *n == 0 {
                    pins.remove(&floor);
                }
            }
        }
        self.drop_unread();
    }

    /// Drops the generations (and superseded bases) below every open
    /// view's floor and the committed floor, each partition once it has
    /// been idle (its memtables empty, none being written out) for
    /// [`IDLE_BEFORE_DROP`]. fjall 2.11 deletes a partition's flush
    /// queue with it, and its flush worker, finding the queue gone when
    /// it is done, panics and poisons the keyspace: a partition with a
    /// memtable may have it written out at any moment (fjall's journal
    /// watch picks the partitions holding the oldest writes, as frozen
    /// generations are, and a delete takes milliseconds of fsyncs
    /// before it removes the queue), and one whose flush has just been
    /// recorded looks idle a moment before the worker lets go of the
    /// queue. An idle partition takes no write, so it stays idle. One
    /// with writes in its memtable has it written out first; this runs
    /// again on
    /// [`Delta::apply`] and on a server's measuring thread while a
    /// partition is kept, and on the next open.
    fn drop_unread(&self) {
        let lowest = {
            let pins = self.pins.lock().unwrap_or_else(|e| e.into_inner());
            pins.keys().next().copied()
        };
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        let below = lowest.map_or(st.floor, |l| l.min(st.floor));
        let now = std::time::Instant::now();
        let before = std::mem::take(&mut st.idle_since);
        let mut seen = HashMap::new();
        // Partitions with writes in their memtable, to write out (after
        // the lock), so that they become idle.
        let mut to_write = Vec::new();
        let mut droppable = |h: Option<&PartitionHandle>| {
            let Some(h) = h else { return true };
            if h.tree.sealed_memtable_count() > 0 {
                return false;
            }
            if h.tree.active_memtable_size() > 0 {
                to_write.push(h.clone());
                return false;
            }
            let since = *before.get(&*h.name).unwrap_or(&now);
            seen.insert(h.name.to_string(), since);
            now.duration_since(since) >= IDLE_BEFORE_DROP
        };
        let unread: std::collections::BTreeSet<u64> = st
            .gens
            .range(..below)
            .chain(st.digs.range(..below))
            .map(|(n, _)| *n)
            .collect();
        let mut dropped = Vec::new();
        for &n in &unread {
            // Both asked, so that both start their idle time.
            let gen = droppable(st.gens.get(&n));
            let dig = droppable(st.digs.get(&n));
            if gen && dig {
                dropped.push(n);
            }
        }
        let (flushed, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut st.retired_digs)
            .into_iter()
            .partition(|h| droppable(Some(h)));
        st.idle_since = seen;
        st.retired_digs = kept;
        self.drops_kept.store(
            dropped.len() < unread.len() || !st.retired_digs.is_empty(),
            std::sync::atomic::Ordering::Relaxed,
        );
        let released = !flushed.is_empty() || !dropped.is_empty();
        for h in flushed {
            if let Err(e) = self.keyspace.delete_partition(h) {
                crate::report!(
                    "ukvs: {}: cannot drop a superseded digest index: {e}",
                    self.dir.display()
                );
            }
        }
        for n in &dropped {
            let parts = [st.gens.remove(n), st.digs.remove(n)];
            for h in parts.into_iter().flatten() {
                // The partition's files go when its last handle does.
                if let Err(e) = self.keyspace.delete_partition(h) {
                    crate::report!(
                        "ukvs: {}: cannot drop a folded generation: {e}",
                        self.dir.display()
                    );
                }
            }
        }
        let (gone, kept): (Vec<_>, Vec<_>) = st.retired.drain(..).partition(|(n, _)| *n <= below);
        st.retired = kept;
        drop(st);
        for h in to_write {
            if let Err(e) = h.rotate_memtable() {
                crate::report!(
                    "ukvs: {}: cannot write out a generation to drop: {e}",
                    self.dir.display()
                );
            }
        }
        for (_, path) in gone {
            let _ = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
        }
        if released {
            // Lets go of the dropped partitions' tables.
            self.measure();
        }
    }

    /// Takes a reference to every table of the store's partitions
    /// (`kept`), giving those taken before to [`reap`], and measures the
    /// tables of the generations from the floor (`table_bytes`): after
    /// each write, at a fold, when generations are dropped, and every
    /// [`MEASURE_MS`] while the store is open with its compactions.
    fn measure(&self) {
        let (floor, parts) = {
            let st = self.state.read().unwrap_or_else(|e| e.into_inner());
            let gens = st.gens.iter().map(|(&n, h)| (Some(n), h.clone()));
            let digs = st.digs.values().chain(&st.dig_bases);
            let parts: Vec<_> = gens.chain(digs.map(|h| (None, h.clone()))).collect();
            (st.floor, parts)
        };
        let mut kept = Vec::new();
        let mut bytes = 0;
        for (gen, part) in &parts {
            let fjall::AnyTree::Standard(tree) = &part.tree else {
                continue;
            };
            let levels = tree.levels.read().unwrap_or_else(|e| e.into_inner());
            for table in levels.iter() {
                if gen.is_some_and(|n| n >= floor) {
                    bytes += table.metadata.file_size;
                }
                kept.push(table.clone());
            }
        }
        let ids: std::collections::HashSet<_> = kept.iter().map(|t| t.global_id()).collect();
        let before = std::mem::replace(
            &mut *self.kept.lock().unwrap_or_else(|e| e.into_inner()),
            kept,
        );
        // Those still there are dropped here (another reference is kept).
        let retired: Vec<_> = before
            .into_iter()
            .filter(|t| !ids.contains(&t.global_id()))
            .collect();
        if !retired.is_empty() {
            reap(retired);
        }
        self.table_bytes.store(bytes, Ordering::Relaxed);
    }

    /// Measures `store` every [`MEASURE_MS`] on a thread of its own
    /// while it is open: its compactions retire tables between writes
    /// (after ingest, for minutes), which would stay on disk, kept,
    /// until the next.
    fn measure_while_open(store: Weak<Store>) {
        let started = std::thread::Builder::new()
            .name("ukvs-measure".into())
            .spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_millis(MEASURE_MS));
                match store.upgrade() {
                    Some(store) => {
                        if store.drops_kept.load(Ordering::Relaxed) {
                            store.drop_unread();
                        }
                        store.measure();
                    }
                    None => break,
                }
            });
        if let Err(e) = started {
            crate::report!("ukvs: cannot start a thread to measure a delta: {e}");
        }
    }

    /// The generations from `floor` on, newest first.
    fn gens_from(&self, floor: u64) -> Vec<PartitionHandle> {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        st.gens
            .range(floor..)
            .rev()
            .map(|(_, h)| h.clone())
            .collect()
    }

    /// The partitions of the bases' digests.
    fn dig_bases(&self) -> Vec<PartitionHandle> {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        st.dig_bases.clone()
    }

    /// The generation writes go to, and its digest partition.
    fn current(&self) -> (PartitionHandle, PartitionHandle) {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        (st.gens[&st.current].clone(), st.digs[&st.current].clone())
    }

    /// The digest partitions from `floor` on, newest first.
    fn digs_from(&self, floor: u64) -> Vec<PartitionHandle> {
        let st = self.state.read().unwrap_or_else(|e| e.into_inner());
        st.digs
            .range(floor..)
            .rev()
            .map(|(_, h)| h.clone())
            .collect()
    }

    /// Commits `batch` (atomic: the journal marks where it ends, and a
    /// batch written in part is dropped at recovery) and returns once it
    /// is durable, syncing the journal together with the writers
    /// committing at the same time ([`Syncs`]). Readers may see the batch
    /// before it is durable, as with any batch of a store: what was
    /// answered is durable, and what was not is all there or absent.
    /// `applying` is let go once the batch is committed, before its sync.
    fn commit_durable(
        &self,
        batch: fjall::Batch,
        applying: std::sync::MutexGuard<'_, ()>,
    ) -> Result<(), Error> {
        let committed = batch.commit();
        drop(applying);
        committed.map_err(|e| self.fail("cannot commit", e))?;
        let lock = || self.syncs.lock().unwrap_or_else(|e| e.into_inner());
        let mut syncs = lock();
        syncs.written += 1;
        let mine = syncs.written;
        while syncs.synced < mine {
            if syncs.syncing {
                syncs = self.synced.wait(syncs).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Every batch counted in `written` is in the journal's
            // buffer: the sync takes them all.
            syncs.syncing = true;
            let upto = syncs.written;
            drop(syncs);
            // The journal is allocated ahead (its length does not change
            // as it is written): fdatasync is enough.
            let done = self.keyspace.persist(PersistMode::SyncData);
            syncs = lock();
            syncs.syncing = false;
            syncs.fsyncs += 1;
            if done.is_ok() {
                syncs.synced = syncs.synced.max(upto);
            }
            self.synced.notify_all();
            done.map_err(|e| self.fail("cannot make a commit durable", e))?;
        }
        Ok(())
    }

    /// Applies `ops` to `gen` in batches of up to [`CHUNK_BYTES`]; the
    /// last one durable, with `last` added to it.
    fn apply_chunks(
        &self,
        (gen, dig): (&PartitionHandle, &PartitionHandle),
        ops: impl Iterator<Item = Result<Op, Error>>,
        last: impl FnOnce(&mut fjall::Batch),
    ) -> Result<u64, Error> {
        let mut n = 0u64;
        let mut batch = self.keyspace.batch();
        let mut bytes = 0usize;
        let mut keys = Vec::new();
        for op in ops {
            let op = op?;
            bytes += put_into(
                &mut batch,
                gen,
                &mut keys,
                self.dig_keys(),
                self.entries,
                op,
            );
            n += 1;
            if bytes >= CHUNK_BYTES {
                put_keys(&mut batch, dig, &mut keys);
                batch.commit().map_err(|e| self.fail("cannot write", e))?;
                batch = self.keyspace.batch();
                bytes = 0;
            }
        }
        put_keys(&mut batch, dig, &mut keys);
        last(&mut batch);
        let batch = batch.durability(Some(PersistMode::SyncAll));
        batch.commit().map_err(|e| self.fail("cannot commit", e))?;
        Ok(n)
    }

    /// Replays every journal whose intent was recorded and not cleared.
    fn replay_intents(&self) -> Result<(), Error> {
        let pending: Vec<String> = self
            .meta
            .prefix("intent/")
            .map(|kv| kv.map(|(k, _)| String::from_utf8_lossy(&k).into_owned()))
            .collect::<Result<_, _>>()
            .map_err(|e| self.fail("cannot read the store's meta", e))?;
        for key in pending {
            let name = key.trim_start_matches("intent/");
            let path = self.dir.join(name);
            let file = std::fs::File::open(&path).map_err(|e| {
                self.fail(
                    "cannot replay a batch it recorded",
                    format!("{}: {e}", path.display()),
                )
            })?;
            let (gen, dig) = self.current();
            let n = self.apply_chunks((&gen, &dig), read_journal(&path, file), |b| {
                b.remove(&self.meta, key.as_str())
            })?;
            crate::report!(
                "ukvs: {}: replayed a batch of {n} ops interrupted before its end",
                self.dir.display()
            );
            let _ = std::fs::remove_file(&path);
        }
        Ok(())
    }
}

/// Removes the partitions a crash left half made, which fjall 2.11
/// would fail to open: one is made by writing its `manifest`, then its
/// `levels` (which fjall's own check for an unfinished partition, the
/// manifest alone, misses). A partition without `levels` never held
/// data: a generation being started (or dropped).
fn sweep_unfinished_partitions(store: &Path) {
    let Ok(entries) = std::fs::read_dir(store.join("partitions")) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && !p.join("levels").exists() {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// How a store spells the key of a capture's digest in its digest
/// partitions: every digest partition of a store has one form, which
/// its layout says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DigestKeys {
    /// The algorithm's name, `:`, the digest's bytes, the capture id:
    /// stores made before the form was chosen.
    Named,
    /// A byte naming the algorithm, the digest's bytes, the capture id.
    /// fjall's memtables compare keys by their first 4 bytes before the
    /// rest, which is a pointer away: with the name first every key of
    /// a partition shares them, so every comparison of a put's digest
    /// key went on to the rest; with the digest's first bytes there
    /// almost none does.
    Tagged,
}

/// How a store keeps a put's line in its entry (the value under the
/// capture id): every entry of a store has one form, which its layout
/// says. An entry starts with a tag byte: 0, the line whole (one that
/// does not start with its id's `key datetime`); 1, the line less its
/// `key datetime `; 2, less that and its trailing ` offset filename`
/// too (a CDX line's last two columns, which the id holds); 3, as 2
/// with its digest column, a base32 SHA-1, as the digest's 20 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntryForm {
    /// Tags 0 and 1: stores made before the tail was left out.
    Headless,
    /// Tags 0 to 3. Ten million CDX11 lines (`scripts/bench_live.sh`,
    /// the same input, two runs of each build alternated) took 0.91x
    /// their text on disk against 1.07x (0.98x with tags 0 to 2), and
    /// 4.4x written during their ingest against 5.4-5.5x (4.9x).
    Short,
}

impl Store {
    /// The layout a fold records with the store's digest partitions
    /// (`dig_bases`): its own, or 3 for one of layout 2.
    fn layout(&self) -> &'static [u8] {
        match (self.digest_keys, self.entries) {
            (DigestKeys::Named, _) => LAYOUT_3,
            (DigestKeys::Tagged, EntryForm::Headless) => LAYOUT_4,
            (DigestKeys::Tagged, EntryForm::Short) => LAYOUT,
        }
    }
}

/// The key prefix of `digest`'s captures in a digest partition of the
/// form `form`.
fn digest_prefix(digest: &Digest, form: DigestKeys) -> Vec<u8> {
    match form {
        DigestKeys::Named => {
            let name = digest.algo().name().as_bytes();
            [name, b":", digest.bytes()].concat()
        }
        DigestKeys::Tagged => {
            let tag = match digest.algo() {
                crate::digest::Algo::Sha1 => 1u8,
                crate::digest::Algo::Sha256 => 2,
                crate::digest::Algo::Sha512 => 3,
                crate::digest::Algo::Md5 => 4,
            };
            [&[tag][..], digest.bytes()].concat()
        }
    }
}

/// Calls `f` with each digest a stored line gives, as a digest file of
/// it lists them: a CDX line's (9 to 11 columns: pywb's formats all have
/// it sixth); a CDXJ line's `digest`; a UKVS line's second value (the
/// `ukvs` profile's `offset digest`) and its stated `payload_digest`.
/// Spellings that are no digest are none; a digest is given once.
fn for_each_digest(line: &[u8], mut f: impl FnMut(Digest)) {
    let field = |i: usize| line.split(|&b| b == b' ').nth(i).unwrap_or_default();
    let parse = |t: &[u8]| {
        std::str::from_utf8(t)
            .ok()
            .and_then(|t| Digest::parse(t).ok())
    };
    let Some(json_at) = memchr::memmem::find(line, b" {") else {
        let columns = memchr::memchr_iter(b' ', line).count() + 1;
        if let Some(d) = (9..=11)
            .contains(&columns)
            .then(|| parse(field(5)))
            .flatten()
        {
            f(d);
        }
        return;
    };
    let json = &line[json_at + 1..];
    let cdxj = memchr::memchr_iter(b' ', &line[..json_at]).count() == 1;
    let first = match cdxj {
        true => json_string(json, b"\"digest\"").and_then(parse),
        false => parse(field(3)),
    };
    let second = json_string(json, b"\"payload_digest\"").and_then(parse);
    if let Some(d) = &first {
        f(d.clone());
    }
    if let Some(d) = second.filter(|d| Some(d) != first.as_ref()) {
        f(d);
    }
}

/// The string value of the member `name` (quoted) of a flat JSON
/// object, without parsing the object: the first `name` followed by
/// `:` and a string (a string value equal to the name is followed by
/// `,` or `}`, and a quote inside a string is escaped). `None` when the
/// value is no string or holds an escape (no digest spelling has one).
fn json_string<'j>(json: &'j [u8], name: &[u8]) -> Option<&'j [u8]> {
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&json[from..], name) {
        let rest = json[from + at + name.len()..].trim_ascii_start();
        from += at + name.len();
        let Some(rest) = rest.strip_prefix(b":") else {
            continue;
        };
        let value = rest.trim_ascii_start().strip_prefix(b"\"")?;
        let end = memchr::memchr2(b'"', b'\\', value)?;
        return (value[end] == b'"').then(|| &value[..end]);
    }
    None
}

fn op_id(op: &Op) -> &[u8] {
    match op {
        Op::Put { id, .. } | Op::Delete { id } => id,
    }
}

/// Adds `op`'s entry of the form `entries` to `batch` and a put's
/// digest keys of the form `digest_keys` to `keys` (none without one:
/// put in the digest partition by [`put_keys`]); gives the bytes they
/// hold.
fn put_into(
    batch: &mut fjall::Batch,
    gen: &PartitionHandle,
    keys: &mut Vec<Vec<u8>>,
    digest_keys: Option<DigestKeys>,
    entries: EntryForm,
    op: Op,
) -> usize {
    match op {
        Op::Put { id, line } => {
            let entry = entry_of(&id, &line, entries);
            let mut n = id.len() + entry.len() + 32;
            if let Some(form) = digest_keys {
                for_each_digest(&line, |d| {
                    let key = [&digest_prefix(&d, form)[..], &id].concat();
                    n += key.len() + 32;
                    keys.push(key);
                });
            }
            batch.insert(gen, id, entry);
            n
        }
        Op::Delete { id } => {
            let n = id.len() + 32;
            batch.insert(gen, id, b"");
            n
        }
    }
}

/// Adds `keys` to `batch` in `dig`, in key order (as a batch's entries
/// are: its memtable inserts then walk where the last one did).
fn put_keys(batch: &mut fjall::Batch, dig: &PartitionHandle, keys: &mut Vec<Vec<u8>>) {
    keys.sort_unstable();
    for key in keys.drain(..) {
        batch.insert(dig, key, b"");
    }
}

/// Writes one op as a journal holds it: `len id tag [len line]` (lengths
/// u32 little-endian, tag 0 a put, 1 a delete). The server spools a POST
/// body's ops in the same records ([`read_ops`]).
pub fn write_op(out: &mut impl Write, op: &Op) -> std::io::Result<()> {
    let (id, line) = match op {
        Op::Put { id, line } => (id, Some(line)),
        Op::Delete { id } => (id, None),
    };
    let len = |n: usize| u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes();
    out.write_all(&len(id.len()))?;
    out.write_all(id)?;
    match line {
        Some(l) => {
            out.write_all(&[0])?;
            out.write_all(&len(l.len()))?;
            out.write_all(l)
        }
        None => out.write_all(&[1]),
    }
}

/// The ops of a journal, in order.
fn read_journal(path: &Path, file: std::fs::File) -> impl Iterator<Item = Result<Op, Error>> {
    let path = path.to_path_buf();
    read_ops(BufReader::with_capacity(1 << 16, file))
        .map(move |op| op.map_err(|e| journal_error(&path, e)))
}

/// The ops [`write_op`] wrote to `r`, in order.
pub fn read_ops(mut r: impl Read) -> impl Iterator<Item = std::io::Result<Op>> {
    std::iter::from_fn(move || {
        let mut n = [0u8; 4];
        match r.read_exact(&mut n) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) => return Some(Err(e)),
        }
        let mut next = || -> std::io::Result<Op> {
            let mut id = vec![0; u32::from_le_bytes(n) as usize];
            r.read_exact(&mut id)?;
            let mut tag = [0u8];
            r.read_exact(&mut tag)?;
            if tag[0] == 1 {
                return Ok(Op::Delete { id });
            }
            let mut m = [0u8; 4];
            r.read_exact(&mut m)?;
            let mut line = vec![0; u32::from_le_bytes(m) as usize];
            r.read_exact(&mut line)?;
            Ok(Op::Put { id, line })
        };
        Some(next())
    })
}

fn journal_error(path: &Path, e: std::io::Error) -> Error {
    Error {
        path: path.to_path_buf(),
        what: "cannot read the journal",
        message: e.to_string(),
    }
}

impl std::fmt::Debug for Delta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delta")
            .field("path", &self.store.dir)
            .field("floor", &self.floor)
            .finish()
    }
}

impl Drop for Delta {
    fn drop(&mut self) {
        self.store.unpin(self.floor);
    }
}

impl Delta {
    /// Opens the delta in `dir`, creating the directory and an empty
    /// store when there is none. A store left by a crash opens as of its
    /// last commit, with any large batch it recorded replayed whole and
    /// what an unfinished fold wrote removed. A store opens in one
    /// process at a time: another process gets an error, and the same
    /// process a view of the store it has open.
    pub fn open(dir: &Path) -> Result<Delta, Error> {
        Delta::open_with(dir, Settings::default())
    }

    /// [`Delta::open`] with `settings`: a store made here indexing
    /// digests or not as they say (a store that exists keeps what it was
    /// made with: [`Delta::digests`]), its memtables holding up to their
    /// memory. A store open in this process already keeps the settings
    /// it was opened with.
    pub fn open_with(dir: &Path, settings: Settings) -> Result<Delta, Error> {
        let key = canonical(dir);
        let mut open = registry().lock().unwrap_or_else(|e| e.into_inner());
        let store = match open.get(&key).and_then(Weak::upgrade) {
            Some(s) => s,
            None => {
                let s = Arc::new(Store::open(dir, settings)?);
                if settings.upkeep == Upkeep::Compact {
                    Store::measure_while_open(Arc::downgrade(&s));
                }
                open.insert(s.dir.clone(), Arc::downgrade(&s));
                s
            }
        };
        drop(open);
        let floor = store.state.read().unwrap_or_else(|e| e.into_inner()).floor;
        store.pin(floor);
        Ok(Delta { store, floor })
    }

    /// Whether the tables of the generations this view reads fit the
    /// store's block cache (with room for what they inflate to): once
    /// read, a lookup finds its blocks in memory, so a server may look
    /// them up on the thread that took the request.
    ///
    /// Answered from the size last measured (after every write, at a
    /// fold and every second), with no lock: a view made before a fold
    /// is judged by the generations after it.
    pub fn is_cached(&self) -> bool {
        self.store.table_bytes.load(Ordering::Relaxed) <= CACHE_BYTES / 2
    }

    /// The delta's directory.
    pub fn path(&self) -> &Path {
        &self.store.dir
    }

    /// Whether the delta indexes its captures by digest.
    pub fn digests(&self) -> Digests {
        self.store.digests
    }

    fn fail(&self, what: &'static str, e: impl std::fmt::Display) -> Error {
        self.store.fail(what, e)
    }

    /// Applies a batch to the current generation, durable when this
    /// returns `Ok`; on an error (of the store, or one `ops` yields)
    /// nothing of the batch is kept. Gives how many ops were applied.
    /// A batch past [`BATCH_BYTES`] rolls forward through a journal (see
    /// the module's notes).
    pub fn apply<E: std::fmt::Display>(
        &self,
        ops: impl IntoIterator<Item = Result<Op, E>>,
    ) -> Result<u64, Error> {
        let n = self.apply_capped(ops, BATCH_BYTES)?;
        self.store.measure();
        if self
            .store
            .drops_kept
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.store.drop_unread();
        }
        Ok(n)
    }

    fn apply_capped<E: std::fmt::Display>(
        &self,
        ops: impl IntoIterator<Item = Result<Op, E>>,
        cap: usize,
    ) -> Result<u64, Error> {
        let _writing = self.store.switch.read().unwrap_or_else(|e| e.into_inner());
        let (gen, dig) = self.store.current();
        let mut ops = ops.into_iter();
        let mut held: Vec<Op> = Vec::new();
        let mut bytes = 0usize;
        for op in ops.by_ref() {
            let op = op.map_err(|e| self.fail("cannot read the batch", e))?;
            bytes += match &op {
                Op::Put { id, line } => id.len() + line.len() + 64,
                Op::Delete { id } => id.len() + 64,
            };
            held.push(op);
            if bytes > cap {
                return self.roll_forward((&gen, &dig), held, ops);
            }
        }
        let n = held.len() as u64;
        let applying = self
            .store
            .applying
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // In id order, the memtable's inserts walk its skip list where
        // the last one did (in cache) rather than all over it (a fifth
        // more lines/s in `scripts/bench_live.sh`); stable, so that of
        // two ops on one capture the later wins.
        held.sort_by(|a, b| op_id(a).cmp(op_id(b)));
        let mut batch = self.store.keyspace.batch();
        // Each op freed as the batch takes its copy.
        let mut keys = Vec::new();
        for op in held {
            put_into(
                &mut batch,
                &gen,
                &mut keys,
                self.store.dig_keys(),
                self.store.entries,
                op,
            );
        }
        put_keys(&mut batch, &dig, &mut keys);
        self.store.commit_durable(batch, applying)?;
        Ok(n)
    }

    /// A batch too large for memory: journal, intent, chunks.
    fn roll_forward<E: std::fmt::Display>(
        &self,
        gen: (&PartitionHandle, &PartitionHandle),
        held: Vec<Op>,
        rest: impl Iterator<Item = Result<Op, E>>,
    ) -> Result<u64, Error> {
        use std::sync::atomic::Ordering;
        let name = format!(
            "journal-{}-{}.ops",
            std::process::id(),
            self.store.journals.fetch_add(1, Ordering::Relaxed)
        );
        let path = self.store.dir.join(&name);
        let written = (|| -> Result<(), Error> {
            let io = |e: std::io::Error| self.fail("cannot write a journal", e);
            let file = std::fs::File::create(&path).map_err(io)?;
            let mut out = BufWriter::with_capacity(1 << 16, file);
            for op in &held {
                write_op(&mut out, op).map_err(io)?;
            }
            drop(held);
            for op in rest {
                let op = op.map_err(|e| self.fail("cannot read the batch", e))?;
                write_op(&mut out, &op).map_err(io)?;
            }
            let file = out.into_inner().map_err(|e| io(e.into_error()))?;
            file.sync_all().map_err(io)?;
            std::fs::File::open(&self.store.dir)
                .and_then(|d| d.sync_all())
                .map_err(io)?;
            Ok(())
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        let key = format!("intent/{name}");
        let recorded = self
            .store
            .meta
            .insert(key.as_str(), b"")
            .and_then(|()| self.store.keyspace.persist(PersistMode::SyncAll));
        if let Err(e) = recorded {
            let _ = std::fs::remove_file(&path);
            return Err(self.fail("cannot record a batch", e));
        }
        // From here the batch is there after a crash: it is replayed at
        // open if its last chunk did not clear the intent.
        let file = std::fs::File::open(&path).map_err(|e| self.fail("cannot read a journal", e))?;
        let n = self
            .store
            .apply_chunks(gen, read_journal(&path, file), |b| {
                b.remove(&self.store.meta, key.as_str())
            })?;
        let _ = std::fs::remove_file(&path);
        Ok(n)
    }

    /// The delta's lines within `range`, in byte order: every
    /// generation this view reads, newest winning for a capture, deleted
    /// ones left out.
    pub fn lines(&self, range: &KeyRange) -> Result<DeltaLines, Error> {
        let gens = self.store.gens_from(self.floor);
        Ok(DeltaLines::new(&gens, range, self.store.dir.clone()))
    }

    /// The captures hidden within `range` (every capture a generation
    /// holds, deleted or put: its bases' line is hidden), to test the
    /// bases' lines against: the ids themselves when there are at most
    /// [`HIDDEN_HELD`], else the store looked up line by line, so that a
    /// query's memory stays bounded whatever the deletes.
    pub fn hider(&self, range: &KeyRange) -> Result<Hider, Error> {
        self.hider_holding(range, HIDDEN_HELD)
    }

    fn hider_holding(&self, range: &KeyRange, held: usize) -> Result<Hider, Error> {
        let gens = self.store.gens_from(self.floor);
        // One scan of the range, newest winning: the entries held are
        // the range's delta lines too (`Hider::lines`), so a query reads
        // the store once.
        let mut merged = Merged::<Entries>::new(&gens, range);
        let mut entries: Vec<fjall::KvPair> = Vec::new();
        let mut bytes = 0;
        while let Some(kv) = merged.next_entry() {
            let kv = kv.map_err(|e| self.fail("cannot read", e))?;
            bytes += kv.0.len() + kv.1.len();
            if entries.len() == held || bytes > HIDDEN_BYTES {
                return Ok(Hider {
                    kind: HiderKind::Store(gens),
                    path: self.store.dir.clone(),
                });
            }
            entries.push(kv);
        }
        Ok(Hider {
            kind: HiderKind::Held(entries),
            path: self.store.dir.clone(),
        })
    }

    /// The captures that may have the payload digest `digest`, by id:
    /// every capture put with it in a generation this view reads or
    /// folded into the bases. A capture's newest entry
    /// ([`Delta::newest`]), or without one the bases' line of it, says
    /// whether it still has that digest.
    ///
    /// An error for a delta made without the index ([`Digests::Off`]):
    /// its captures cannot be found by digest.
    pub fn digest_ids(&self, digest: &Digest) -> Result<Vec<Vec<u8>>, Error> {
        if self.store.digests == Digests::Off {
            return Err(self.fail(
                "keeps no index of its captures' digests",
                "it was made without one (`ukvs serve --no-digest-index`)",
            ));
        }
        let prefix = digest_prefix(digest, self.store.digest_keys);
        let mut ids = std::collections::BTreeSet::new();
        let mut digs = self.store.digs_from(self.floor);
        digs.extend(self.store.dig_bases());
        for dig in digs {
            for kv in dig.prefix(&prefix) {
                let (key, _) = kv.map_err(|e| self.fail("cannot read", e))?;
                ids.insert(key[prefix.len()..].to_vec());
            }
        }
        Ok(ids.into_iter().collect())
    }

    /// The newest entry of the capture `id` in the generations this view
    /// reads: `None` when none holds it, `Some(None)` when it is deleted,
    /// else its line.
    pub fn newest(&self, id: &[u8]) -> Result<Option<Option<Vec<u8>>>, Error> {
        for gen in self.store.gens_from(self.floor) {
            if let Some(entry) = gen.get(id).map_err(|e| self.fail("cannot read", e))? {
                return Ok(Some(line_of(id, &entry)));
            }
        }
        Ok(None)
    }

    /// The delta's lines of captures whose payload digest is `digest`
    /// (in id order): every capture a generation this view reads put
    /// with that digest, unless a newer entry deleted it or replaced it
    /// with a line of another digest.
    pub fn digest_lines(&self, digest: &Digest) -> Result<Vec<Vec<u8>>, Error> {
        let mut out = Vec::new();
        for id in self.digest_ids(digest)? {
            let Some(Some(line)) = self.newest(&id)? else {
                continue;
            };
            let mut still = false;
            for_each_digest(&line, |d| still |= d == *digest);
            if still {
                out.push(line);
            }
        }
        Ok(out)
    }

    /// Whether a generation this view reads holds the capture `id` (put
    /// or deleted: the bases' line of it is hidden).
    pub fn holds(&self, id: &[u8]) -> Result<bool, Error> {
        for gen in self.store.gens_from(self.floor) {
            if gen
                .contains_key(id)
                .map_err(|e| self.fail("cannot read", e))?
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// How many lines the delta holds and how many captures it hides
    /// (both read through: a scan of the whole delta).
    pub fn counts(&self) -> Result<(u64, u64), Error> {
        let all = KeyRange::new(b"", crate::sorted::MatchType::Prefix);
        let gens = self.store.gens_from(self.floor);
        let mut merged = Merged::<Streamed>::new(&gens, &all);
        let (mut lines, mut ids) = (0, 0);
        while let Some(kv) = merged.next_entry() {
            let (_, entry) = kv.map_err(|e| self.fail("cannot read", e))?;
            ids += 1;
            lines += u64::from(!entry.is_empty());
        }
        Ok((lines, ids))
    }

    /// What folds recorded (none before the first fold).
    pub fn folded(&self) -> Folded {
        self.store
            .state
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .folded
            .clone()
    }

    /// The bases a collection given `given` serves: the bases folds
    /// wrote, then the paths of `given` that they do not supersede (a
    /// restart with the same command line serves the folded base in
    /// place of those it folded). No fold recorded: `given`.
    pub fn bases(&self, given: &[PathBuf]) -> Vec<PathBuf> {
        let folded = self.folded();
        let mut out = folded.bases.clone();
        for p in given {
            let c = canonical(p);
            if !folded.given.contains(&c) && !out.contains(&c) {
                out.push(p.clone());
            }
        }
        out
    }

    /// Writes out what the store's memtables hold, and waits (up to
    /// `wait`) until fjall has and has freed the journal that held it,
    /// so that the next open replays no journal: what a server does as
    /// it stops. Nothing is lost if it does not finish (the journal
    /// holds every write until then). Gives whether it finished.
    ///
    /// A store a server stopped after taking ten million lines
    /// (`scripts/bench_fold.sh`, a journal of 120 MB left) opened for
    /// one lookup in 1.07-1.15 s, and in 0.07-0.31 s written out.
    pub fn write_out(&self, wait: std::time::Duration) -> bool {
        let store = &self.store;
        let parts: Vec<PartitionHandle> = {
            let st = store.state.read().unwrap_or_else(|e| e.into_inner());
            st.gens
                .values()
                .chain(st.digs.values())
                .chain(&st.dig_bases)
                .chain(&st.retired_digs)
                .cloned()
                .chain([store.meta.clone()])
                .collect()
        };
        for p in &parts {
            if p.tree.active_memtable_size() > 0 && p.rotate_memtable().is_err() {
                return false;
            }
        }
        let until = std::time::Instant::now() + wait;
        loop {
            let written = parts.iter().all(|p| p.tree.sealed_memtable_count() == 0);
            if written && store.keyspace.journal_count() <= 1 {
                return true;
            }
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// The generation numbers this view reads (oldest first).
    pub fn generations(&self) -> Vec<u64> {
        let st = self.store.state.read().unwrap_or_else(|e| e.into_inner());
        st.gens.range(self.floor..).map(|(n, _)| *n).collect()
    }

    /// Starts a fold: one at a time per store (`None` when one runs).
    /// Starts a new generation in one durable write (waiting for the
    /// writes in flight), so those before it are frozen; gives them.
    pub fn freeze(&self) -> Result<Option<Frozen<'_>>, Error> {
        let guard = match self.store.folding.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::WouldBlock) => return Ok(None),
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
        };
        let _switch = self.store.switch.write().unwrap_or_else(|e| e.into_inner());
        let (floor, next) = {
            let st = self.store.state.read().unwrap_or_else(|e| e.into_inner());
            (st.floor, st.current + 1)
        };
        let gen = self
            .store
            .keyspace
            .open_partition(&gen_name(next), gen_options(self.store.memtable))
            .map_err(|e| self.fail("cannot start a generation", e))?;
        let dig = self
            .store
            .keyspace
            .open_partition(&dig_name(next), dig_options(self.store.memtable))
            .map_err(|e| self.fail("cannot start a generation", e))?;
        let mut b = self
            .store
            .keyspace
            .batch()
            .durability(Some(PersistMode::SyncAll));
        b.insert(&self.store.meta, "current", next.to_le_bytes());
        b.commit()
            .map_err(|e| self.fail("cannot start a generation", e))?;
        let mut st = self.store.state.write().unwrap_or_else(|e| e.into_inner());
        st.gens.insert(next, gen);
        st.digs.insert(next, dig);
        st.current = next;
        let gens: Vec<PartitionHandle> = st
            .gens
            .range(floor..next)
            .rev()
            .map(|(_, h)| h.clone())
            .collect();
        let digs: Vec<PartitionHandle> = st
            .digs
            .range(floor..next)
            .rev()
            .map(|(_, h)| h.clone())
            .collect();
        Ok(Some(Frozen {
            delta: self,
            gens,
            digs,
            upto: next - 1,
            dig_plan: std::sync::OnceLock::new(),
            _guard: guard,
        }))
    }
}

/// The generations a fold folds ([`Delta::freeze`]): no write reaches
/// them any more.
pub struct Frozen<'d> {
    delta: &'d Delta,
    /// Newest first.
    gens: Vec<PartitionHandle>,
    /// Their digest partitions.
    digs: Vec<PartitionHandle>,
    upto: u64,
    /// What becomes of the bases' digest partitions, once decided
    /// ([`Frozen::index_digests`]); `None` in it: they stand.
    dig_plan: std::sync::OnceLock<Option<DigPlan>>,
    _guard: std::sync::MutexGuard<'d, ()>,
}

/// The bases' digest partitions after a fold.
enum DigPlan {
    /// These frozen generations' partitions join them.
    Add(Vec<PartitionHandle>),
    /// This one, made of them all, replaces them.
    Merged(PartitionHandle),
}

impl Drop for Frozen<'_> {
    /// A fold given up: the digest partition it made is dropped, at
    /// once: made by bulk ingest, it has no memtable fjall could be
    /// writing out.
    fn drop(&mut self) {
        if let Some(Some(DigPlan::Merged(part))) = self.dig_plan.take() {
            let store = &self.delta.store;
            if let Err(e) = store.keyspace.delete_partition(part) {
                crate::report!(
                    "ukvs: {}: cannot drop a digest index a fold left: {e}",
                    store.dir.display()
                );
            }
        }
    }
}

impl Frozen<'_> {
    /// The frozen generations' lines within `range`, as [`Delta::lines`]
    /// reads them.
    pub fn lines(&self, range: &KeyRange) -> DeltaLines {
        DeltaLines::new(&self.gens, range, self.delta.store.dir.clone())
    }

    /// Every capture the frozen generations hold, in id order, newest
    /// winning (each hides its bases' line).
    pub fn entries(&self) -> FrozenEntries {
        let all = KeyRange::new(b"", crate::sorted::MatchType::Prefix);
        FrozenEntries {
            merged: Merged::<Streamed>::new(&self.gens, &all),
            path: self.delta.store.dir.clone(),
        }
    }

    /// Decides what becomes of the bases' digest partitions, for
    /// [`Frozen::commit`] to record: the frozen generations' partitions
    /// that hold keys join them, or past [`DIG_BASES`] partitions all are
    /// merged in one sorted pass into a new one with fjall's bulk ingest
    /// (sorted tables written whole: no journal, no memtable, no
    /// merges). It reads only partitions no write reaches, so it may run
    /// beside the writing of the new base; `commit` does it when it was
    /// not done.
    pub fn index_digests(&self) -> Result<(), Error> {
        if self.dig_plan.get().is_some() {
            return Ok(());
        }
        let store = &self.delta.store;
        let mut new = Vec::new();
        for dig in &self.digs {
            if !dig.is_empty().map_err(|e| store.fail("cannot read", e))? {
                new.push(dig.clone());
            }
        }
        let plan = if new.is_empty() {
            None
        } else if store.dig_bases().len() + new.len() <= DIG_BASES {
            Some(DigPlan::Add(new))
        } else {
            Some(DigPlan::Merged(self.ingest_digests()?))
        };
        if let Err(Some(DigPlan::Merged(part))) = self.dig_plan.set(plan) {
            store
                .keyspace
                .delete_partition(part)
                .map_err(|e| store.fail("cannot drop a digest index", e))?;
        }
        Ok(())
    }

    /// The bases' digest partitions and the frozen generations', merged
    /// into a new partition.
    fn ingest_digests(&self) -> Result<PartitionHandle, Error> {
        let store = &self.delta.store;
        let fail = |e: &dyn std::fmt::Display| store.fail("cannot index the folded digests", e);
        let part = store
            .keyspace
            .open_partition(&dig_base_name(self.upto), dig_options(store.memtable))
            .map_err(|e| fail(&e))?;
        // Generation numbers are never used twice, so the partition is
        // new; fjall's ingest panics on one that is not.
        if !part.is_empty().map_err(|e| fail(&e))? {
            return Err(fail(&format!(
                "its partition {} exists",
                dig_base_name(self.upto)
            )));
        }
        let failed = std::cell::RefCell::new(None);
        let sources = store
            .dig_bases()
            .into_iter()
            .chain(self.digs.iter().cloned());
        let keys = itertools::kmerge(sources.map(|dig| {
            dig.iter().map_while(|kv| match kv {
                Ok((key, _)) => Some(key),
                Err(e) => {
                    failed.borrow_mut().get_or_insert(e);
                    None
                }
            })
        }));
        // Strictly ascending, as ingest requires: one capture put with
        // a digest in two generations has one key.
        let keys = itertools::Itertools::dedup(keys);
        let ingested = part.ingest(keys.map(|key| (key, fjall::Slice::from(&b""[..]))));
        if let Some(e) = failed.into_inner() {
            let _ = store.keyspace.delete_partition(part);
            return Err(fail(&e));
        }
        if let Err(e) = ingested {
            let _ = store.keyspace.delete_partition(part);
            return Err(fail(&e));
        }
        Ok(part)
    }

    /// Where a fold writes its base: `DIR/NAME/base-N` and `ext`.
    pub fn base_path(&self, ext: &str) -> PathBuf {
        self.delta
            .store
            .dir
            .join(format!("base-{}{ext}", self.upto))
    }

    /// Ends the fold: in one durable write, records `base` as the
    /// collection's base in place of `folded` (the bases it was made
    /// from) and raises the floor past the frozen generations. Gives a
    /// view that reads the generations left; the views made before keep
    /// reading the folded ones (which are dropped when the last goes).
    pub fn commit(mut self, folded: &[PathBuf], base: &Path) -> Result<Delta, Error> {
        self.index_digests()?;
        let plan = self.dig_plan.take().flatten();
        let store = &self.delta.store;
        let floor = self.upto + 1;
        let old = self.delta.folded();
        let base = &store.dir.join(base.file_name().unwrap_or_default());
        // Every path superseded, the bases earlier folds wrote among them:
        // a list of the bases made before this fold (a server's catalog
        // kept when its swap failed) then gives this fold's base alone
        // ([`Delta::bases`]).
        let mut given = old.given.clone();
        let superseded = folded.iter().map(|p| canonical(p)).chain(old.bases.clone());
        for p in superseded {
            if &p != base && !given.contains(&p) {
                given.push(p);
            }
        }
        let bases = vec![base.clone()];
        let names: Vec<PathBuf> = bases
            .iter()
            .filter_map(|b| b.file_name())
            .map(PathBuf::from)
            .collect();
        let mut b = store
            .keyspace
            .batch()
            .durability(Some(PersistMode::SyncAll));
        b.insert(&store.meta, "floor", floor.to_le_bytes());
        b.insert(&store.meta, "given", encode_paths(&given));
        b.insert(&store.meta, "bases", encode_paths(&names));
        let dig_bases = match &plan {
            None => None,
            Some(DigPlan::Add(new)) => Some([store.dig_bases(), new.clone()].concat()),
            Some(DigPlan::Merged(part)) => Some(vec![part.clone()]),
        };
        if let Some(parts) = &dig_bases {
            let names: Vec<&str> = parts.iter().map(|p| &*p.name).collect();
            b.insert(&store.meta, "dig_bases", names.join("\0"));
            b.insert(&store.meta, "layout", store.layout());
        }
        // Not recorded (or not known to be): the partition made stays
        // until an open drops it or keeps it, as the meta says.
        b.commit()
            .map_err(|e| store.fail("cannot record the folded base", e))?;
        {
            let mut st = store.state.write().unwrap_or_else(|e| e.into_inner());
            st.floor = floor;
            st.folded = Folded { given, bases };
            // Views made before read the new partitions too, which hold
            // every key of those they supersede and of the generations
            // they read.
            match plan {
                None => {}
                Some(DigPlan::Add(new)) => {
                    // Kept: no longer dropped with their generations.
                    st.digs.retain(|_, h| !new.iter().any(|n| n.name == h.name));
                    st.dig_bases.extend(new);
                }
                Some(DigPlan::Merged(part)) => {
                    let old = std::mem::replace(&mut st.dig_bases, vec![part]);
                    st.retired_digs.extend(old);
                }
            }
            for p in old.bases {
                if &p != base {
                    st.retired.push((floor, p));
                }
            }
        }
        store.pin(floor);
        let view = Delta {
            store: store.clone(),
            floor,
        };
        // Drops what no view reads any more (at once when none is open
        // below the new floor).
        store.pin(floor);
        store.unpin(floor);
        store.measure();
        Ok(view)
    }
}

/// A capture of the frozen generations ([`Frozen::entries`]).
pub struct Entry {
    id: fjall::Slice,
    entry: fjall::Slice,
}

impl Entry {
    /// Its capture id.
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    /// Its `key datetime`: the id's head, which orders it as its line.
    pub fn head(&self) -> &[u8] {
        id_head(&self.id)
    }

    /// Whether its `key datetime` is `head` (which holds no NUL), without
    /// searching the id for the head's end.
    pub fn has_head(&self, head: &[u8]) -> bool {
        self.id.starts_with(head) && self.id.get(head.len()).copied().unwrap_or(0) == 0
    }

    /// Its line; `None` for a deleted capture.
    pub fn line(&self) -> Option<Vec<u8>> {
        line_of(&self.id, &self.entry)
    }

    /// Its line in pieces to write one after the other, with no copy
    /// made; `None` for a deleted capture.
    pub fn line_parts<'a>(&'a self, spelled: &'a mut [u8; SPELLED]) -> Option<[&'a [u8]; 9]> {
        line_parts(&self.id, &self.entry, spelled)
    }
}

/// The captures of frozen generations, in id order ([`Frozen::entries`]).
pub struct FrozenEntries {
    merged: Merged<Streamed>,
    path: PathBuf,
}

impl Iterator for FrozenEntries {
    type Item = Result<Entry, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.merged.next_entry()? {
            Ok((id, entry)) => Ok(Entry { id, entry }),
            Err(e) => Err(Error {
                path: self.path.clone(),
                what: "cannot read",
                message: e.to_string(),
            }),
        })
    }
}

/// Entries of the delta a query holds in memory at most
/// ([`Delta::hider`]), and their bytes.
pub const HIDDEN_HELD: usize = 100_000;
const HIDDEN_BYTES: usize = 16 << 20;

/// The tombstones of a range ([`Delta::hider`]).
pub struct Hider {
    kind: HiderKind,
    path: PathBuf,
}

enum HiderKind {
    /// Every entry of the range, in id order (newest of each id).
    Held(Vec<fjall::KvPair>),
    Store(Vec<PartitionHandle>),
}

impl Hider {
    /// Whether no capture of the range is hidden (then the delta has
    /// no line there either).
    pub fn is_empty(&self) -> bool {
        matches!(&self.kind, HiderKind::Held(entries) if entries.is_empty())
    }

    /// The delta's lines of the range, as [`Delta::lines`] gives them,
    /// from the entries held (`None` when the range held too many: read
    /// them from the store).
    pub fn lines(&self) -> Option<DeltaLines> {
        match &self.kind {
            HiderKind::Held(entries) => Some(DeltaLines {
                merged: EntrySource::Held(entries.clone().into_iter()),
                group: Vec::new(),
                next: None,
                path: self.path.clone(),
                done: false,
            }),
            HiderKind::Store(_) => None,
        }
    }

    /// Whether the capture `id` is hidden.
    pub fn hides(&self, id: &[u8]) -> Result<bool, Error> {
        match &self.kind {
            HiderKind::Held(entries) => {
                Ok(entries.binary_search_by(|(k, _)| k[..].cmp(id)).is_ok())
            }
            HiderKind::Store(gens) => {
                for g in gens {
                    if g.contains_key(id).map_err(|e| Error {
                        path: self.path.clone(),
                        what: "cannot read",
                        message: e.to_string(),
                    })? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
        }
    }
}

/// One generation's entries from a range's start, read a chunk at a
/// time (each chunk a fresh range read from past the last key), so that
/// the reader holds no store iterator between chunks.
struct Entries {
    gen: PartitionHandle,
    buf: std::collections::VecDeque<fjall::KvPair>,
    start: Vec<u8>,
    /// Above every id of the range (`None`: the range runs to the end).
    end: Option<Vec<u8>>,
    after: Option<fjall::Slice>,
    chunk: usize,
    done: bool,
}

impl Entries {
    fn new(gen: &PartitionHandle, range: &KeyRange) -> Entries {
        Entries {
            gen: gen.clone(),
            buf: Default::default(),
            start: range.start.clone(),
            end: range.end_key(),
            after: None,
            chunk: 32,
            done: false,
        }
    }

    fn peek(&mut self, range: &KeyRange) -> fjall::Result<Option<&fjall::KvPair>> {
        if self.buf.is_empty() && !self.done {
            use std::ops::Bound;
            // Each read of a chunk counts as a block a lookup on a
            // server's connection thread may take (`blocks::held_only`):
            // a long scan is refused there, and made on a thread that
            // may wait.
            if !crate::engine::blocks::may_take() {
                return Err(fjall::Error::Io(std::io::ErrorKind::WouldBlock.into()));
            }
            // Bounded above: the store opens only the tables whose keys
            // may fall in the range.
            let end = match &self.end {
                Some(end) => Bound::Excluded(&end[..]),
                None => Bound::Unbounded,
            };
            let bounds: (Bound<&[u8]>, Bound<&[u8]>) = match &self.after {
                None => (Bound::Included(&self.start), end),
                Some(k) => (Bound::Excluded(&k[..]), end),
            };
            let mut read = Ok(());
            for kv in self.gen.range::<&[u8], _>(bounds).take(self.chunk) {
                let kv = match kv {
                    Ok(kv) => kv,
                    Err(e) => {
                        read = Err(e);
                        break;
                    }
                };
                if range.is_past(&kv.0) {
                    self.done = true;
                    break;
                }
                self.buf.push_back(kv);
            }
            // The next chunk starts after what this one took, even when
            // a read failed part way (else it would take it again).
            if let Some(last) = self.buf.back() {
                self.after = Some(last.0.clone());
            }
            read?;
            if self.buf.len() < self.chunk {
                self.done = true;
            }
            self.chunk = (self.chunk * 4).min(4096);
        }
        Ok(self.buf.front())
    }
}

/// Where [`Merged`] reads one generation's entries from.
trait Source: Sized {
    fn open(gen: &PartitionHandle, range: &KeyRange) -> Self;
    fn peek(&mut self, range: &KeyRange) -> fjall::Result<Option<&fjall::KvPair>>;
    fn pop(&mut self) -> Option<fjall::KvPair>;
}

impl Source for Entries {
    fn open(gen: &PartitionHandle, range: &KeyRange) -> Self {
        Entries::new(gen, range)
    }

    fn peek(&mut self, range: &KeyRange) -> fjall::Result<Option<&fjall::KvPair>> {
        Entries::peek(self, range)
    }

    fn pop(&mut self) -> Option<fjall::KvPair> {
        self.buf.pop_front()
    }
}

/// One generation's entries through one store iterator, for a reader
/// that reads them all on one thread (a fold, counts).
struct Streamed {
    iter: Box<dyn Iterator<Item = fjall::Result<fjall::KvPair>>>,
    head: Option<fjall::KvPair>,
    done: bool,
    /// Why a read failed: the iterator has gone past the entry it could
    /// not read, so every later read fails too (a fold that went on
    /// would leave the entry out of its base).
    failed: Option<String>,
    /// Held so that the generation's files stay while it is read.
    _gen: PartitionHandle,
}

impl Source for Streamed {
    fn open(gen: &PartitionHandle, range: &KeyRange) -> Self {
        let iter: Box<dyn Iterator<Item = fjall::Result<fjall::KvPair>>> = match range.end_key() {
            Some(end) => Box::new(gen.range(range.start.clone()..end)),
            None => Box::new(gen.range(range.start.clone()..)),
        };
        Streamed {
            iter,
            head: None,
            done: false,
            failed: None,
            _gen: gen.clone(),
        }
    }

    fn peek(&mut self, range: &KeyRange) -> fjall::Result<Option<&fjall::KvPair>> {
        if let Some(why) = &self.failed {
            return Err(fjall::Error::Io(std::io::Error::other(why.clone())));
        }
        if self.head.is_none() && !self.done {
            match self.iter.next().transpose() {
                Ok(Some(kv)) if !range.is_past(&kv.0) => self.head = Some(kv),
                Ok(_) => self.done = true,
                Err(e) => {
                    self.failed = Some(e.to_string());
                    return Err(e);
                }
            }
        }
        Ok(self.head.as_ref())
    }

    fn pop(&mut self) -> Option<fjall::KvPair> {
        self.head.take()
    }
}

/// The generations' entries within a range merged by id, newest first
/// for an id (the others of it skipped).
struct Merged<S = Entries> {
    /// Newest first.
    each: Vec<S>,
    range: KeyRange,
}

impl<S: Source> Merged<S> {
    fn new(gens: &[PartitionHandle], range: &KeyRange) -> Merged<S> {
        Merged {
            each: gens.iter().map(|g| S::open(g, range)).collect(),
            range: range.clone(),
        }
    }

    fn next_entry(&mut self) -> Option<fjall::Result<(fjall::Slice, fjall::Slice)>> {
        if self.each.len() == 1 {
            let only = &mut self.each[0];
            return match only.peek(&self.range) {
                Err(e) => Some(Err(e)),
                Ok(None) => None,
                Ok(Some(_)) => only.pop().map(Ok),
            };
        }
        let mut best: Option<(usize, fjall::Slice)> = None;
        for i in 0..self.each.len() {
            match self.each[i].peek(&self.range) {
                Err(e) => return Some(Err(e)),
                Ok(None) => {}
                Ok(Some((k, _))) => {
                    if best.as_ref().map_or(true, |(_, bk)| k < bk) {
                        best = Some((i, k.clone()));
                    }
                }
            }
        }
        let (b, id) = best?;
        let (_, entry) = self.each[b].pop().expect("peeked");
        // The same capture in older generations: replaced. (Each was
        // peeked above, so this reads nothing; an error is still given.)
        for i in b + 1..self.each.len() {
            match self.each[i].peek(&self.range) {
                Err(e) => return Some(Err(e)),
                Ok(Some((k, _))) if *k == id => {
                    self.each[i].pop();
                }
                Ok(_) => {}
            }
        }
        Some(Ok((id, entry)))
    }
}

/// Where [`DeltaLines`] reads entries from: the store, or entries a
/// [`Hider`] holds.
enum EntrySource {
    Store(Merged),
    Held(std::vec::IntoIter<fjall::KvPair>),
}

impl EntrySource {
    fn next_entry(&mut self) -> Option<fjall::Result<fjall::KvPair>> {
        match self {
            EntrySource::Store(m) => m.next_entry(),
            EntrySource::Held(it) => it.next().map(Ok),
        }
    }
}

/// The lines of a delta within a range ([`Delta::lines`]), in byte
/// order: ids order lines but for those sharing key and datetime, which
/// are gathered and sorted.
pub struct DeltaLines {
    merged: EntrySource,
    /// Lines of one `key datetime`, sorted, given from the back.
    group: Vec<Vec<u8>>,
    /// The first entry past the group.
    next: Option<(fjall::Slice, fjall::Slice)>,
    path: PathBuf,
    done: bool,
}

impl DeltaLines {
    fn new(gens: &[PartitionHandle], range: &KeyRange, path: PathBuf) -> DeltaLines {
        DeltaLines {
            merged: EntrySource::Store(Merged::new(gens, range)),
            group: Vec::new(),
            next: None,
            path,
            done: false,
        }
    }

    fn error(&mut self, e: fjall::Error) -> Error {
        self.done = true;
        Error {
            path: self.path.clone(),
            what: "cannot read",
            message: e.to_string(),
        }
    }
}

impl Iterator for DeltaLines {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        // A loop, not a call of itself for a group that is all deleted:
        // a range may hold any number of tombstones in a row.
        loop {
            if let Some(line) = self.group.pop() {
                return Some(Ok(line));
            }
            if self.done {
                return None;
            }
            let mut head: Option<Vec<u8>> = None;
            loop {
                let (id, entry) = match self.next.take() {
                    Some(e) => e,
                    None => match self.merged.next_entry() {
                        None => {
                            self.done = true;
                            break;
                        }
                        Some(Err(e)) => return Some(Err(self.error(e))),
                        Some(Ok(e)) => e,
                    },
                };
                match &head {
                    Some(h) if h.as_slice() != id_head(&id) => {
                        self.next = Some((id, entry));
                        break;
                    }
                    None => head = Some(id_head(&id).to_vec()),
                    Some(_) => {}
                }
                if let Some(line) = line_of(&id, &entry) {
                    self.group.push(line);
                }
            }
            // Given from the back: largest first in the vector.
            self.group.sort_unstable_by(|a, b| b.cmp(a));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sorted::MatchType;

    fn put(key: &str, dt: &str, off: &str, rest: &str) -> Op {
        Op::Put {
            id: capture_id(key.as_bytes(), dt.as_bytes(), b"f.warc.gz", off.as_bytes()),
            line: format!("{key} {dt} {rest}").into_bytes(),
        }
    }

    /// Whether `done` turns true within ten seconds.
    fn eventually(mut done: impl FnMut() -> bool) -> bool {
        let start = std::time::Instant::now();
        while !done() {
            if start.elapsed() > std::time::Duration::from_secs(10) {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        true
    }

    fn all(d: &Delta, key: &str, m: MatchType) -> Vec<String> {
        d.lines(&KeyRange::new(key.as_bytes(), m))
            .unwrap()
            .map(|l| String::from_utf8(l.unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn puts_replace_by_id_deletes_hide_and_ranges_stop() {
        let dir = tempfile::tempdir().unwrap();
        let d = Delta::open(dir.path()).unwrap();
        let n = d
            .apply::<String>(vec![
                Ok(put("com,a)/", "20200101000000", "10", "{\"v\": 1}")),
                Ok(put("com,a)/b", "20200101000000", "20", "{}")),
                Ok(put("com,b)/", "20200101000000", "30", "{}")),
            ])
            .unwrap();
        assert_eq!(n, 3);
        // The same capture again: replaced, not doubled.
        d.apply::<String>(vec![Ok(put(
            "com,a)/",
            "20200101000000",
            "10",
            "{\"v\": 2}",
        ))])
        .unwrap();
        assert_eq!(
            all(&d, "com,a)/", MatchType::Exact),
            vec!["com,a)/ 20200101000000 {\"v\": 2}"]
        );
        assert_eq!(all(&d, "com,a)/", MatchType::Prefix).len(), 2);
        let del = capture_id(b"com,a)/b", b"20200101000000", b"f.warc.gz", b"20");
        d.apply::<String>(vec![Ok(Op::Delete { id: del.clone() })])
            .unwrap();
        assert_eq!(all(&d, "com,a)/", MatchType::Prefix).len(), 1);
        let hider = d
            .hider(&KeyRange::new(b"com,a)/b", MatchType::Exact))
            .unwrap();
        assert!(hider.hides(&del).unwrap());
        let other = capture_id(b"com,a)/", b"20200101000000", b"f.warc.gz", b"10");
        assert!(!hider.hides(&other).unwrap());
        // Past what a query holds, the store answers line by line.
        let looked_up = d
            .hider_holding(&KeyRange::new(b"com,a)/", MatchType::Prefix), 0)
            .unwrap();
        assert!(!looked_up.is_empty());
        assert!(looked_up.hides(&del).unwrap());
        assert!(looked_up.hides(&other).unwrap());
        let nowhere = capture_id(b"com,a)/", b"20200101000000", b"g.warc.gz", b"10");
        assert!(!looked_up.hides(&nowhere).unwrap());
        assert!(d
            .hider(&KeyRange::new(b"com,z)/", MatchType::Exact))
            .unwrap()
            .is_empty());
        assert_eq!(d.counts().unwrap(), (2, 3));
    }

    #[test]
    fn on_a_connection_thread_a_lookup_is_made_and_a_long_scan_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = Delta::open(dir.path()).unwrap();
        let ops = (0..5000).map(|i| {
            Ok::<_, String>(put(
                &format!("com,a)/p{i:05}"),
                "20200101000000",
                &i.to_string(),
                "{}",
            ))
        });
        d.apply(ops).unwrap();
        // A few lines: held in the store's cache, so a server makes the
        // lookup where the request came in.
        assert!(d.is_cached());
        let exact = crate::engine::blocks::held_only(|| all(&d, "com,a)/p00042", MatchType::Exact));
        assert_eq!(
            exact,
            Some(vec!["com,a)/p00042 20200101000000 {}".to_string()])
        );
        // Thousands of lines: more chunks than a connection's thread
        // may read, so the scan is refused there (and made elsewhere).
        let scan = crate::engine::blocks::held_only(|| {
            d.lines(&KeyRange::new(b"com,a)/", MatchType::Prefix))
                .unwrap()
                .count()
        });
        assert_eq!(scan, None);
        assert_eq!(all(&d, "com,a)/", MatchType::Prefix).len(), 5000);
    }

    #[test]
    fn write_priority_lowers_the_calling_threads_only() {
        let own = || rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap();
        let before = own();
        let (lowered, child) = std::thread::spawn(move || {
            write_priority();
            let lowered = own();
            // A thread it starts inherits it (as the store's do).
            let child = std::thread::spawn(own).join().unwrap();
            (lowered, child)
        })
        .join()
        .unwrap();
        assert_eq!(lowered, (before + WRITE_NICE).min(19));
        assert_eq!(child, lowered);
        assert_eq!(own(), before);
    }

    #[test]
    fn a_range_of_many_deletes_in_a_row_reads_in_constant_stack() {
        // Each deleted capture is a group of its own: 300,000 of them in
        // a row once overflowed the stack of a server's thread.
        let dir = tempfile::tempdir().unwrap();
        let d = Delta::open(dir.path()).unwrap();
        let n = 300_000;
        let key = |i: usize| format!("com,a)/p{i:06}");
        d.apply::<String>((0..n).map(|i| Ok(put(&key(i), "20200101000000", "1", "{}"))))
            .unwrap();
        d.apply::<String>((0..n - 1).map(|i| {
            Ok(Op::Delete {
                id: capture_id(key(i).as_bytes(), b"20200101000000", b"f.warc.gz", b"1"),
            })
        }))
        .unwrap();
        let last = format!("{} 20200101000000 {{}}", key(n - 1));
        // On a thread with a small stack, as a server's worker has.
        let lines = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || all(&d, "com,a)/", MatchType::Prefix))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(lines, vec![last]);
    }

    #[test]
    fn concurrent_batches_share_syncs_and_every_one_answered_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (threads, batches, ops) = (8, 12, 40);
        {
            let d = Delta::open(dir.path()).unwrap();
            std::thread::scope(|s| {
                for t in 0..threads {
                    let d = &d;
                    s.spawn(move || {
                        for b in 0..batches {
                            let batch = (0..ops).map(|i| {
                                let key = format!("com,t{t})/b{b}/{i}");
                                Ok::<_, String>(put(&key, "20200101000000", "1", "{}"))
                            });
                            assert_eq!(d.apply(batch).unwrap(), ops as u64);
                        }
                    });
                }
            });
            let syncs = d.store.syncs.lock().unwrap();
            assert_eq!((syncs.written, syncs.synced), (96, 96));
            assert!((1..=96).contains(&syncs.fsyncs), "{}", syncs.fsyncs);
        }
        let d = Delta::open(dir.path()).unwrap();
        let n = (threads * batches * ops) as u64;
        assert_eq!(d.counts().unwrap(), (n, n));
        assert_eq!(all(&d, "com,t7)/b11/", MatchType::Prefix).len(), ops);
    }

    #[test]
    fn a_failed_batch_leaves_nothing_and_a_reopen_keeps_commits() {
        let dir = tempfile::tempdir().unwrap();
        {
            let d = Delta::open(dir.path()).unwrap();
            d.apply::<String>(vec![Ok(put("com,a)/", "20200101000000", "1", "{}"))])
                .unwrap();
            let failed = d.apply(vec![
                Ok(put("com,c)/", "20200101000000", "1", "{}")),
                Err("line 2 is bad".to_string()),
            ]);
            assert!(failed.unwrap_err().to_string().contains("line 2 is bad"));
            // Past the cap: the journal goes too.
            let failed = d.apply_capped(
                vec![
                    Ok(put("com,c)/", "20200101000000", "1", "{}")),
                    Ok(put("com,c)/", "20200101000000", "2", "{}")),
                    Err("line 3 is bad".to_string()),
                ],
                10,
            );
            assert!(failed.unwrap_err().to_string().contains("line 3 is bad"));
        }
        let d = Delta::open(dir.path()).unwrap();
        assert_eq!(d.counts().unwrap(), (1, 1));
        assert!(all(&d, "com,c)/", MatchType::Exact).is_empty());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("journal-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn lines_sharing_key_and_datetime_come_in_byte_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = Delta::open(dir.path()).unwrap();
        // Ids order these by filename ("a" < "b"), lines by what follows
        // the datetime ("x" > "w").
        let a = Op::Put {
            id: capture_id(b"com,a)/", b"2020", b"a.warc", b"1"),
            line: b"com,a)/ 2020 x a.warc 1".to_vec(),
        };
        let b = Op::Put {
            id: capture_id(b"com,a)/", b"2020", b"b.warc", b"1"),
            line: b"com,a)/ 2020 w b.warc 1".to_vec(),
        };
        let c = Op::Put {
            id: capture_id(b"com,a)/", b"20201", b"b.warc", b"1"),
            line: b"com,a)/ 20201 a b.warc 1".to_vec(),
        };
        let odd = Op::Put {
            id: capture_id(b"com,a)/", b"2021", b"b.warc", b"1"),
            line: b"a line that does not start with its key".to_vec(),
        };
        d.apply::<String>(vec![Ok(c), Ok(a), Ok(b), Ok(odd)])
            .unwrap();
        let got = all(&d, "com,a)/", MatchType::Exact);
        assert_eq!(
            got,
            vec![
                "com,a)/ 2020 w b.warc 1",
                "com,a)/ 2020 x a.warc 1",
                "com,a)/ 20201 a b.warc 1",
                "a line that does not start with its key"
            ]
        );
    }

    #[test]
    fn generations_newest_wins_and_a_fold_switches_views() {
        let dir = tempfile::tempdir().unwrap();
        let d = Delta::open(dir.path()).unwrap();
        d.apply::<String>(vec![
            Ok(put("com,a)/", "2020", "1", "old")),
            Ok(put("com,b)/", "2020", "1", "b")),
        ])
        .unwrap();
        let frozen = d.freeze().unwrap().expect("no fold runs");
        assert!(d.freeze().unwrap().is_none(), "one fold at a time");
        // Written during the fold: the new generation.
        d.apply::<String>(vec![
            Ok(put("com,a)/", "2020", "1", "new")),
            Ok(Op::Delete {
                id: capture_id(b"com,b)/", b"2020", b"f.warc.gz", b"1"),
            }),
        ])
        .unwrap();
        assert_eq!(all(&d, "com,", MatchType::Prefix), vec!["com,a)/ 2020 new"]);
        let frozen_lines: Vec<_> = frozen
            .lines(&KeyRange::new(b"com,", MatchType::Prefix))
            .map(|l| String::from_utf8(l.unwrap()).unwrap())
            .collect();
        assert_eq!(frozen_lines, vec!["com,a)/ 2020 old", "com,b)/ 2020 b"]);
        assert_eq!(frozen.entries().count(), 2);
        let base = frozen.base_path(".cdxj");
        std::fs::write(&base, "com,a)/ 2020 old\ncom,b)/ 2020 b\n").unwrap();
        let given = vec![PathBuf::from("/elsewhere/base.cdxj")];
        let view = frozen.commit(&given, &base).unwrap();
        assert_eq!(view.generations(), vec![1]);
        // The old view still reads what it read.
        assert_eq!(d.generations(), vec![0, 1]);
        assert_eq!(view.bases(&given), vec![canonical(&base)]);
        drop(d);
        // No view reads generation 0 now: dropped once idle; its files
        // go once fjall's journals that wrote to it are let go (at the
        // latest, an open).
        let parts = dir.path().join("store/partitions");
        let st = || view.store.state.read().unwrap();
        assert!(eventually(|| !st().gens.contains_key(&0)));
        assert!(parts.join("gen_1").exists());
        drop(view);
        let d = Delta::open(dir.path()).unwrap();
        assert!(!parts.join("gen_0").exists());
        assert_eq!(d.generations(), vec![1]);
        assert_eq!(d.counts().unwrap(), (1, 2));
        assert_eq!(
            d.bases(&[given[0].clone(), PathBuf::from("/other")]),
            vec![canonical(&base), PathBuf::from("/other")]
        );
    }

    /// A generation fjall is writing out when a fold drops it is
    /// dropped later: deleted at once, it made fjall's flush worker
    /// panic and poison the keyspace (in each of 4 runs of this test).
    #[test]
    fn a_generation_being_written_out_is_dropped_after_its_flush() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = Delta::open(dir.path()).unwrap();
        let lines = |round: usize| -> Vec<Result<Op, String>> {
            (0..50)
                .map(|i| Ok(put(&format!("com,a)/{round}/{i}"), "2020", "1", "x")))
                .collect()
        };
        for round in 0..30 {
            d.apply(lines(round)).unwrap();
            // As fjall's memory watch writes out a frozen generation's
            // memtable while a fold runs.
            d.store.current().0.rotate_memtable().unwrap();
            let frozen = d.freeze().unwrap().expect("no fold runs");
            let base = frozen.base_path(".cdxj");
            std::fs::write(&base, "").unwrap();
            let view = frozen.commit(&[], &base).unwrap();
            drop(std::mem::replace(&mut d, view));
        }
        // Every write after goes through, and the kept generations go.
        d.apply(lines(30)).unwrap();
        let start = std::time::Instant::now();
        while d.store.state.read().unwrap().gens.len() > 1
            && start.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
            d.apply(lines(31)).unwrap();
        }
        assert_eq!(d.generations(), vec![30]);
        assert_eq!(d.store.state.read().unwrap().gens.len(), 1);
    }

    #[test]
    fn an_interrupted_large_batch_is_replayed_whole_at_open() {
        let dir = tempfile::tempdir().unwrap();
        {
            let d = Delta::open(dir.path()).unwrap();
            // What a crash after the intent leaves: the journal and the
            // intent, nothing applied.
            let path = dir.path().join("journal-1-0.ops");
            let mut f = std::fs::File::create(&path).unwrap();
            for i in 0..100 {
                write_op(&mut f, &put("com,a)/", "2020", &i.to_string(), "x")).unwrap();
            }
            d.store.meta.insert("intent/journal-1-0.ops", b"").unwrap();
            d.store.keyspace.persist(PersistMode::SyncAll).unwrap();
            // And one never recorded: dropped.
            std::fs::write(dir.path().join("journal-1-1.ops"), b"junk").unwrap();
        }
        // Opened for one job: compactions run all the same while the
        // batch is replayed.
        let one_job = Settings::one_job();
        let d = Delta::open_with(dir.path(), one_job).unwrap();
        assert_eq!(d.counts().unwrap(), (100, 100));
        assert!(!dir.path().join("journal-1-0.ops").exists());
        assert!(!dir.path().join("journal-1-1.ops").exists());
        // Large batches through the journal, whole.
        let ops: Vec<Result<Op, String>> = (100..300)
            .map(|i| Ok(put("com,b)/", "2020", &i.to_string(), "y")))
            .collect();
        assert_eq!(d.apply_capped(ops, 1000).unwrap(), 200);
        assert_eq!(d.counts().unwrap(), (300, 300));
    }

    #[test]
    fn a_store_opened_for_one_job_merges_only_its_meta_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let one_job = Settings::one_job();
        let mut most = 0;
        for round in 0..12 {
            let d = Delta::open_with(dir.path(), one_job).unwrap();
            let tables = d.store.meta.segment_count();
            assert!(tables <= META_TABLES, "round {round}: {tables} tables");
            most = most.max(tables);
            d.apply::<String>(vec![Ok(put("com,a)/", "2020", &round.to_string(), "x"))])
                .unwrap();
            // A fold, which writes the meta, and its memtable written
            // out: a table each round.
            let frozen = d.freeze().unwrap().unwrap();
            let base = frozen.base_path(".cdx");
            std::fs::write(&base, "").unwrap();
            let view = frozen.commit(&[], &base).unwrap();
            view.store.meta.rotate_memtable_and_wait().unwrap();
            // Nothing merges the generation's tables.
            if round == 11 {
                for i in 0..5 {
                    view.apply::<String>(vec![Ok(put("com,b)/", "2020", &i.to_string(), "y"))])
                        .unwrap();
                    view.store.current().0.rotate_memtable_and_wait().unwrap();
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
                assert_eq!(view.store.current().0.segment_count(), 5);
                assert_eq!(view.counts().unwrap(), (5, 5));
            }
        }
        assert!(most > 1, "the meta never had more than one table");
    }

    #[test]
    fn a_store_written_out_opens_with_no_journal_to_replay() {
        let dir = tempfile::tempdir().unwrap();
        let ops = |from: u32| {
            (from..from + 1000)
                .map(|i| Ok::<_, String>(put("com,a)/", "2020", &i.to_string(), "x")))
                .collect::<Vec<_>>()
        };
        let in_memory = |d: &Delta| {
            let gen = d.store.current().0;
            gen.tree.active_memtable_size() as usize + gen.tree.sealed_memtable_count()
        };
        {
            let d = Delta::open(dir.path()).unwrap();
            d.apply(ops(0)).unwrap();
        }
        // Not written out: its journal is replayed into memory.
        {
            let d = Delta::open(dir.path()).unwrap();
            assert!(in_memory(&d) > 0);
            d.apply(ops(1000)).unwrap();
            assert!(d.write_out(std::time::Duration::from_secs(30)));
            assert_eq!(d.store.keyspace.journal_count(), 1);
        }
        let d = Delta::open(dir.path()).unwrap();
        assert_eq!(in_memory(&d), 0);
        assert_eq!(d.counts().unwrap(), (2000, 2000));
    }

    #[test]
    fn every_shape_gives_its_digests_once() {
        let sha1 = "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB";
        let sha256 = format!("sha256:{}", "ab".repeat(32));
        let got = |line: &str| {
            let mut v = Vec::new();
            for_each_digest(line.as_bytes(), |d| v.push(d.canonical()));
            v
        };
        let cdx11 = "k 2020 http://a/ text/html 200 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB - - 1 2 f";
        assert_eq!(got(cdx11), vec![sha1]);
        let cdxj = r#"k 2020 {"url": "http://a/", "digest": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB"}"#;
        assert_eq!(got(cdxj), vec![sha1]);
        let ukvs = format!(
            r#"k 2020 12 sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB {{"payload_digest": "{sha256}"}}"#
        );
        assert_eq!(got(&ukvs), vec![sha1.to_string(), sha256.clone()]);
        // No digest, or none a digest spelling reads: none.
        assert!(got("k 2020 http://a/ text/html 200 - - - 1 2 f").is_empty());
        assert!(got(r#"k 2020 {"digest": "not one"}"#).is_empty());
        assert!(got("k 2020 a b").is_empty());
        // A string equal to a member's name is no member; spacing as any.
        let tricky = r#"k 2020 {"mime": "digest", "digest":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB"}"#;
        assert_eq!(got(tricky), vec![sha1]);
        let escaped = r#"k 2020 {"url": "http://a/?\"digest\": \"x", "digest" : "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB"}"#;
        assert_eq!(got(escaped), vec![sha1]);
    }

    #[test]
    fn digest_keys_follow_puts_deletes_replacements_and_folds() {
        let dir = tempfile::tempdir().unwrap();
        let d = Delta::open(dir.path()).unwrap();
        let a = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB";
        let b = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA";
        let line = |key: &str, off: &str, digest: &str| {
            format!("{key} 2020 http://x/ text/html 200 {digest} - - 1 {off} f.warc.gz")
        };
        let put = |key: &str, off: &str, digest: &str| Op::Put {
            id: capture_id(key.as_bytes(), b"2020", b"f.warc.gz", off.as_bytes()),
            line: line(key, off, digest).into_bytes(),
        };
        let da = Digest::parse(a).unwrap();
        let db = Digest::parse(b).unwrap();
        let lines = |d: &Delta, digest: &Digest| -> Vec<String> {
            d.digest_lines(digest)
                .unwrap()
                .into_iter()
                .map(|l| String::from_utf8(l).unwrap())
                .collect()
        };
        d.apply::<String>(vec![Ok(put("k1", "1", a)), Ok(put("k2", "2", a))])
            .unwrap();
        assert_eq!(lines(&d, &da), vec![line("k1", "1", a), line("k2", "2", a)]);
        // Replaced by a line of another digest, and deleted.
        d.apply::<String>(vec![
            Ok(put("k1", "1", b)),
            Ok(Op::Delete {
                id: capture_id(b"k2", b"2020", b"f.warc.gz", b"2"),
            }),
        ])
        .unwrap();
        assert!(lines(&d, &da).is_empty());
        assert_eq!(lines(&d, &db), vec![line("k1", "1", b)]);
        // Folded: the keys go on in `dig_base`, for the bases' lines.
        let frozen = d.freeze().unwrap().unwrap();
        let base = frozen.base_path(".cdx");
        std::fs::write(&base, format!("{}\n", line("k1", "1", b))).unwrap();
        let view = frozen.commit(&[], &base).unwrap();
        drop(d);
        let id1 = capture_id(b"k1", b"2020", b"f.warc.gz", b"1");
        assert_eq!(view.newest(&id1).unwrap(), None);
        assert!(view.digest_ids(&db).unwrap().contains(&id1));
        // Deleted after the fold: its newest entry says so.
        view.apply::<String>(vec![Ok(Op::Delete { id: id1.clone() })])
            .unwrap();
        assert_eq!(view.newest(&id1).unwrap(), Some(None));
    }

    /// A delta made without a digest index writes no digest keys, says
    /// so when asked for a digest's captures, keeps the choice when
    /// opened again with the default, and otherwise reads, takes writes
    /// and folds as one with the index; one made before the choice
    /// existed (no `digests` meta key) keeps indexing.
    #[test]
    fn a_delta_made_without_digest_index_keeps_none_for_its_life() {
        let dir = tempfile::tempdir().unwrap();
        let digest = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB";
        let line = format!("k1 2020 http://x/ text/html 200 {digest} - - 1 1 f.warc.gz");
        let op = || Op::Put {
            id: capture_id(b"k1", b"2020", b"f.warc.gz", b"1"),
            line: line.clone().into_bytes(),
        };
        let off = || Settings {
            digests: Digests::Off,
            ..Settings::default()
        };
        let d = Delta::open_with(dir.path(), off()).unwrap();
        assert_eq!(d.digests(), Digests::Off);
        d.apply::<String>(vec![Ok(op())]).unwrap();
        let dig = d.store.digs_from(0);
        assert_eq!(dig.len(), 1);
        assert!(dig[0].is_empty().unwrap(), "no digest key is written");
        let err = d.digest_ids(&Digest::parse(digest).unwrap()).unwrap_err();
        assert!(
            err.to_string()
                .contains("no index of its captures' digests"),
            "{err}"
        );
        assert_eq!(all(&d, "k1", MatchType::Exact), vec![line.clone()]);
        drop((d, dig));
        let d = Delta::open(dir.path()).unwrap();
        assert_eq!(d.digests(), Digests::Off, "the choice is the store's");
        // A fold copies no digest keys, and the view reads the base.
        let frozen = d.freeze().unwrap().unwrap();
        let base = frozen.base_path(".cdx");
        std::fs::write(&base, format!("{line}\n")).unwrap();
        let view = frozen.commit(&[], &base).unwrap();
        drop(d);
        assert!(view.store.dig_bases().iter().all(|p| p.is_empty().unwrap()));
        assert_eq!(view.store.meta.get("dig_bases").unwrap(), None);
        assert_eq!(view.digests(), Digests::Off);
        drop(view);
        // A store with the index, reopened asking for none, keeps it.
        let other = tempfile::tempdir().unwrap();
        Delta::open(other.path())
            .unwrap()
            .apply::<String>(vec![Ok(op())])
            .unwrap();
        let d = Delta::open_with(other.path(), off()).unwrap();
        assert_eq!(d.digests(), Digests::On);
        let ids = d.digest_ids(&Digest::parse(digest).unwrap()).unwrap();
        assert_eq!(ids, vec![capture_id(b"k1", b"2020", b"f.warc.gz", b"1")]);
    }

    /// A delta's keyspace and meta partition opened as fjall's, to lay
    /// out a store as an older version left it.
    fn raw_store(dir: &Path) -> (fjall::Keyspace, PartitionHandle) {
        let ks = fjall::Config::new(dir.join(STORE_DIR)).open().unwrap();
        let meta = ks
            .open_partition("meta", PartitionCreateOptions::default())
            .unwrap();
        (ks, meta)
    }

    /// Makes an empty store of `layout` in `dir`, as a build of it did.
    fn empty_store(dir: &Path, layout: &[u8]) {
        let (ks, meta) = raw_store(dir);
        let mut b = ks.batch();
        b.insert(&meta, "layout", layout);
        b.insert(&meta, "current", 0u64.to_le_bytes());
        b.insert(&meta, "floor", 0u64.to_le_bytes());
        b.commit().unwrap();
        ks.persist(PersistMode::SyncAll).unwrap();
    }

    fn is_leveled(h: &PartitionHandle) -> bool {
        matches!(
            h.config.compaction_strategy,
            fjall::compaction::Strategy::Leveled(_)
        )
    }

    /// A store whose generation was made size-tiered (as every one was
    /// before generations were leveled) opens, reads and takes writes as
    /// before; the generation a fold starts is leveled.
    #[test]
    fn a_size_tiered_generation_reads_on_and_the_next_is_leveled() {
        let dir = tempfile::tempdir().unwrap();
        let old = [
            put("com,a)/", "20200101000000", "10", "{\"v\": 1}"),
            put("com,a)/b", "20200101000000", "20", "{}"),
            put("com,b)/", "20200101000000", "30", "{}"),
        ];
        {
            let (ks, meta) = raw_store(dir.path());
            let tiered = || dig_options(8 << 20);
            let gen = ks.open_partition(&gen_name(0), tiered()).unwrap();
            ks.open_partition(&dig_name(0), tiered()).unwrap();
            ks.open_partition("dig_base", tiered()).unwrap();
            assert!(!is_leveled(&gen));
            let mut b = ks.batch();
            b.insert(&meta, "layout", LAYOUT_2);
            b.insert(&meta, "current", 0u64.to_le_bytes());
            b.insert(&meta, "floor", 0u64.to_le_bytes());
            for op in &old {
                let Op::Put { id, line } = op else {
                    unreachable!()
                };
                b.insert(&gen, id.clone(), entry_of(id, line, EntryForm::Headless));
            }
            b.commit().unwrap();
            // Written out to a table, as an older server left it.
            gen.rotate_memtable_and_wait().unwrap();
            ks.persist(PersistMode::SyncAll).unwrap();
        }
        let d = Delta::open(dir.path()).unwrap();
        assert!(!is_leveled(&d.store.current().0));
        assert_eq!(
            all(&d, "com,a)/", MatchType::Prefix),
            vec![
                "com,a)/ 20200101000000 {\"v\": 1}",
                "com,a)/b 20200101000000 {}"
            ]
        );
        d.apply::<String>(vec![Ok(put("com,a)/", "20200101000000", "10", "{}"))])
            .unwrap();
        assert_eq!(
            all(&d, "com,a)/", MatchType::Exact),
            vec!["com,a)/ 20200101000000 {}"]
        );
        let frozen = d.freeze().unwrap().expect("a generation to freeze");
        assert!(is_leveled(&d.store.current().0));
        drop(frozen);
        drop(d);
        let d = Delta::open(dir.path()).unwrap();
        assert_eq!(all(&d, "com,b)/", MatchType::Exact).len(), 1);
    }

    /// Ranges bounded above (exact, prefix, host, domain, a prefix
    /// ending in 0xFF bytes) over many tables of one generation read
    /// what a model of the lines holds.
    #[test]
    fn bounded_ranges_over_many_tables_read_as_the_lines_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let d = Delta::open(dir.path()).unwrap();
        let keys: [&[u8]; 8] = [
            b"com,a)/",
            b"com,a)/\xff",
            b"com,a)/\xff\xffx",
            b"com,a)/b",
            b"com,a,www)/",
            b"com,ab)/",
            b"com,b)/",
            b"org,a)/",
        ];
        let mut model = std::collections::BTreeMap::new();
        for round in 0..6u32 {
            let mut ops = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                if (i as u32 + round) % 3 == 0 {
                    continue;
                }
                let dt = format!("2020010100000{round}");
                let id = capture_id(k, dt.as_bytes(), b"f.warc.gz", i.to_string().as_bytes());
                let line = [k, format!(" {dt} {{\"r\": {round}}}").as_bytes()].concat();
                model.insert(id.clone(), line.clone());
                ops.push(Ok(Op::Put { id, line }));
            }
            d.apply::<String>(ops).unwrap();
            // Each round a table of its own.
            d.store.current().0.rotate_memtable_and_wait().unwrap();
        }
        let expect_for = |r: &KeyRange| {
            let mut v: Vec<Vec<u8>> = model
                .iter()
                .filter(|(id, _)| id[..] >= r.start[..] && !r.is_past(id))
                .map(|(_, l)| l.clone())
                .collect();
            v.sort();
            v
        };
        let prefix_ff = KeyRange::new(b"com,a)/\xff\xff", MatchType::Prefix);
        let mut ranges = vec![prefix_ff];
        for k in ["com,a)/", "com,a)/b", "com,b)/", "org,a)/", "com,a,www)/"] {
            for m in [
                MatchType::Exact,
                MatchType::Prefix,
                MatchType::Host,
                MatchType::Domain,
            ] {
                ranges.push(KeyRange::new(k.as_bytes(), m));
            }
        }
        for r in &ranges {
            let got: Vec<Vec<u8>> = d.lines(r).unwrap().map(|l| l.unwrap()).collect();
            assert_eq!(
                got,
                expect_for(r),
                "{:?}",
                String::from_utf8_lossy(&r.start)
            );
            let held = d.hider(r).unwrap().lines().unwrap();
            let got: Vec<Vec<u8>> = held.map(|l| l.unwrap()).collect();
            assert_eq!(got, expect_for(r));
        }
        assert!(d.store.current().0.segment_count() >= 2);
    }

    /// The tables a compaction retires stay on disk while the store
    /// keeps them and go once it has let them go (`Store::kept`,
    /// `reap`), and a read meanwhile sees the merged table's lines.
    #[test]
    fn tables_a_compaction_retires_are_deleted_once_let_go() {
        let dir = tempfile::tempdir().unwrap();
        // No compactions but the one made here.
        let d = Delta::open_with(dir.path(), Settings::one_job()).unwrap();
        let gen = d.store.current().0;
        for round in 0..4 {
            let ops = (0..200).map(|i| {
                Ok::<_, String>(put(
                    &format!("com,a)/p{i:03}"),
                    &format!("2020010100000{round}"),
                    "1",
                    "{}",
                ))
            });
            d.apply(ops).unwrap();
            gen.rotate_memtable_and_wait().unwrap();
            d.store.measure();
        }
        // Each round's table is kept by the store.
        let tables = || {
            let mut names: Vec<String> = std::fs::read_dir(
                dir.path()
                    .join(STORE_DIR)
                    .join("partitions")
                    .join(gen_name(0))
                    .join("segments"),
            )
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
            names.sort();
            names
        };
        let before = tables();
        assert!(before.len() >= 4, "{before:?}");
        gen.major_compact().unwrap();
        assert_eq!(gen.segment_count(), 1);
        // Retired but still kept: on disk.
        assert!(before.iter().all(|t| tables().contains(t)));
        assert_eq!(all(&d, "com,a)/p007", MatchType::Exact).len(), 4);
        // Let go at the next write, deleted on the reaping thread.
        d.apply([Ok::<_, String>(put("com,b)/", "20200101000000", "1", "{}"))])
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while tables().len() != 1 {
            assert!(std::time::Instant::now() < deadline, "{:?}", tables());
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!before.contains(&tables()[0]));
        assert_eq!(all(&d, "com,a)/p007", MatchType::Exact).len(), 4);
    }

    /// A store made now spells its digest keys with the digest's bytes
    /// first; one of layout 3 goes on with the algorithm's name first,
    /// through folds, and finds the captures of both.
    #[test]
    fn digest_keys_keep_the_form_their_store_was_made_with() {
        let line = |i: usize| {
            format!(
                "k{i} 2020 http://x/ text/html 200 {}{:A>31} - - 1 {i} f.warc.gz",
                (b'A' + (i % 2) as u8) as char,
                ""
            )
        };
        let op = |i: usize| -> Result<Op, String> {
            let id = capture_id(
                format!("k{i}").as_bytes(),
                b"2020",
                b"f.warc.gz",
                i.to_string().as_bytes(),
            );
            Ok(Op::Put {
                id,
                line: line(i).into_bytes(),
            })
        };
        let digest = |i: usize| {
            Digest::parse(&format!("{}{:A>31}", (b'A' + (i % 2) as u8) as char, "")).unwrap()
        };
        let first_bytes = |d: &Delta| -> Vec<Vec<u8>> {
            let (_, dig) = d.store.current();
            dig.iter().map(|kv| kv.unwrap().0[..6].to_vec()).collect()
        };
        let named = |i: usize| {
            b"sha1:"
                .iter()
                .copied()
                .chain([digest(i).bytes()[0]])
                .collect::<Vec<u8>>()
        };
        let tagged = |i: usize| [&[1u8][..], &digest(i).bytes()[..5]].concat();

        let made = tempfile::tempdir().unwrap();
        let d = Delta::open(made.path()).unwrap();
        d.apply((0..4).map(op)).unwrap();
        assert_eq!(d.store.meta.get("layout").unwrap().as_deref(), Some(LAYOUT));
        let mut want = vec![tagged(0), tagged(0), tagged(1), tagged(1)];
        want.sort();
        assert_eq!(first_bytes(&d), want);

        let old = tempfile::tempdir().unwrap();
        empty_store(old.path(), LAYOUT_3);
        let d = Delta::open(old.path()).unwrap();
        d.apply((0..2).map(op)).unwrap();
        assert_eq!(first_bytes(&d), vec![named(0), named(1)]);
        let frozen = d.freeze().unwrap().unwrap();
        let base = old.path().join("base-1.cdxj");
        std::fs::write(&base, "").unwrap();
        let d = frozen.commit(&[], &base).unwrap();
        d.apply((2..4).map(op)).unwrap();
        assert_eq!(first_bytes(&d), vec![named(2), named(3)]);
        assert_eq!(
            d.store.meta.get("layout").unwrap().as_deref(),
            Some(LAYOUT_3)
        );
        drop(d);
        let d = Delta::open(old.path()).unwrap();
        for i in 0..2 {
            let ids = d.digest_ids(&digest(i)).unwrap();
            assert_eq!(ids.len(), 2, "digest {i}: {ids:?}");
        }
    }

    /// A store made now leaves a CDX line's ` offset filename` out of
    /// its entry, as the id holds them, keeps a base32 SHA-1 digest as
    /// its bytes, and gives the line back whole; one of layout 4 keeps
    /// writing entries its builds read, through a fold too. Lines whose
    /// tail is not the id's keep it, and other digests stay as spelled.
    #[test]
    fn entries_leave_out_the_tail_the_id_holds_in_stores_made_so() {
        let cdx = |i: usize| {
            format!(
                "k{i} 2020 http://x/{i} text/html 200 {:A>32} - - 1 {i} f.warc.gz",
                ""
            )
        };
        let lines: Vec<(Vec<u8>, String)> = vec![
            (capture_id(b"k0", b"2020", b"f.warc.gz", b"0"), cdx(0)),
            // CDXJ: the tail is JSON.
            (
                capture_id(b"k1", b"2020", b"f.warc.gz", b"1"),
                r#"k1 2020 {"url": "http://x/1", "offset": "1", "filename": "f.warc.gz"}"#.into(),
            ),
            // Another file than the id's, and a line not keyed as its id.
            (capture_id(b"k2", b"2020", b"g.warc.gz", b"2"), cdx(2)),
            (capture_id(b"k3", b"2021", b"f.warc.gz", b"3"), cdx(3)),
            // An offset that ends the filename's column, and none.
            (
                capture_id(b"k4", b"2020", b"z", b"1"),
                "k4 2020 - 11 z".into(),
            ),
            (capture_id(b"k5", b"2020", b"", b""), "k5 2020 -".into()),
            // Digests spelled otherwise: lower case, named, short, not
            // base32, and one whose bytes hold spaces and newlines.
            (
                capture_id(b"k6", b"2020", b"f", b"6"),
                format!("k6 2020 u m 200 {:a>32} - - 1 6 f", ""),
            ),
            (
                capture_id(b"k7", b"2020", b"f", b"7"),
                format!("k7 2020 u m 200 sha1:{:A>32} - - 1 7 f", ""),
            ),
            (
                capture_id(b"k8", b"2020", b"f", b"8"),
                "k8 2020 u m 200 AAAA - - 1 8 f".into(),
            ),
            (
                capture_id(b"k9", b"2020", b"f", b"9"),
                format!("k9 2020 u m 200 {:1>32} - - 1 9 f", ""),
            ),
            (
                capture_id(b"ka", b"2020", b"f", b"10"),
                format!(
                    "ka 2020 u m 200 {} - - 1 10 f",
                    data_encoding::BASE32_NOPAD.encode(b" \n \n \n \n \n \n \n \n \n \n")
                ),
            ),
            // A digest column last.
            (
                capture_id(b"kb", b"2020", b"f", b"11"),
                format!("kb 2020 u m 200 {:B>32} 11 f", ""),
            ),
        ];
        let tags = |form| -> Vec<u8> {
            lines
                .iter()
                .map(|(id, line)| {
                    let entry = entry_of(id, line.as_bytes(), form);
                    assert_eq!(line_of(id, &entry).unwrap(), line.as_bytes(), "{line}");
                    entry[0]
                })
                .collect()
        };
        assert_eq!(tags(EntryForm::Short), [3, 1, 1, 0, 1, 1, 2, 2, 2, 2, 3, 3]);
        assert_eq!(
            tags(EntryForm::Headless),
            [1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1]
        );
        assert_eq!(line_parts(b"k\0f\0", b"", &mut [0; 32]), None);
        // A damaged entry reads as its bytes, without a panic.
        let damaged = [3, b'u', b' ', b'm', b' ', b'2', b' ', 0, 1];
        let line = line_of(b"k 2020\x00f\x001", &damaged).unwrap();
        assert_eq!(line, damaged);

        let ops = || {
            lines.iter().map(|(id, line)| {
                Ok::<_, String>(Op::Put {
                    id: id.clone(),
                    line: line.clone().into_bytes(),
                })
            })
        };
        let stored = |d: &Delta| -> Vec<u8> {
            let (gen, _) = d.store.current();
            gen.iter().map(|kv| kv.unwrap().1[0]).collect()
        };
        let mut want: Vec<String> = lines.iter().map(|(_, l)| l.clone()).collect();
        want.sort();
        let made = tempfile::tempdir().unwrap();
        let d = Delta::open(made.path()).unwrap();
        d.apply(ops()).unwrap();
        assert_eq!(stored(&d), [3, 1, 1, 0, 1, 1, 2, 2, 2, 2, 3, 3]);
        assert_eq!(all(&d, "", MatchType::Prefix), want);

        let old = tempfile::tempdir().unwrap();
        empty_store(old.path(), LAYOUT_4);
        let d = Delta::open(old.path()).unwrap();
        d.apply(ops()).unwrap();
        assert_eq!(stored(&d), [1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
        let frozen = d.freeze().unwrap().unwrap();
        let base = old.path().join("base-1.cdxj");
        std::fs::write(&base, "").unwrap();
        let d = frozen.commit(&[], &base).unwrap();
        d.apply(ops()).unwrap();
        assert_eq!(stored(&d), [1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(all(&d, "", MatchType::Prefix), want);
        drop(d);
        let d = Delta::open(old.path()).unwrap();
        assert_eq!(
            d.store.meta.get("layout").unwrap().as_deref(),
            Some(LAYOUT_4)
        );
    }

    /// A fold keeps its frozen generations' digest partitions as the
    /// bases' (of a store of layout 2 too, whose `dig_base` folds wrote
    /// into), past [`DIG_BASES`] merges them all into one and drops
    /// those, and records what it did; a merged partition a fold made
    /// but did not record is dropped at open. Every capture stays found
    /// by digest, after a reopen too.
    #[test]
    fn folds_keep_digest_partitions_and_merge_them_past_a_count() {
        let dir = tempfile::tempdir().unwrap();
        let digest = |i: usize| format!("{:A>31}{}", "", (b'A' + (i % 3) as u8) as char);
        let line = |i: usize| {
            format!(
                "k{i} 2020 http://x/ text/html 200 {} - - 1 {i} f.warc.gz",
                digest(i)
            )
        };
        let id = |i: usize| {
            capture_id(
                format!("k{i}").as_bytes(),
                b"2020",
                b"f.warc.gz",
                i.to_string().as_bytes(),
            )
        };
        let op = |i: usize| -> Result<Op, String> {
            Ok(Op::Put {
                id: id(i),
                line: line(i).into_bytes(),
            })
        };
        // A store of layout 2: captures 0-2 folded into its `dig_base`.
        {
            let (ks, meta) = raw_store(dir.path());
            let old = ks.open_partition(DIG_BASE_2, dig_options(8 << 20)).unwrap();
            let mut b = ks.batch();
            b.insert(&meta, "layout", LAYOUT_2);
            b.insert(&meta, "current", 1u64.to_le_bytes());
            b.insert(&meta, "floor", 1u64.to_le_bytes());
            for i in 0..3 {
                for_each_digest(line(i).as_bytes(), |d| {
                    b.insert(
                        &old,
                        [digest_prefix(&d, DigestKeys::Named), id(i)].concat(),
                        b"",
                    );
                });
            }
            b.commit().unwrap();
            ks.persist(PersistMode::SyncAll).unwrap();
        }
        let all_found = |d: &Delta, upto: usize| {
            for i in 0..upto {
                let ids = d.digest_ids(&Digest::parse(&digest(i)).unwrap()).unwrap();
                assert!(ids.contains(&id(i)), "capture {i}");
            }
        };
        let names = |d: &Delta| -> Vec<String> {
            d.store
                .dig_bases()
                .iter()
                .map(|p| p.name.to_string())
                .collect()
        };
        let mut d = Delta::open(dir.path()).unwrap();
        all_found(&d, 3);
        // Folds up to generation 7 keep theirs, the one up to 8 merges.
        for gen in 1..=8usize {
            d.apply((3 * gen..3 * gen + 3).map(op)).unwrap();
            let frozen = d.freeze().unwrap().unwrap();
            let base = frozen.base_path(".cdx");
            std::fs::write(&base, "").unwrap();
            let view = frozen.commit(&[], &base).unwrap();
            drop(std::mem::replace(&mut d, view));
            all_found(&d, 3 * gen + 3);
            let want: Vec<String> = if gen < DIG_BASES {
                std::iter::once(DIG_BASE_2.to_string())
                    .chain((1..=gen as u64).map(dig_name))
                    .collect()
            } else {
                vec![dig_base_name(8)]
            };
            assert_eq!(names(&d), want);
            let on_disk = |n: &str| dir.path().join("store/partitions").join(n).exists();
            assert!(want.iter().all(|n| on_disk(n)), "{want:?}");
            if gen == DIG_BASES {
                // Dropped once idle; their files go once fjall's journals
                // that wrote to them are let go (at the latest, an open).
                let st = || d.store.state.read().unwrap();
                assert!(eventually(|| st().retired_digs.is_empty()));
            }
        }
        drop(d);
        let mut d = Delta::open(dir.path()).unwrap();
        let on_disk = |n: &str| dir.path().join("store/partitions").join(n).exists();
        assert!(!on_disk(DIG_BASE_2) && !on_disk("dig_7"));
        assert_eq!(names(&d), vec![dig_base_name(8)]);
        all_found(&d, 27);
        let meta = |d: &Delta, k: &str| d.store.meta.get(k).unwrap().map(|v| v.to_vec());
        assert_eq!(meta(&d, "layout"), Some(LAYOUT_3.to_vec()));
        // Seven folds keep theirs again; the eighth's merged partition,
        // made and not recorded, is dropped at open.
        for gen in 9..=16usize {
            d.apply((3 * gen..3 * gen + 3).map(op)).unwrap();
            let frozen = d.freeze().unwrap().unwrap();
            frozen.index_digests().unwrap();
            if gen == 16 {
                assert!(dir.path().join("store/partitions/dig_base_16").exists());
                std::mem::forget(frozen);
                break;
            }
            let base = frozen.base_path(".cdx");
            std::fs::write(&base, "").unwrap();
            let view = frozen.commit(&[], &base).unwrap();
            drop(std::mem::replace(&mut d, view));
        }
        drop(d);
        let d = Delta::open(dir.path()).unwrap();
        let st = || d.store.state.read().unwrap();
        assert!(eventually(|| st().retired_digs.is_empty()));
        assert!(!dir.path().join("store/partitions/dig_base_16").exists());
        assert_eq!(names(&d).len(), DIG_BASES);
        all_found(&d, 51);
        // A merge given up before the commit: dropped at once.
        let frozen = d.freeze().unwrap().unwrap();
        frozen.index_digests().unwrap();
        assert!(dir.path().join("store/partitions/dig_base_17").exists());
        drop(frozen);
        assert!(!dir.path().join("store/partitions/dig_base_17").exists());
        all_found(&d, 51);
    }

    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), target).unwrap();
            }
        }
    }

    /// A store left by a crash after a fold, before its generations were
    /// dropped: what they hold in a sealed journal comes back as
    /// memtables fjall writes out as it opens. They are dropped once
    /// written out, not under the flush (which would panic fjall's flush
    /// worker and fail every later write).
    #[test]
    fn a_folded_generation_written_out_as_the_store_opens_is_dropped_after() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let d = Delta::open(&a).unwrap();
        let rest = "{\"url\": \"http://example.com/\", \"digest\": \"sha1:AAAA\"}";
        for chunk in 0..20 {
            let ops = (0..10_000).map(|i| {
                let key = format!("com,example)/{chunk}/{i}");
                Ok::<_, String>(put(&key, "20200101000000", &i.to_string(), rest))
            });
            d.apply(ops).unwrap();
        }
        // Generation 0 frozen (the fold given up here: its commit is
        // made below). A rotation of the current generation's memtable
        // seals the journal generation 0 wrote to.
        drop(d.freeze().unwrap().unwrap());
        d.apply(vec![Ok::<_, String>(put("com,b)/", "2020", "1", rest))])
            .unwrap();
        let current = d.store.current().0;
        current.rotate_memtable().unwrap();
        assert!(eventually(|| current.tree.sealed_memtable_count() == 0));
        let gen0 = d.store.state.read().unwrap().gens[&0].clone();
        assert!(gen0.tree.active_memtable_size() > 0);
        assert_eq!(gen0.tree.sealed_memtable_count(), 0);
        drop(gen0);
        // The store as a crash leaves it, with the fold's floor recorded
        // (by a keyspace that writes nothing out, so that generation 0
        // stays in the sealed journal alone).
        copy_dir(&a, &b);
        drop((current, d));
        {
            let ks = fjall::Config::new(b.join(STORE_DIR))
                .flush_workers(0)
                .open()
                .unwrap();
            let meta = ks
                .open_partition("meta", PartitionCreateOptions::default())
                .unwrap();
            meta.insert("floor", 1u64.to_le_bytes()).unwrap();
            ks.persist(PersistMode::SyncAll).unwrap();
        }
        let e = Delta::open(&b).unwrap();
        // Writes go through, and generation 0 goes once written out.
        let mut i = 0;
        assert!(eventually(|| {
            i += 1;
            let key = format!("com,c)/{i}");
            e.apply(vec![Ok::<_, String>(put(&key, "2020", "1", rest))])
                .unwrap();
            !e.store.state.read().unwrap().gens.contains_key(&0)
        }));
        assert_eq!(e.generations(), vec![1]);
        assert_eq!(e.counts().unwrap().0, 1 + i);
    }

    #[test]
    fn a_second_process_or_an_old_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("delta.redb"), b"redb").unwrap();
        let e = Delta::open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("older layout"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let _d = Delta::open(dir.path()).unwrap();
        // Another open file description of the lock: as another process.
        let f = std::fs::File::open(dir.path().join(LOCK_FILE)).unwrap();
        assert!(
            rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err()
        );
    }
}

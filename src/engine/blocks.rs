//! The cache of ZipNum blocks, shared by every cluster a process reads
//! (and so by the server's threads).
//!
//! ```text
//! cache() ─► BlockCache   16 parts for blocks, 16 for pieces, each a map
//!                         + a clock ring under a Mutex
//!   claim(key)            the block held, or the right to read it: one
//!                         reader per block, others asking wait for it
//!   get_block / get_piece a hit marks the entry used (one more lap kept)
//!   insert_block / _piece evicts entries not used since the hand passed
//!   counts()              hits, misses, waits, blocks, pieces, bytes held
//! held_only(f)            runs f with block reads refused (is_refused):
//!                         what can be answered from the cache alone
//! ```
//!
//! A block is held packed ([`Packed`]: zstd in chunks of 32 KiB, a lookup
//! inflates one), about a fifth of its text, so that the cache holds five
//! times the blocks it would hold inflated. A key is a cluster (numbered
//! when opened, [`cluster_id`]), a shard and a byte offset: what the
//! secondary index names a block by; and, for a piece, the key range it
//! answers ([`range_tag`]). A piece is the lines of one lookup's range
//! within one block (with the line that ends it), inflated: a thousandth
//! of a block, so that the lookups real traffic repeats (a Zipf-shaped
//! long tail of URLs, spread over every block) cost no inflating at all.
//! Pieces get a quarter of the capacity, in parts of their own, so that
//! the blocks a miss brings in do not push them out. The size is set once
//! by the front end ([`set_capacity`], `--cache SIZE`), else
//! [`default_capacity`]; 0 turns it off, and blocks are then inflated a
//! piece at a time as a scan reads them, no further than it needs.
//!
//! [`Packed`]: super::packed::Packed

use std::cell::Cell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use super::packed::Packed;

/// Locks: lookups on different blocks rarely wait for one another.
const PARTS: usize = 16;

/// The share of the capacity pieces get: a quarter.
const PIECE_SHARE_SHIFT: u32 = 2;

/// What a block is known by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub cluster: u64,
    pub shard: String,
    pub offset: u64,
    /// Empty for the whole block; a range's [`range_tag`] for a piece.
    pub range: Vec<u8>,
}

/// The bytes that tell a key range from any other in a piece's [`Key`]:
/// the length of its start, its start, the kind of its upper bound and
/// that bound's bytes.
pub fn range_tag(range: &crate::sorted::KeyRange) -> Vec<u8> {
    use crate::sorted::Upper;
    let mut tag = Vec::with_capacity(range.start.len() + 8);
    tag.extend_from_slice(&(range.start.len() as u32).to_le_bytes());
    tag.extend_from_slice(&range.start);
    match &range.upper {
        Upper::Exact => tag.push(1),
        Upper::Prefix => tag.push(2),
        Upper::Before(b) => {
            tag.push(3);
            tag.extend_from_slice(b);
        }
        Upper::Unbounded => tag.push(4),
    }
    tag
}

/// What an entry holds.
#[derive(Clone)]
enum Held {
    Block(Arc<Packed>),
    Piece(Arc<[u8]>),
}

impl Held {
    fn len(&self) -> usize {
        match self {
            Held::Block(b) => b.size(),
            Held::Piece(p) => p.len(),
        }
    }
}

struct Entry {
    held: Held,
    used: bool,
}

#[derive(Default)]
struct Part {
    map: HashMap<Key, Entry>,
    /// The clock: keys in insertion order, the hand at the front.
    ring: VecDeque<Key>,
    bytes: u64,
}

/// Blocks and pieces, up to a number of bytes (see the module doc).
pub struct BlockCache {
    parts: Vec<Mutex<Part>>,
    capacity: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    waits: AtomicU64,
    /// Blocks being read, each by the thread that claimed it; the others
    /// asking for one wait on `read`, which is told when any is done.
    reading: Mutex<HashSet<Key>>,
    read: Condvar,
}

/// Hit and miss counts and what is held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub capacity: u64,
    /// Blocks and pieces found held (a block another thread was reading
    /// and that was waited for is one).
    pub hits: u64,
    /// Blocks read and inflated.
    pub misses: u64,
    /// Blocks waited for while another thread read them.
    pub waits: u64,
    pub blocks: u64,
    pub pieces: u64,
    pub bytes: u64,
}

/// What [`BlockCache::claim`] gives.
pub enum Claim<'c> {
    /// The block, held.
    Held(Arc<Packed>),
    /// The block is not held and no one else is reading it: the caller
    /// reads it (and inserts it); others asking for it meanwhile wait
    /// until this is dropped.
    Read(Reading<'c>),
}

/// The right to read one block (see [`Claim::Read`]); dropping it, once
/// the block is inserted or its read has failed, wakes those waiting.
pub struct Reading<'c> {
    cache: &'c BlockCache,
    key: Key,
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        lock(&self.cache.reading).remove(&self.key);
        self.cache.read.notify_all();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BlockCache {
    /// A cache of up to `capacity` bytes (0 = off).
    pub fn new(capacity: u64) -> BlockCache {
        BlockCache {
            parts: (0..2 * PARTS).map(|_| Mutex::default()).collect(),
            capacity: AtomicU64::new(capacity),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            waits: AtomicU64::new(0),
            reading: Mutex::default(),
            read: Condvar::new(),
        }
    }

    /// Whether blocks are kept at all.
    pub fn is_on(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    fn part(&self, key: &Key) -> &Mutex<Part> {
        use std::hash::BuildHasher;
        let h = rustc_hash::FxBuildHasher.hash_one(key);
        let pieces = if key.range.is_empty() { 0 } else { PARTS };
        &self.parts[pieces + (h as usize >> 7) % PARTS]
    }

    /// The bytes one part of `key`'s kind may hold.
    fn share(&self, key: &Key) -> u64 {
        let capacity = self.capacity.load(Ordering::Relaxed);
        let pieces = capacity >> PIECE_SHARE_SHIFT;
        match key.range.is_empty() {
            true => (capacity - pieces) / PARTS as u64,
            false => pieces / PARTS as u64,
        }
    }

    /// What an entry costs: what it holds, and its key twice (in the map
    /// and in the ring), which for a piece of a kilobyte is not
    /// negligible.
    fn size(key: &Key, held: &Held) -> u64 {
        let key_size = std::mem::size_of::<Key>() + key.shard.len() + key.range.len();
        (held.len() + std::mem::size_of::<Entry>() + 2 * key_size) as u64
    }

    fn count(&self, found: bool) {
        let count = if found { &self.hits } else { &self.misses };
        count.fetch_add(1, Ordering::Relaxed);
    }

    /// The block, if held (counted as a hit or a miss).
    pub fn get_block(&self, key: &Key) -> Option<Arc<Packed>> {
        let found = self.peek_block(key);
        self.count(found.is_some());
        found
    }

    /// The block if held (a hit); else, if another thread is reading it,
    /// the block once it has (a hit and a wait); else the right to read
    /// it (a miss), so that a block many threads want at once is read
    /// and inflated once.
    pub fn claim(&self, key: &Key) -> Claim<'_> {
        if let Some(b) = self.peek_block(key) {
            self.count(true);
            return Claim::Held(b);
        }
        let mut reading = lock(&self.reading);
        let mut waited = false;
        loop {
            // Looked for again under the lock: a reader inserts its block
            // before it gives up its claim.
            if let Some(b) = self.peek_block(key) {
                self.count(true);
                if waited {
                    self.waits.fetch_add(1, Ordering::Relaxed);
                }
                return Claim::Held(b);
            }
            if !reading.contains(key) {
                // Not held, not being read (or its reader failed or did
                // not keep it): read it here.
                reading.insert(key.clone());
                self.count(false);
                return Claim::Read(Reading {
                    cache: self,
                    key: key.clone(),
                });
            }
            waited = true;
            reading = self.read.wait(reading).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The block, if held, counted as a hit; one not held is not counted
    /// (for a reader that will not read it: see [`held_only`]).
    pub fn held_block(&self, key: &Key) -> Option<Arc<Packed>> {
        let found = self.peek_block(key)?;
        self.count(true);
        Some(found)
    }

    /// The piece, if held, marked used; a piece found is counted as a
    /// hit (no block read), one not found is not counted (the block is
    /// asked for next).
    pub fn get_piece(&self, key: &Key) -> Option<Arc<[u8]>> {
        let found = match self.peek(key)? {
            Held::Piece(p) => p,
            Held::Block(_) => return None,
        };
        self.count(true);
        Some(found)
    }

    fn peek_block(&self, key: &Key) -> Option<Arc<Packed>> {
        match self.peek(key)? {
            Held::Block(b) => Some(b),
            Held::Piece(_) => None,
        }
    }

    fn peek(&self, key: &Key) -> Option<Held> {
        let mut part = lock(self.part(key));
        let e = part.map.get_mut(key)?;
        e.used = true;
        Some(e.held.clone())
    }

    /// Whether the block is held (neither a hit nor a miss).
    pub fn contains(&self, key: &Key) -> bool {
        lock(self.part(key)).map.contains_key(key)
    }

    /// Keeps a block (see [`BlockCache::insert`]).
    pub fn insert_block(&self, key: Key, block: Arc<Packed>) {
        self.insert(key, Held::Block(block));
    }

    /// Keeps a piece (see [`BlockCache::insert`]).
    pub fn insert_piece(&self, key: Key, text: Arc<[u8]>) {
        self.insert(key, Held::Piece(text));
    }

    /// Keeps an entry, evicting others to stay within the part's share
    /// of the capacity; one larger than that share is not kept.
    fn insert(&self, key: Key, held: Held) {
        let share = self.share(&key);
        let size = Self::size(&key, &held);
        if size > share {
            return;
        }
        let mut part = lock(self.part(&key));
        let part = &mut *part;
        if part.map.contains_key(&key) {
            return;
        }
        while part.bytes + size > share {
            let Some(k) = part.ring.pop_front() else {
                break;
            };
            let keep = match part.map.get_mut(&k) {
                Some(e) if e.used => {
                    e.used = false;
                    true
                }
                _ => false,
            };
            if keep {
                part.ring.push_back(k);
            } else if let Some(e) = part.map.remove(&k) {
                part.bytes -= Self::size(&k, &e.held);
            }
        }
        part.bytes += size;
        part.ring.push_back(key.clone());
        part.map.insert(key, Entry { held, used: false });
    }

    /// Hits, misses and what is held now.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            capacity: self.capacity.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            waits: self.waits.load(Ordering::Relaxed),
            ..Counts::default()
        };
        for (i, p) in self.parts.iter().enumerate() {
            let p = lock(p);
            match i < PARTS {
                true => c.blocks += p.map.len() as u64,
                false => c.pieces += p.map.len() as u64,
            }
            c.bytes += p.bytes;
        }
        c
    }

    /// Changes the size; a smaller one empties the cache.
    fn resize(&self, capacity: u64) {
        if capacity < self.capacity.swap(capacity, Ordering::Relaxed) {
            for p in &self.parts {
                *lock(p) = Part::default();
            }
        }
    }
}

thread_local! {
    /// Whether this thread runs [`held_only`], and whether a read was
    /// refused.
    static HELD_ONLY: Cell<Mode> = const { Cell::new(Mode::Off) };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    /// In [`held_only`], with this many blocks taken.
    On(u32),
    Refused,
}

/// Blocks (or pieces) a [`held_only`] run may take: past them it is
/// refused too, so that what runs there stays short (a lookup reads one
/// block, seldom two; a scan of many cached blocks is no quick answer).
pub const HELD_ONLY_BLOCKS: u32 = 4;

/// Runs `f` with every read of a block refused (the cluster reader fails
/// with `WouldBlock` where it would read or inflate one, or take more
/// than [`HELD_ONLY_BLOCKS`]): `Some` of what it gives when nothing was
/// refused, `None` when something was (and what it gave is to be thrown
/// away). A server answers this way, on the thread that took the
/// request, what the cache holds, and hands the rest to a thread that
/// may wait.
pub fn held_only<T>(f: impl FnOnce() -> T) -> Option<T> {
    struct Reset(Mode);
    impl Drop for Reset {
        fn drop(&mut self) {
            HELD_ONLY.set(self.0);
        }
    }
    let _reset = Reset(HELD_ONLY.replace(Mode::On(0)));
    let out = f();
    (HELD_ONLY.get() != Mode::Refused).then_some(out)
}

/// Whether this thread is in [`held_only`] and something has been
/// refused: whatever it does next is thrown away.
pub fn is_refused() -> bool {
    HELD_ONLY.get() == Mode::Refused
}

/// Whether this thread is in [`held_only`].
pub(crate) fn is_held_only() -> bool {
    HELD_ONLY.get() != Mode::Off
}

/// Called where a block would be read: `true` (and the read is to fail)
/// within [`held_only`].
pub(crate) fn refuse_read() -> bool {
    match HELD_ONLY.get() {
        Mode::Off => false,
        Mode::On(_) | Mode::Refused => {
            HELD_ONLY.set(Mode::Refused);
            true
        }
    }
}

/// Called where a scan takes its next block, held or not: `false` (and
/// the scan is to fail) within [`held_only`] past [`HELD_ONLY_BLOCKS`].
pub(crate) fn may_take() -> bool {
    match HELD_ONLY.get() {
        Mode::Off => true,
        Mode::On(n) if n < HELD_ONLY_BLOCKS => {
            HELD_ONLY.set(Mode::On(n + 1));
            true
        }
        Mode::On(_) | Mode::Refused => {
            HELD_ONLY.set(Mode::Refused);
            false
        }
    }
}

/// The process's cache.
pub fn cache() -> &'static BlockCache {
    static CACHE: OnceLock<BlockCache> = OnceLock::new();
    CACHE.get_or_init(|| BlockCache::new(default_capacity()))
}

/// Sets the size of the process's cache (`--cache SIZE`; 0 = off).
pub fn set_capacity(bytes: u64) {
    cache().resize(bytes);
}

/// A sixteenth of the machine's memory, at most 4 GiB (256 MiB when the
/// memory cannot be told): room for a Zipf-shaped replay workload's hot
/// blocks beside the maps and the server.
pub fn default_capacity() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib << 10)
    });
    match total {
        Some(bytes) => (bytes / 16).min(4 << 30),
        None => 256 << 20,
    }
}

/// A number for a newly opened cluster, the first part of its blocks'
/// keys.
pub fn cluster_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// `SIZE` as `--cache` takes it: bytes, or with a `K`, `M`, `G` suffix
/// (powers of 1024; `0` = off).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let mul = match c.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("{s:?}: the size ends in K, M, G or T, or is bytes")),
            };
            (&t[..i], mul)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (bytes, or a number and K, M or G)"))?;
    n.checked_mul(mul)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(offset: u64) -> Key {
        Key {
            cluster: 1,
            shard: "s".into(),
            offset,
            range: Vec::new(),
        }
    }

    fn packed(n: usize) -> Arc<Packed> {
        let text: Vec<u8> = (0..n).map(|i| b"abcdefgh\n"[i % 9]).collect();
        Arc::new(Packed::new(&text).unwrap())
    }

    #[test]
    fn blocks_are_kept_within_the_capacity() {
        let c = BlockCache::new(PARTS as u64 * 1000);
        for i in 0..200 {
            c.insert_block(key(i), packed(100));
        }
        let counts = c.counts();
        assert!(counts.bytes <= counts.capacity, "{counts:?}");
        assert!(counts.blocks > 0 && counts.blocks < 200, "{counts:?}");
    }

    #[test]
    fn a_used_block_outlives_unused_ones() {
        // One part's worth: every key is in some part; find two in one.
        // Blocks get three quarters: room for three and a half a part.
        let block = packed(100);
        let share = 7 * BlockCache::size(&key(0), &Held::Block(block.clone())) / 2;
        let c = BlockCache::new((PARTS as u64 * share * 4).div_ceil(3));
        let part_of = |k: &Key| c.part(k) as *const _ as usize;
        let keys: Vec<Key> = (0..1000).map(key).collect();
        let same: Vec<&Key> = keys
            .iter()
            .filter(|k| part_of(k) == part_of(&keys[0]))
            .collect();
        c.insert_block(same[0].clone(), block.clone());
        c.insert_block(same[1].clone(), block.clone());
        assert!(c.get_block(same[0]).is_some());
        // Room for three: the unused one goes first.
        c.insert_block(same[2].clone(), block.clone());
        c.insert_block(same[3].clone(), block.clone());
        assert!(c.get_block(same[0]).is_some());
        assert!(c.get_block(same[1]).is_none());
        let counts = c.counts();
        assert_eq!((counts.hits, counts.misses), (2, 1));
    }

    #[test]
    fn blocks_coming_in_do_not_push_out_pieces() {
        let c = BlockCache::new(PARTS as u64 * 4000);
        let piece = Key {
            range: b"com,a)/".to_vec(),
            ..key(0)
        };
        c.insert_piece(piece.clone(), vec![b'p'; 50].into());
        // Blocks enough to fill every part many times over.
        for i in 0..2000 {
            c.insert_block(key(i), packed(500));
        }
        assert_eq!(c.get_piece(&piece).as_deref(), Some(&[b'p'; 50][..]));
        let counts = c.counts();
        assert_eq!(counts.pieces, 1);
        assert!(
            counts.blocks > 0 && counts.bytes <= counts.capacity,
            "{counts:?}"
        );
        // A piece found is a hit; one not found is counted as nothing.
        assert!(c
            .get_piece(&Key {
                range: b"x".to_vec(),
                ..key(0)
            })
            .is_none());
        assert_eq!((c.counts().hits, c.counts().misses), (1, 0));
    }

    #[test]
    fn an_empty_cache_keeps_nothing() {
        let c = BlockCache::new(0);
        c.insert_block(key(0), packed(10));
        assert!(!c.is_on());
        assert!(c.get_block(&key(0)).is_none());
    }

    #[test]
    fn a_block_wanted_by_many_threads_is_read_once() {
        let c = BlockCache::new(1 << 20);
        let reads = AtomicU64::new(0);
        let block = packed(1000);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| match c.claim(&key(7)) {
                    Claim::Held(b) => assert_eq!(b.text().unwrap(), block.text().unwrap()),
                    Claim::Read(claim) => {
                        reads.fetch_add(1, Ordering::Relaxed);
                        // Long enough for the others to ask meanwhile.
                        std::thread::sleep(std::time::Duration::from_millis(50));
                        c.insert_block(key(7), block.clone());
                        drop(claim);
                    }
                });
            }
        });
        assert_eq!(reads.load(Ordering::Relaxed), 1);
        let counts = c.counts();
        assert_eq!((counts.hits, counts.misses), (7, 1), "{counts:?}");
        assert!(counts.waits >= 1, "{counts:?}");
    }

    #[test]
    fn a_failed_read_hands_the_claim_on() {
        let c = BlockCache::new(1 << 20);
        let first = match c.claim(&key(1)) {
            Claim::Read(r) => r,
            Claim::Held(_) => panic!("nothing is held yet"),
        };
        std::thread::scope(|s| {
            let waiter = s.spawn(|| matches!(c.claim(&key(1)), Claim::Read(_)));
            std::thread::sleep(std::time::Duration::from_millis(20));
            // Failed: nothing inserted; the waiter reads it itself.
            drop(first);
            assert!(waiter.join().unwrap());
        });
        assert_eq!(c.counts().misses, 2);
    }

    #[test]
    fn held_only_tells_whether_a_read_was_refused() {
        assert_eq!(held_only(|| 5), Some(5));
        assert!(!refuse_read());
        let out = held_only(|| {
            assert!(!is_refused());
            assert!(refuse_read());
            assert!(is_refused());
        });
        assert_eq!(out, None);
        // Outside, nothing is refused.
        assert!(!refuse_read() && !is_refused());
        // Blocks past the budget are refused too.
        let taken = held_only(|| (0..HELD_ONLY_BLOCKS).all(|_| may_take()));
        assert_eq!(taken, Some(true));
        assert_eq!(
            held_only(|| (0..=HELD_ONLY_BLOCKS).all(|_| may_take())),
            None
        );
        assert!((0..100).all(|_| may_take()));
    }

    #[test]
    fn sizes_take_suffixes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert!(parse_size("12Q").is_err());
        assert!(parse_size("M").is_err());
    }
}

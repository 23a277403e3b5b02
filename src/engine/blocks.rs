//! The cache of inflated ZipNum blocks, shared by every cluster a
//! process reads (and so by the server's threads).
//!
//! ```text
//! cache() ─► BlockCache   16 parts for whole blocks, 16 for pieces, each
//!                         a map + a clock ring under a Mutex
//!   get(key)              a hit marks the entry used (one more lap kept)
//!   insert(key, text)     evicts entries not used since the hand last passed
//!   counts()              hits, misses, blocks, pieces and bytes held
//! ```
//!
//! A key is a cluster (numbered when opened, [`cluster_id`]), a shard and
//! a byte offset: what the secondary index names a block by; and, for a
//! piece, the key range it answers ([`range_tag`]). A piece is the lines
//! of one lookup's range within one block (with the line that ends it):
//! a thousandth of a block, so that the lookups real traffic repeats (a
//! Zipf-shaped long tail of URLs, spread over every block) all stay held
//! where whole blocks for them would need the inflated size of the whole
//! cluster. Pieces get a quarter of the capacity, in parts of their own,
//! so that the blocks a miss brings in do not push them out. The size is
//! set once by the front end ([`set_capacity`], `--cache SIZE`), else
//! [`default_capacity`]; 0 turns it off, and blocks are then inflated a
//! piece at a time as a scan reads them, no further than it needs.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

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

struct Entry {
    text: Arc<[u8]>,
    used: bool,
}

#[derive(Default)]
struct Part {
    map: HashMap<Key, Entry>,
    /// The clock: keys in insertion order, the hand at the front.
    ring: VecDeque<Key>,
    bytes: u64,
}

/// Inflated blocks, up to a number of bytes (see the module doc).
pub struct BlockCache {
    parts: Vec<Mutex<Part>>,
    capacity: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// Hit and miss counts and what is held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub capacity: u64,
    pub hits: u64,
    pub misses: u64,
    pub blocks: u64,
    pub pieces: u64,
    pub bytes: u64,
}

impl BlockCache {
    /// A cache of up to `capacity` bytes (0 = off).
    pub fn new(capacity: u64) -> BlockCache {
        BlockCache {
            parts: (0..2 * PARTS).map(|_| Mutex::default()).collect(),
            capacity: AtomicU64::new(capacity),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
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

    /// What an entry costs: its text, and its key twice (in the map and
    /// in the ring), which for a piece of a kilobyte is not negligible.
    fn size(key: &Key, text: &[u8]) -> u64 {
        let key_size = std::mem::size_of::<Key>() + key.shard.len() + key.range.len();
        (text.len() + std::mem::size_of::<Entry>() + 2 * key_size) as u64
    }

    /// The block, if held (counted as a hit or a miss).
    pub fn get(&self, key: &Key) -> Option<Arc<[u8]>> {
        let found = self.peek(key);
        let count = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        count.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// The entry, if held, marked used; a piece found is counted as a
    /// hit (no block read), one not found is not counted (the block is
    /// asked for next).
    pub fn get_piece(&self, key: &Key) -> Option<Arc<[u8]>> {
        let found = self.peek(key);
        if found.is_some() {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    fn peek(&self, key: &Key) -> Option<Arc<[u8]>> {
        let mut part = self.part(key).lock().unwrap_or_else(|e| e.into_inner());
        let e = part.map.get_mut(key)?;
        e.used = true;
        Some(e.text.clone())
    }

    /// Whether the block is held (neither a hit nor a miss).
    pub fn contains(&self, key: &Key) -> bool {
        let part = self.part(key).lock().unwrap_or_else(|e| e.into_inner());
        part.map.contains_key(key)
    }

    /// Keeps a block, evicting others to stay within the part's share
    /// of the capacity; a block larger than that share is not kept.
    pub fn insert(&self, key: Key, text: Arc<[u8]>) {
        let share = self.share(&key);
        let size = Self::size(&key, &text);
        if size > share {
            return;
        }
        let mut part = self.part(&key).lock().unwrap_or_else(|e| e.into_inner());
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
                part.bytes -= Self::size(&k, &e.text);
            }
        }
        part.bytes += size;
        part.ring.push_back(key.clone());
        part.map.insert(key, Entry { text, used: false });
    }

    /// Hits, misses and what is held now.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            capacity: self.capacity.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            ..Counts::default()
        };
        for (i, p) in self.parts.iter().enumerate() {
            let p = p.lock().unwrap_or_else(|e| e.into_inner());
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
                *p.lock().unwrap_or_else(|e| e.into_inner()) = Part::default();
            }
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

    #[test]
    fn blocks_are_kept_within_the_capacity() {
        let c = BlockCache::new(PARTS as u64 * 1000);
        for i in 0..200 {
            c.insert(key(i), vec![b'x'; 100].into());
        }
        let counts = c.counts();
        assert!(counts.bytes <= counts.capacity, "{counts:?}");
        assert!(counts.blocks > 0 && counts.blocks < 200, "{counts:?}");
    }

    #[test]
    fn a_used_block_outlives_unused_ones() {
        // One part's worth: every key is in some part; find two in one.
        // Blocks get three quarters: room for three and a half a part.
        let block: Arc<[u8]> = vec![b'x'; 100].into();
        let share = 7 * BlockCache::size(&key(0), &block) / 2;
        let c = BlockCache::new((PARTS as u64 * share * 4).div_ceil(3));
        let part_of = |k: &Key| c.part(k) as *const _ as usize;
        let keys: Vec<Key> = (0..1000).map(key).collect();
        let same: Vec<&Key> = keys
            .iter()
            .filter(|k| part_of(k) == part_of(&keys[0]))
            .collect();
        c.insert(same[0].clone(), block.clone());
        c.insert(same[1].clone(), block.clone());
        assert!(c.get(same[0]).is_some());
        // Room for three: the unused one goes first.
        c.insert(same[2].clone(), block.clone());
        c.insert(same[3].clone(), block.clone());
        assert!(c.get(same[0]).is_some());
        assert!(c.get(same[1]).is_none());
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
        c.insert(piece.clone(), vec![b'p'; 50].into());
        // Blocks enough to fill every part many times over.
        for i in 0..2000 {
            c.insert(key(i), vec![b'x'; 500].into());
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
        c.insert(key(0), vec![1u8; 10].into());
        assert!(!c.is_on());
        assert!(c.get(&key(0)).is_none());
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

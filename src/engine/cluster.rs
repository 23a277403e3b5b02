//! Where a ZipNum cluster's secondary index and shards are, and the
//! reading of its blocks, local or remote, through the block cache.
//!
//! ```text
//! local_shards(idx) / open_remote(url)   url = of an .idx or of a directory
//!   │         (index.idx, else cluster.idx), read whole
//!   ├─► .loc beside the idx: each shard's locations, tried in order
//!   │   (paths relative to it, or URLs); none (Common Crawl's layout):
//!   │   the shard column names the file beside the idx
//!   ▼
//! Shards ─► Reader (one per scan): FetchBlock for sorted::zipnum
//!             piece held for this range and block ─► it, shared
//!             block held ─► the inflated block, shared
//!             miss ─► local pread, or one ranged GET (the next blocks of
//!                     a scan already in flight) ─► inflated whole into
//!                     the cache, or handed over as gzip when it is off
//!             a lookup's block read or found ─► its piece into the cache
//! ```
//!
//! A piece ([`piece`]) is the block's lines from the first in the range
//! to the first past it: what [`BlockLines`] reads of the whole block, so
//! that reading it instead gives the same lines.
//!
//! [`BlockLines`]: crate::sorted::zipnum::BlockLines

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use super::blocks::{self, Claim, Key};
use super::packed::Packed;
use super::remote::{self, Object, Pending};
use crate::sorted::zipnum::{decompress_block, parse_loc, Block, BlockBytes, FetchBlock};
use crate::sorted::{KeyRange, Search};

/// Blocks of a remote shard a range scan keeps in flight ahead of the
/// one it reads.
pub const READ_AHEAD: usize = 4;

/// A scan of more blocks than this (a `cat`, a large prefix) takes the
/// blocks the cache holds but adds none: it would only push out the
/// blocks that lookups come back to.
pub const SCAN_KEEPS_UP_TO: usize = 32;

/// A piece larger than this is not kept: a range that covers much of a
/// block is served as well by the block.
pub const PIECE_UP_TO: usize = 64 << 10;

/// The names a cluster's secondary index goes by in its directory:
/// pywb's and ours, then Common Crawl's.
pub const IDX_NAMES: [&str; 2] = ["index.idx", "cluster.idx"];

/// Whether `spec` names a remote cluster (its directory, or its idx).
pub fn is_remote(spec: &Path) -> bool {
    spec.to_str().is_some_and(remote::is_url)
}

/// A cluster's shards: where each is, opened on first read.
pub struct Shards {
    /// The first part of this cluster's keys in the block cache.
    id: u64,
    /// The directory shard names and relative locations resolve against.
    base: Base,
    /// The `.loc` file's locations by shard; `None` without one.
    loc: Option<HashMap<String, Vec<String>>>,
    /// Locations made so far, by shard.
    made: RwLock<HashMap<String, Arc<[Location]>>>,
}

enum Base {
    Dir(PathBuf),
    Url(String),
}

/// One place a shard can be read from.
enum Location {
    /// A local file, opened once, read with positioned reads by every
    /// thread.
    File {
        path: PathBuf,
        file: OnceLock<File>,
    },
    Remote(Object),
}

/// The shards of the cluster whose local idx is `idx`: the `.loc`
/// beside it (`X.idx` -> `X.loc`), else the files the shard column names
/// beside the idx.
pub fn local_shards(idx: &Path) -> io::Result<Shards> {
    let loc_path = idx.with_extension("loc");
    let loc = match std::fs::read_to_string(&loc_path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let dir = idx.parent().unwrap_or(Path::new("")).to_path_buf();
    Ok(Shards::new(Base::Dir(dir), loc.as_deref()))
}

/// The shards of a cluster with one shard, `shard`, read from the file
/// at `path` (a WACZ package whose index blocks sit inside it).
pub fn one_file(shard: &str, path: &Path) -> Shards {
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let mut shards = Shards::new(Base::Dir(dir), None);
    shards.loc = Some(HashMap::from([(
        shard.to_string(),
        vec![path.to_string_lossy().into_owned()],
    )]));
    shards
}

/// A remote cluster: the URL and bytes of its idx (`url` itself when it
/// names an `.idx`, else the first of [`IDX_NAMES`] in that directory)
/// and its shards (through the `.loc` beside the idx, else beside it).
pub fn open_remote(url: &str) -> io::Result<(String, Vec<u8>, Shards)> {
    let (idx_url, idx) = remote_idx(url)?;
    let loc_url = match idx_url.strip_suffix(".idx") {
        Some(stem) => format!("{stem}.loc"),
        None => format!("{idx_url}.loc"),
    };
    let loc = match Object::open(&loc_url).and_then(|o| o.read_all()) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(e),
    };
    let base = Base::Url(remote::parent(&idx_url).to_string());
    let shards = Shards::new(base, loc.as_deref());
    Ok((idx_url, idx, shards))
}

fn remote_idx(url: &str) -> io::Result<(String, Vec<u8>)> {
    let candidates: Vec<String> = match url.ends_with(".idx") {
        true => vec![url.to_string()],
        false => IDX_NAMES.iter().map(|n| remote::join(url, n)).collect(),
    };
    let mut missing = None;
    for c in &candidates {
        match Object::open(c).and_then(|o| o.read_all()) {
            Ok(bytes) => return Ok((c.clone(), bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(match candidates.len() {
        1 => missing.unwrap_or_else(|| io::Error::other("not found")),
        _ => io::Error::new(
            io::ErrorKind::NotFound,
            format!("neither {} is there", IDX_NAMES.join(" nor ")),
        ),
    })
}

impl Shards {
    fn new(base: Base, loc: Option<&str>) -> Shards {
        Shards {
            id: blocks::cluster_id(),
            base,
            loc: loc.map(|text| parse_loc(text).into_iter().collect()),
            made: RwLock::default(),
        }
    }

    /// A reader of this cluster's blocks, for one scan of `blocks`
    /// blocks.
    pub fn reader(&self, blocks: usize) -> Reader<'_> {
        Reader {
            shards: self,
            ahead: VecDeque::new(),
            read: 0,
            keep: blocks <= SCAN_KEEPS_UP_TO,
            range: None,
        }
    }

    /// A reader for one scan of `blocks` blocks within `range`, which
    /// keeps and takes the pieces of `range` in the blocks (see the
    /// module doc).
    pub fn range_reader<'r>(&'r self, blocks: usize, range: &'r KeyRange) -> Reader<'r> {
        Reader {
            range: Some(range),
            ..self.reader(blocks)
        }
    }

    /// Where `shard` can be read, in the order to try.
    fn locations(&self, shard: &str) -> io::Result<Arc<[Location]>> {
        if let Some(l) = self
            .made
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(shard)
        {
            return Ok(l.clone());
        }
        let names: Vec<&str> = match &self.loc {
            Some(loc) => loc
                .get(shard)
                .ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!("shard {shard:?} is not in the .loc file"),
                    )
                })?
                .iter()
                .map(String::as_str)
                .collect(),
            None => vec![shard],
        };
        if names.is_empty() {
            return Err(io::Error::other(
                "the .loc file gives no location for this shard",
            ));
        }
        let mut made = Vec::with_capacity(names.len());
        for name in names {
            made.push(match (&self.base, remote::is_url(name)) {
                (_, true) => Location::Remote(Object::open(name)?),
                (Base::Url(dir), false) => {
                    Location::Remote(Object::open(&remote::join(dir, name))?)
                }
                (Base::Dir(dir), false) => Location::File {
                    path: dir.join(name),
                    file: OnceLock::new(),
                },
            });
        }
        let made: Arc<[Location]> = made.into();
        self.made
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(shard.to_string(), made.clone());
        Ok(made)
    }
}

/// Reads `length` bytes at `offset` from the first location that answers
/// (pywb's rule for several locations per shard).
fn read_first(locations: &[Location], offset: u64, length: u64) -> io::Result<Vec<u8>> {
    let mut last = None;
    for l in locations {
        match l.read(offset, length) {
            Ok(bytes) => return Ok(bytes),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no location")))
}

impl Location {
    fn read(&self, offset: u64, length: u64) -> io::Result<Vec<u8>> {
        match self {
            Location::Remote(o) => o.read_range(offset, length),
            Location::File { path, file } => {
                use std::os::unix::fs::FileExt;
                let named =
                    |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
                let f = match file.get() {
                    Some(f) => f,
                    None => {
                        let opened = File::open(path).map_err(named)?;
                        file.get_or_init(|| opened)
                    }
                };
                let mut buf = vec![0; usize::try_from(length).map_err(io::Error::other)?];
                f.read_exact_at(&mut buf, offset).map_err(named)?;
                Ok(buf)
            }
        }
    }
}

/// Reads the blocks of one scan (see the module doc).
pub struct Reader<'c> {
    shards: &'c Shards,
    /// Requests in flight for the blocks the scan reads next.
    ahead: VecDeque<(String, u64, Pending)>,
    /// Blocks read so far: a scan past its first block reads ahead.
    read: usize,
    /// Whether blocks read are added to the cache.
    keep: bool,
    /// The range the scan reads, if its pieces are kept.
    range: Option<&'c KeyRange>,
}

/// The piece of the inflated `text` that a scan of `range` reads: from
/// the first line at or after the range's start to the first line past
/// it (kept: it tells the scan to stop), or to the block's end. `None`
/// when it would be larger than [`PIECE_UP_TO`] or the block cannot be
/// bisected.
pub fn piece(text: &[u8], range: &KeyRange) -> Option<std::ops::Range<usize>> {
    let start = Search::new(text).lower_bound(&range.start).ok()?;
    let mut at = start;
    while at < text.len() {
        let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
        let line = &text[at..end];
        at = (end + 1).min(text.len());
        if at - start > PIECE_UP_TO {
            return None;
        }
        if line >= &range.start[..] && range.is_past(line) {
            // Up to the line past the range, without its LF.
            return Some(start..end);
        }
    }
    Some(start..text.len())
}

impl Reader<'_> {
    fn key(&self, block: &Block) -> Key {
        Key {
            cluster: self.shards.id,
            shard: block.shard.clone(),
            offset: block.offset,
            range: Vec::new(),
        }
    }

    /// The key of `block`'s piece for this scan's range, if it keeps
    /// pieces.
    fn piece_key(&self, key: &Key) -> Option<Key> {
        let range = self.range.filter(|_| self.keep)?;
        Some(Key {
            range: blocks::range_tag(range),
            ..key.clone()
        })
    }

    /// Keeps the piece of `text` this scan's range reads, if it has one.
    fn keep_piece(&self, key: &Key, text: &[u8]) {
        let (Some(range), Some(key)) = (self.range, self.piece_key(key)) else {
            return;
        };
        if let Some(at) = piece(text, range) {
            blocks::cache().insert_piece(key, text[at].into());
        }
    }

    /// A held block as this scan reads it: the piece of its range (kept),
    /// unpacked from the chunks that hold it, or the whole text.
    fn unpack(&self, key: &Key, packed: &Packed) -> io::Result<BlockBytes> {
        let unreadable = |e: io::Error| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a cached block cannot be unpacked: {e}"),
            )
        };
        if let (Some(range), Some(piece_key)) = (self.range, self.piece_key(key)) {
            if let Some(text) = packed.covering(range, PIECE_UP_TO).map_err(unreadable)? {
                if let Some(at) = piece(&text, range) {
                    let text: Arc<[u8]> = text[at].into();
                    blocks::cache().insert_piece(piece_key, text.clone());
                    return Ok(BlockBytes::Text(text));
                }
            }
        }
        Ok(BlockBytes::Text(packed.text().map_err(unreadable)?.into()))
    }

    /// The gzip bytes of `block`: from the request in flight for it, or
    /// read now.
    fn gzip(&mut self, block: &Block) -> io::Result<Vec<u8>> {
        let locations = self.shards.locations(&block.shard)?;
        let queued = self
            .ahead
            .iter()
            .position(|(s, o, _)| *s == block.shard && *o == block.offset);
        if let Some(at) = queued {
            // Requests in flight for blocks the scan skipped are dropped.
            self.ahead.drain(..at);
            if let Some((_, _, pending)) = self.ahead.pop_front() {
                // It asked the first location; the others get their turn
                // (retries of the first are behind it already).
                return match (pending.wait(), locations.get(1..)) {
                    (Ok(bytes), _) => Ok(bytes),
                    (Err(e), None | Some([])) => Err(e),
                    (Err(_), Some(rest)) => read_first(rest, block.offset, block.length),
                };
            }
        }
        read_first(&locations, block.offset, block.length)
    }

    /// Starts requests for the next remote blocks not cached nor in
    /// flight, up to [`READ_AHEAD`].
    fn read_ahead(&mut self, ahead: &[Block]) {
        let cache = blocks::cache();
        for b in ahead.iter().take(READ_AHEAD) {
            if self.ahead.len() >= READ_AHEAD {
                break;
            }
            let queued = self
                .ahead
                .iter()
                .any(|(s, o, _)| *s == b.shard && *o == b.offset);
            if queued || (cache.is_on() && cache.contains(&self.key(b))) {
                continue;
            }
            let Ok(locations) = self.shards.locations(&b.shard) else {
                break;
            };
            let Some(Location::Remote(o)) = locations.first() else {
                break;
            };
            let pending = o.start_range(b.offset, b.length);
            self.ahead.push_back((b.shard.clone(), b.offset, pending));
        }
    }
}

/// The error of a read refused within [`blocks::held_only`].
fn refused() -> io::Error {
    io::Error::new(io::ErrorKind::WouldBlock, "the block is not held")
}

impl FetchBlock for Reader<'_> {
    fn fetch(&mut self, block: &Block, ahead: &[Block]) -> io::Result<BlockBytes> {
        if !blocks::may_take() {
            return Err(refused());
        }
        let cache = blocks::cache();
        let key = self.key(block);
        let on = cache.is_on();
        if let Some(piece_key) = self.piece_key(&key).filter(|_| on) {
            if let Some(text) = cache.get_piece(&piece_key) {
                self.read += 1;
                return Ok(BlockBytes::Text(text));
            }
        }
        let mut claim = None;
        if on && self.keep && !blocks::is_held_only() {
            match cache.claim(&key) {
                Claim::Held(packed) => {
                    self.read += 1;
                    return self.unpack(&key, &packed);
                }
                Claim::Read(r) => claim = Some(r),
            }
        } else if on {
            let held = match self.keep {
                true => cache.held_block(&key),
                false => cache.get_block(&key),
            };
            if let Some(packed) = held {
                self.read += 1;
                return self.unpack(&key, &packed);
            }
        }
        if blocks::refuse_read() {
            return Err(refused());
        }
        self.read += 1;
        // An exact lookup reads one block, seldom two: reading ahead
        // starts with a scan's second block, so that a lookup costs one
        // request.
        if self.read > 1 {
            self.read_ahead(ahead);
        }
        let gzip = self.gzip(block)?;
        let Some(claim) = claim else {
            return Ok(BlockBytes::Gzip(gzip));
        };
        // Whole, at once: cheaper than a piece at a time, and the next
        // lookup of the block inflates a chunk of it at most.
        let text: Arc<[u8]> = decompress_block(&gzip, &block.shard, block.offset)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
            .into();
        self.keep_piece(&key, &text);
        // A block that cannot be packed is answered from, not kept.
        if let Ok(packed) = Packed::new(&text) {
            cache.insert_block(key, Arc::new(packed));
        }
        // Those waiting for it find it now.
        drop(claim);
        Ok(BlockBytes::Text(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sorted::zipnum::BlockLines;
    use crate::sorted::MatchType;

    /// Gives each block as the same inflated text, whole or as the piece
    /// of the range.
    fn lines_of(text: &Arc<[u8]>, range: &KeyRange, as_piece: bool) -> Vec<Vec<u8>> {
        let block = Block {
            first_key: Vec::new(),
            shard: "s".into(),
            offset: 0,
            length: 0,
            block_no: 1,
        };
        let given: Arc<[u8]> = match as_piece {
            true => text[piece(text, range).expect("a piece")].into(),
            false => text.clone(),
        };
        let fetch = |_: &Block| Ok(BlockBytes::Text(given.clone()));
        struct F<G>(G);
        impl<G: FnMut(&Block) -> io::Result<BlockBytes>> FetchBlock for F<G> {
            fn fetch(&mut self, block: &Block, _: &[Block]) -> io::Result<BlockBytes> {
                (self.0)(block)
            }
        }
        BlockLines::new(vec![block], range, F(fetch))
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn a_piece_reads_as_its_whole_block() {
        // Keys repeated, a key at the block's start and end, empty and
        // last lines without LF.
        let lines: Vec<String> = (0..40).map(|i| format!("k{:02} {i:03}", i / 3)).collect();
        let text: Arc<[u8]> = lines.join("\n").into_bytes().into();
        let keys = (0..15)
            .map(|k| format!("k{k:02}"))
            .chain(["a".into(), "z".into()]);
        for key in keys {
            for m in [MatchType::Exact, MatchType::Prefix] {
                let range = KeyRange::new(key.as_bytes(), m);
                let whole = lines_of(&text, &range, false);
                assert_eq!(lines_of(&text, &range, true), whole, "{key} {m:?}");
                let at = piece(&text, &range).unwrap();
                // The piece is the range's lines and the line that ends it.
                assert!(at.len() <= whole.iter().map(|l| l.len() + 1).sum::<usize>() + 8);
            }
        }
        let prefix = KeyRange::new(b"k", MatchType::Prefix);
        assert_eq!(piece(&text, &prefix), Some(0..text.len()));
    }

    #[test]
    fn a_large_piece_is_not_kept() {
        let text = b"k 1\n".repeat(PIECE_UP_TO / 2);
        let range = KeyRange::new(b"k", MatchType::Exact);
        assert_eq!(piece(&text, &range), None);
        let range = KeyRange::new(b"j", MatchType::Exact);
        assert_eq!(piece(&text, &range), Some(0..3));
    }
}

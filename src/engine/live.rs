//! The delta of a live collection: captures added and deleted while the
//! server runs, kept in an embedded crash-safe store beside the immutable
//! bases (sorted files, ZipNum clusters) that the rest of the engine
//! reads in place.
//!
//! The store is [redb](https://docs.rs/redb) (a copy-on-write B-tree in
//! one file, ACID, every commit fsync'd with `Durability::Immediate`);
//! this module is the only one that uses it. One collection's delta is one
//! directory holding `delta.redb` with three tables:
//!
//! ```text
//! lines   line bytes -> ()      the added lines, in byte order (the scan
//!                               a query merges with its bases)
//! ids     capture id -> line    which line holds a capture, so that
//!                               posting it again replaces it
//! hidden  capture id -> ()      tombstones: captures of the bases that a
//!                               delete (or a newer line) hides
//! ```
//!
//! A capture id is `key datetime\0filename\0offset` ([`capture_id`]):
//! OutbackCDX's identity of a capture, laid out so that its first bytes
//! sort as a line does and a query's [`KeyRange`] finds the tombstones of
//! its range. What a line's fields are is the caller's business: this
//! module stores lines and ids as bytes.
//!
//! Every batch ([`Delta::apply`]) is one write transaction, committed
//! durably before `apply` returns: after a crash a batch is all there or
//! not at all. redb spills a transaction's dirty pages to its file past
//! its write cache, so a batch of any size takes bounded memory. Reads
//! ([`Delta::lines`], [`Delta::hider`]) see the last commit and never
//! wait for a writer.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use redb::{Database, Durability, TableDefinition};

use crate::sorted::KeyRange;
pub use crate::ukvs::post::capture_id;

const LINES: TableDefinition<&[u8], ()> = TableDefinition::new("lines");
const IDS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("ids");
const HIDDEN: TableDefinition<&[u8], ()> = TableDefinition::new("hidden");

/// The store's file in a collection's delta directory.
pub const STORE_FILE: &str = "delta.redb";

/// Memory the store may use for its page caches (a tenth of it for the
/// pages a write transaction has not yet written out).
const CACHE_BYTES: usize = 64 << 20;

/// A delta that cannot be opened, read or written: the store's file, what
/// failed and the store's message (a full disk, a file another process
/// holds open, a damaged file to restore from a copy).
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

/// One collection's delta.
pub struct Delta {
    db: Database,
    path: PathBuf,
}

impl std::fmt::Debug for Delta {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delta").field("path", &self.path).finish()
    }
}

impl Delta {
    /// Opens the delta in `dir`, creating the directory and an empty
    /// store when there is none. A store left by a crash opens as of its
    /// last commit (redb repairs it when opened).
    pub fn open(dir: &Path) -> Result<Delta, Error> {
        let path = dir.join(STORE_FILE);
        let fail = |what, e: &dyn std::fmt::Display| Error {
            path: path.clone(),
            what,
            message: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| fail("cannot create the directory", &e))?;
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(&path)
            .map_err(|e| fail("cannot open the store", &e))?;
        let delta = Delta { db, path };
        // The tables exist from the start, so a reader never meets a
        // store without them.
        delta.write(|_, _, _| Ok(()))?;
        Ok(delta)
    }

    /// Where the store is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&self, what: &'static str, e: impl std::fmt::Display) -> Error {
        Error {
            path: self.path.clone(),
            what,
            message: e.to_string(),
        }
    }

    /// Runs `f` in one write transaction over the three tables and
    /// commits durably.
    fn write<T>(
        &self,
        f: impl FnOnce(
            &mut redb::Table<&[u8], ()>,
            &mut redb::Table<&[u8], &[u8]>,
            &mut redb::Table<&[u8], ()>,
        ) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut tx = self
            .db
            .begin_write()
            .map_err(|e| self.fail("cannot start a write", e))?;
        tx.set_durability(Durability::Immediate);
        let out = {
            let mut lines = tx
                .open_table(LINES)
                .map_err(|e| self.fail("cannot open its lines", e))?;
            let mut ids = tx
                .open_table(IDS)
                .map_err(|e| self.fail("cannot open its ids", e))?;
            let mut hidden = tx
                .open_table(HIDDEN)
                .map_err(|e| self.fail("cannot open its tombstones", e))?;
            f(&mut lines, &mut ids, &mut hidden)?
        };
        tx.commit().map_err(|e| self.fail("cannot commit", e))?;
        Ok(out)
    }

    /// Applies a batch in one transaction, durable when this returns `Ok`;
    /// on an error (of the store, or one `ops` yields) nothing of the
    /// batch is kept. Gives how many ops were applied.
    pub fn apply<E: std::fmt::Display>(
        &self,
        ops: impl IntoIterator<Item = Result<Op, E>>,
    ) -> Result<u64, Error> {
        self.write(|lines, ids, hidden| {
            let mut n = 0u64;
            for op in ops {
                let op = op.map_err(|e| self.fail("cannot read the batch", e))?;
                let id = match &op {
                    Op::Put { id, .. } | Op::Delete { id } => id.as_slice(),
                };
                let old = ids
                    .remove(id)
                    .map_err(|e| self.fail("cannot write", e))?
                    .map(|g| g.value().to_vec());
                if let Some(old) = old {
                    lines
                        .remove(old.as_slice())
                        .map_err(|e| self.fail("cannot write", e))?;
                }
                if let Op::Put { line, .. } = &op {
                    ids.insert(id, line.as_slice())
                        .map_err(|e| self.fail("cannot write", e))?;
                    lines
                        .insert(line.as_slice(), ())
                        .map_err(|e| self.fail("cannot write", e))?;
                }
                hidden
                    .insert(id, ())
                    .map_err(|e| self.fail("cannot write", e))?;
                n += 1;
            }
            Ok(n)
        })
    }

    /// The delta's lines within `range`, in byte order, as of the last
    /// commit.
    pub fn lines(&self, range: &KeyRange) -> Result<DeltaLines, Error> {
        let tx = self
            .db
            .begin_read()
            .map_err(|e| self.fail("cannot start a read", e))?;
        let table = tx
            .open_table(LINES)
            .map_err(|e| self.fail("cannot open its lines", e))?;
        let iter = table
            .range::<&[u8]>(range.start.as_slice()..)
            .map_err(|e| self.fail("cannot read", e))?;
        Ok(DeltaLines {
            iter: Some(iter),
            range: range.clone(),
            path: self.path.clone(),
        })
    }

    /// The captures hidden within `range` (tombstones), to test the
    /// bases' lines against: the ids themselves when there are at most
    /// [`HIDDEN_HELD`], else the store looked up line by line, so that a
    /// query's memory stays bounded whatever the deletes.
    pub fn hider(&self, range: &KeyRange) -> Result<Hider, Error> {
        self.hider_holding(range, HIDDEN_HELD)
    }

    fn hider_holding(&self, range: &KeyRange, held: usize) -> Result<Hider, Error> {
        let tx = self
            .db
            .begin_read()
            .map_err(|e| self.fail("cannot start a read", e))?;
        let table = tx
            .open_table(HIDDEN)
            .map_err(|e| self.fail("cannot open its tombstones", e))?;
        let mut ids = HashSet::new();
        for entry in table
            .range::<&[u8]>(range.start.as_slice()..)
            .map_err(|e| self.fail("cannot read", e))?
        {
            let (id, _) = entry.map_err(|e| self.fail("cannot read", e))?;
            let id = id.value();
            if range.is_past(id) {
                break;
            }
            if ids.len() == held {
                return Ok(Hider {
                    kind: HiderKind::Store(table),
                    path: self.path.clone(),
                });
            }
            ids.insert(id.to_vec());
        }
        Ok(Hider {
            kind: HiderKind::Held(ids),
            path: self.path.clone(),
        })
    }

    /// How many lines the delta holds and how many captures it hides.
    pub fn counts(&self) -> Result<(u64, u64), Error> {
        let tx = self
            .db
            .begin_read()
            .map_err(|e| self.fail("cannot start a read", e))?;
        let lines = tx
            .open_table(LINES)
            .map_err(|e| self.fail("cannot open its lines", e))?;
        let hidden = tx
            .open_table(HIDDEN)
            .map_err(|e| self.fail("cannot open its tombstones", e))?;
        use redb::ReadableTableMetadata;
        let n = lines.len().map_err(|e| self.fail("cannot read", e))?;
        let h = hidden.len().map_err(|e| self.fail("cannot read", e))?;
        Ok((n, h))
    }
}

/// Tombstones a query holds in memory at most ([`Delta::hider`]).
pub const HIDDEN_HELD: usize = 100_000;

/// The tombstones of a range ([`Delta::hider`]).
pub struct Hider {
    kind: HiderKind,
    path: PathBuf,
}

enum HiderKind {
    Held(HashSet<Vec<u8>>),
    Store(redb::ReadOnlyTable<&'static [u8], ()>),
}

impl Hider {
    /// Whether no capture of the range is hidden.
    pub fn is_empty(&self) -> bool {
        matches!(&self.kind, HiderKind::Held(ids) if ids.is_empty())
    }

    /// Whether the capture `id` is hidden.
    pub fn hides(&self, id: &[u8]) -> Result<bool, Error> {
        match &self.kind {
            HiderKind::Held(ids) => Ok(ids.contains(id)),
            HiderKind::Store(table) => table.get(id).map(|g| g.is_some()).map_err(|e| Error {
                path: self.path.clone(),
                what: "cannot read",
                message: e.to_string(),
            }),
        }
    }
}

/// The lines of a delta within a range ([`Delta::lines`]).
pub struct DeltaLines {
    iter: Option<redb::Range<'static, &'static [u8], ()>>,
    range: KeyRange,
    path: PathBuf,
}

impl Iterator for DeltaLines {
    type Item = Result<Vec<u8>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let iter = self.iter.as_mut()?;
        match iter.next()? {
            Ok((line, _)) => {
                let line = line.value();
                if self.range.is_past(line) {
                    self.iter = None;
                    return None;
                }
                Some(Ok(line.to_vec()))
            }
            Err(e) => {
                self.iter = None;
                Some(Err(Error {
                    path: self.path.clone(),
                    what: "cannot read",
                    message: e.to_string(),
                }))
            }
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
        }
        let d = Delta::open(dir.path()).unwrap();
        assert_eq!(d.counts().unwrap(), (1, 1));
        assert!(all(&d, "com,c)/", MatchType::Exact).is_empty());
    }
}

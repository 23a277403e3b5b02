//! The digest index of a store of layout 6, kept in sorted runs.
//!
//! A put's digest key (the digest, then the capture id) is random in
//! the order of the keys around it, so inserting it into a memtable
//! walks a skip list all over memory, and the tables it ends in are
//! merged again and again. Here a batch's digest keys are written, in
//! the batch's atomic commit, as one value of the `dlog` partition
//! (keyed by a sequence number), and kept in memory, sorted, beside it
//! ([`Staged`]). Once they pass a run's size ([`Settings::digest_run`])
//! a thread merges the batches' keys in one sorted pass into a new
//! partition with fjall's bulk ingest (a run: its tables written whole,
//! no journal, no memtable, no merges), and records it in the meta in
//! the same durable commit that removes the log values it holds. Runs
//! of a level are merged into one of the next level once there are
//! [`FANOUT`] of them, so a key is rewritten about once per power of
//! the fan-out between a run's size and the generation's. A lookup by
//! digest reads every run of the generations it reads and the batches
//! not yet in one.
//!
//! Once a fold has frozen a generation, its runs and its batches' keys
//! are ingested into the generation's digest partition (`dig_N`, never
//! written otherwise) beside the writing of the fold's base
//! (`Frozen::index_digests`), and the fold then handles the partition
//! as it handles any digest partition; the same durable commit drops the runs' records
//! and the log values. An open finds what a crash left: log values not
//! in a recorded run are the batches' keys again; a run partition not
//! recorded is dropped; the runs and log values of a frozen generation
//! whose digest partition holds keys were ingested there, and are
//! dropped.
//!
//! [`Settings::digest_run`]: super::Settings::digest_run

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fjall::{PartitionCreateOptions, PartitionHandle, PersistMode, Slice};

use super::{dig_options, Error, Store};

/// The partition of the batches' digest keys not yet in a run.
const LOG: &str = "dlog";

/// Runs of a level merged into one of the next. A lookup by digest
/// reads up to 15 a level; at 8 ten million lines (15 runs of the
/// default size, `scripts/bench_live.sh`) were merged once, for 7.64 us
/// of server CPU a line against 7.31-7.89 with none.
const FANOUT: usize = 16;

/// Runs' worth of batches' keys past which a write waits for a run to
/// be written rather than leaving it to the runs' thread: bounds the
/// memory the keys take when the thread falls behind.
const BEHIND: u64 = 3;

fn run_name(num: u64) -> String {
    format!("drun_{num}")
}

fn record_key(gen: u64, num: u64) -> String {
    format!("run/{gen:020}/{num:020}")
}

/// One run of a generation's digest keys.
#[derive(Clone)]
pub(super) struct Run {
    pub(super) part: PartitionHandle,
    num: u64,
    level: u8,
}

#[cfg(test)]
impl Run {
    pub(super) fn level(&self) -> u8 {
        self.level
    }
}

/// A batch's digest keys, as its log value holds them: the generation
/// (u64 little-endian), then each key (in order, each once) after its
/// length (u32 little-endian).
pub(super) struct Staged {
    seq: u64,
    value: Slice,
    /// Where each key starts in `value`.
    starts: Vec<u32>,
}

impl Staged {
    /// A log value read back; `None` unless its keys are whole and in
    /// strictly ascending order (as fjall's ingest requires of them).
    fn parse(seq: u64, value: Slice) -> Option<(u64, Staged)> {
        let gen = u64::from_le_bytes(value.get(..8)?.try_into().ok()?);
        let mut starts = Vec::new();
        let mut at = 8usize;
        let mut last: Option<&[u8]> = None;
        while at < value.len() {
            let len = u32::from_le_bytes(value.get(at..at + 4)?.try_into().ok()?) as usize;
            at += 4;
            let key = value.get(at..at.checked_add(len)?)?;
            if last.is_some_and(|l| l >= key) {
                return None;
            }
            last = Some(key);
            starts.push(u32::try_from(at).ok()?);
            at += len;
        }
        Some((gen, Staged { seq, value, starts }))
    }

    /// The key that starts at `at` (one of `starts`).
    fn key_at(&self, at: u32) -> &[u8] {
        let at = at as usize;
        let len = u32::from_le_bytes(self.value[at - 4..at].try_into().unwrap_or_default());
        &self.value[at..at + len as usize]
    }

    fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.starts.iter().map(|&at| self.key_at(at))
    }

    /// The keys that start with `prefix`.
    fn with_prefix<'s>(&'s self, prefix: &'s [u8]) -> impl Iterator<Item = &'s [u8]> + 's {
        let from = self.starts.partition_point(|&at| self.key_at(at) < prefix);
        self.starts[from..]
            .iter()
            .map(|&at| self.key_at(at))
            .take_while(move |k| k.starts_with(prefix))
    }

    fn bytes(&self) -> u64 {
        self.value.len() as u64
    }
}

/// The batches' keys not yet in a run, by generation, oldest first.
#[derive(Default)]
struct Pending {
    gens: BTreeMap<u64, Vec<Arc<Staged>>>,
    bytes: u64,
}

pub(super) struct Runs {
    log: PartitionHandle,
    pending: Mutex<Pending>,
    /// Held while a run is written or merged, and while a frozen
    /// generation's keys are ingested into its digest partition.
    writing: Mutex<()>,
    /// The next log sequence number or run number.
    next: AtomicU64,
    /// Whether the runs' thread is at work.
    busy: AtomicBool,
    /// Bytes of batches' keys a run is written at.
    run_bytes: u64,
}

/// What a write leaves to do once it is in.
pub(super) enum Due {
    Nothing,
    /// A run to write, on the runs' thread.
    Run,
    /// The thread is behind: the write waits for a run.
    Wait,
}

impl Runs {
    /// Opens the log and the runs the meta records, drops what a crash
    /// left (see the module's notes) and reads the log's batches back.
    /// `digs` gives each generation's digest partition, from `floor` to
    /// `current`. Gives the runs of each generation.
    pub(super) fn open(
        keyspace: &fjall::Keyspace,
        meta: &PartitionHandle,
        memtable: u32,
        run_bytes: u64,
        (floor, current): (u64, u64),
        digs: &BTreeMap<u64, PartitionHandle>,
        fail: &dyn Fn(&'static str, &dyn std::fmt::Display) -> Error,
    ) -> Result<(Runs, BTreeMap<u64, Vec<Run>>), Error> {
        let log = keyspace
            .open_partition(LOG, log_options(memtable))
            .map_err(|e| fail("cannot open the store's digest log", &e))?;
        let mut next = 0u64;
        let mut records = Vec::new();
        for kv in meta.prefix("run/") {
            let (k, v) = kv.map_err(|e| fail("cannot read the store's meta", &e))?;
            let parsed = std::str::from_utf8(&k).ok().and_then(|k| {
                let (gen, num) = k.strip_prefix("run/")?.split_once('/')?;
                Some((gen.parse::<u64>().ok()?, num.parse::<u64>().ok()?))
            });
            let (Some((gen, num)), Some(&level)) = (parsed, v.first()) else {
                return Err(fail(
                    "holds a digest run record it cannot read",
                    &String::from_utf8_lossy(&k),
                ));
            };
            next = next.max(num + 1);
            records.push((gen, num, level));
        }
        let mut staged: BTreeMap<u64, Vec<Arc<Staged>>> = BTreeMap::new();
        for kv in log.iter() {
            let (k, v) = kv.map_err(|e| fail("cannot read the store's digest log", &e))?;
            let seq = <[u8; 8]>::try_from(&k[..]).map(u64::from_be_bytes);
            let Some((gen, s)) = seq.ok().and_then(|seq| Staged::parse(seq, v)) else {
                return Err(fail(
                    "holds a digest log value it cannot read",
                    &format!("key {k:?}"),
                ));
            };
            next = next.max(s.seq + 1);
            staged.entry(gen).or_default().push(Arc::new(s));
        }
        // A generation outside floor..=current, or a frozen one whose
        // digest partition holds keys, has all its keys elsewhere.
        let mut stale = std::collections::BTreeSet::new();
        for &gen in records
            .iter()
            .map(|(g, _, _)| g)
            .chain(staged.keys())
            .collect::<std::collections::BTreeSet<_>>()
        {
            let ingested = match digs.get(&gen) {
                Some(d) if gen != current => !d
                    .is_empty()
                    .map_err(|e| fail("cannot read a generation's digests", &e))?,
                Some(_) => false,
                None => true,
            };
            if ingested || gen < floor || gen > current {
                stale.insert(gen);
            }
        }
        if !stale.is_empty() {
            let mut b = keyspace.batch().durability(Some(PersistMode::SyncAll));
            for (gen, num, _) in records.iter().filter(|r| stale.contains(&r.0)) {
                b.remove(meta, record_key(*gen, *num));
            }
            for s in stale.iter().filter_map(|g| staged.get(g)).flatten() {
                b.remove(&log, s.seq.to_be_bytes());
            }
            b.commit()
                .map_err(|e| fail("cannot drop an ingested digest log", &e))?;
            records.retain(|r| !stale.contains(&r.0));
            staged.retain(|g, _| !stale.contains(g));
        }
        // Run partitions not recorded: a run or a merge a crash cut
        // short, or runs merged or ingested away.
        for name in keyspace.list_partitions() {
            let Some(num) = name
                .strip_prefix("drun_")
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            next = next.max(num + 1);
            if !records.iter().any(|r| r.1 == num) {
                let h = keyspace
                    .open_partition(&name, run_options(memtable))
                    .map_err(|e| fail("cannot open a digest run", &e))?;
                keyspace
                    .delete_partition(h)
                    .map_err(|e| fail("cannot drop an unrecorded digest run", &e))?;
            }
        }
        let mut runs: BTreeMap<u64, Vec<Run>> = BTreeMap::new();
        for (gen, num, level) in records {
            let part = keyspace
                .open_partition(&run_name(num), run_options(memtable))
                .map_err(|e| fail("cannot open a digest run", &e))?;
            runs.entry(gen).or_default().push(Run { part, num, level });
        }
        let bytes = staged.values().flatten().map(|s| s.bytes()).sum();
        let runs_state = Runs {
            log,
            pending: Mutex::new(Pending {
                gens: staged,
                bytes,
            }),
            writing: Mutex::new(()),
            next: AtomicU64::new(next),
            busy: AtomicBool::new(false),
            run_bytes: run_bytes.max(1),
        };
        Ok((runs_state, runs))
    }

    /// Puts `keys` (drained) into `batch` as one log value of the
    /// generation `gen`: given back to [`Runs::push`] once the batch is
    /// committed.
    pub(super) fn stage(
        &self,
        batch: &mut fjall::Batch,
        gen: u64,
        keys: &mut Vec<Vec<u8>>,
    ) -> Option<Arc<Staged>> {
        if keys.is_empty() {
            return None;
        }
        keys.sort_unstable();
        keys.dedup();
        let mut value = Vec::with_capacity(8 + keys.iter().map(|k| k.len() + 4).sum::<usize>());
        value.extend_from_slice(&gen.to_le_bytes());
        let mut starts = Vec::with_capacity(keys.len());
        for k in keys.drain(..) {
            let len = u32::try_from(k.len()).unwrap_or(u32::MAX);
            value.extend_from_slice(&len.to_le_bytes());
            starts.push(u32::try_from(value.len()).unwrap_or(u32::MAX));
            value.extend_from_slice(&k[..len as usize]);
        }
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let value = Slice::from(value);
        batch.insert(&self.log, seq.to_be_bytes(), value.clone());
        Some(Arc::new(Staged { seq, value, starts }))
    }

    /// Keeps a committed batch's keys until a run holds them.
    pub(super) fn push(&self, gen: u64, staged: Arc<Staged>) {
        let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.bytes += staged.bytes();
        p.gens.entry(gen).or_default().push(staged);
    }

    /// What a write leaves to do.
    pub(super) fn due(&self) -> Due {
        let bytes = self.pending.lock().unwrap_or_else(|e| e.into_inner()).bytes;
        if bytes >= BEHIND * self.run_bytes {
            Due::Wait
        } else if bytes >= self.run_bytes && !self.busy.swap(true, Ordering::AcqRel) {
            Due::Run
        } else {
            Due::Nothing
        }
    }

    /// Adds to `ids` the capture ids after `prefix` of the keys of the
    /// batches of generations from `floor` not yet in a run.
    pub(super) fn pending_ids(
        &self,
        floor: u64,
        prefix: &[u8],
        ids: &mut std::collections::BTreeSet<Vec<u8>>,
    ) {
        let staged: Vec<Arc<Staged>> = {
            let p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.gens.range(floor..).flat_map(|(_, v)| v.clone()).collect()
        };
        for s in &staged {
            for k in s.with_prefix(prefix) {
                ids.insert(k[prefix.len()..].to_vec());
            }
        }
    }

    #[cfg(test)]
    pub(super) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    #[cfg(test)]
    pub(super) fn staged(&self, gen: u64) -> Vec<Arc<Staged>> {
        let p = self.pending.lock().unwrap();
        p.gens.get(&gen).cloned().unwrap_or_default()
    }

    /// The log, for a store that writes its memtables out.
    pub(super) fn log(&self) -> &PartitionHandle {
        &self.log
    }
}

/// A run's tables: a digest partition's, in blocks of 4 KiB. A lookup
/// by digest reads a block of every run.
fn run_options(memtable: u32) -> PartitionCreateOptions {
    dig_options(memtable).block_size(4 << 10)
}

fn log_options(memtable: u32) -> PartitionCreateOptions {
    // Room for a run's keys and the values a run removed, so that the
    // log is seldom written out: its values are mostly removed while
    // they are in the memtable, and leave only their removals.
    PartitionCreateOptions::default().max_memtable_size(memtable.saturating_mul(2))
}

/// Starts the runs' thread for a run [`Runs::due`] found due.
pub(super) fn spawn(store: &Arc<Store>) {
    let st = store.clone();
    let started = std::thread::Builder::new()
        .name("ukvs-digest-runs".into())
        .spawn(move || {
            super::write_priority();
            let Some(runs) = &st.runs else { return };
            loop {
                if let Err(e) = write(&st) {
                    crate::report!("ukvs: {}: {}: {}", e.path.display(), e.what, e.message);
                    runs.busy.store(false, Ordering::Release);
                    return;
                }
                runs.busy.store(false, Ordering::Release);
                // More came in while it wrote.
                match runs.due() {
                    Due::Nothing => return,
                    Due::Run | Due::Wait => {
                        runs.busy.store(true, Ordering::Release);
                    }
                }
            }
        });
    if let Err(e) = started {
        crate::report!("ukvs: cannot start a thread to write digest runs: {e}");
        if let Some(runs) = &store.runs {
            runs.busy.store(false, Ordering::Release);
        }
    }
}

/// Writes each generation's batches as a run of it, then merges its
/// runs level by level. Only the current generation takes batches; a
/// frozen one holds some when a fold was stopped before it ingested
/// them (then an open read them back), and its runs wait for the next
/// fold.
pub(super) fn write(store: &Store) -> Result<(), Error> {
    let Some(runs) = &store.runs else {
        return Ok(());
    };
    let _writing = runs.writing.lock().unwrap_or_else(|e| e.into_inner());
    let pending: Vec<(u64, Vec<Arc<Staged>>)> = {
        let p = runs.pending.lock().unwrap_or_else(|e| e.into_inner());
        p.gens.iter().map(|(g, v)| (*g, v.clone())).collect()
    };
    for (gen, sealed) in pending {
        if sealed.is_empty() {
            continue;
        }
        let num = runs.next.fetch_add(1, Ordering::Relaxed);
        let part = ingest_new(store, &run_name(num), Vec::new(), &sealed)?;
        let mut b = store
            .keyspace
            .batch()
            .durability(Some(PersistMode::SyncAll));
        b.insert(&store.meta, record_key(gen, num), [0u8]);
        for s in &sealed {
            b.remove(&runs.log, s.seq.to_be_bytes());
        }
        if let Err(e) = b.commit() {
            let _ = store.keyspace.delete_partition(part);
            return Err(store.fail("cannot record a digest run", e));
        }
        {
            let mut st = store.state.write().unwrap_or_else(|e| e.into_inner());
            st.runs.entry(gen).or_default().push(Run {
                part,
                num,
                level: 0,
            });
        }
        drop_staged(runs, gen, sealed.len());
        merge_levels(store, runs, gen)?;
    }
    // The log's memtable is left to fjall: rotated here after each run
    // (to free the journal holding the removed values sooner), fjall
    // 2.11's flush worker panicked on a queue shorter than the tables it
    // wrote, in `tests/it/live_digest.rs` (runs of 600 bytes) four times
    // in five, and poisoned the store.
    Ok(())
}

/// Forgets the first `n` batches of `gen`, now in a run.
fn drop_staged(runs: &Runs, gen: u64, n: usize) {
    let mut p = runs.pending.lock().unwrap_or_else(|e| e.into_inner());
    let Some(v) = p.gens.get_mut(&gen) else {
        return;
    };
    let gone: u64 = v.drain(..n.min(v.len())).map(|s| s.bytes()).sum();
    if v.is_empty() {
        p.gens.remove(&gen);
    }
    p.bytes -= gone;
}

/// Merges `gen`'s runs of a level into one of the next while a level
/// has [`FANOUT`] of them.
fn merge_levels(store: &Store, runs: &Runs, gen: u64) -> Result<(), Error> {
    loop {
        let these: Vec<Run> = {
            let st = store.state.read().unwrap_or_else(|e| e.into_inner());
            let all = st.runs.get(&gen).cloned().unwrap_or_default();
            let mut by_level: BTreeMap<u8, Vec<Run>> = BTreeMap::new();
            for r in all {
                by_level.entry(r.level).or_default().push(r);
            }
            match by_level.into_values().find(|v| v.len() >= FANOUT) {
                Some(v) => v,
                None => return Ok(()),
            }
        };
        let level = these[0].level.saturating_add(1);
        let num = runs.next.fetch_add(1, Ordering::Relaxed);
        let sources = these.iter().map(|r| r.part.clone()).collect();
        let part = ingest_new(store, &run_name(num), sources, &[])?;
        let mut b = store
            .keyspace
            .batch()
            .durability(Some(PersistMode::SyncAll));
        b.insert(&store.meta, record_key(gen, num), [level]);
        for r in &these {
            b.remove(&store.meta, record_key(gen, r.num));
        }
        if let Err(e) = b.commit() {
            let _ = store.keyspace.delete_partition(part);
            return Err(store.fail("cannot record a digest run", e));
        }
        let mut st = store.state.write().unwrap_or_else(|e| e.into_inner());
        let list = st.runs.entry(gen).or_default();
        list.retain(|r| !these.iter().any(|t| t.num == r.num));
        list.push(Run { part, num, level });
        st.retired_digs.extend(these.into_iter().map(|r| r.part));
        drop(st);
        store.drop_unread();
    }
}

/// Ingests into each frozen generation of `gens` (its digest partition
/// `digs`, empty) its runs and its batches' keys, and drops them.
pub(super) fn ingest_frozen(store: &Store, gens: &[(u64, PartitionHandle)]) -> Result<(), Error> {
    let Some(runs) = &store.runs else {
        return Ok(());
    };
    let _writing = runs.writing.lock().unwrap_or_else(|e| e.into_inner());
    for (gen, dig) in gens {
        let these: Vec<Run> = {
            let st = store.state.read().unwrap_or_else(|e| e.into_inner());
            st.runs.get(gen).cloned().unwrap_or_default()
        };
        let staged: Vec<Arc<Staged>> = {
            let p = runs.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.gens.get(gen).cloned().unwrap_or_default()
        };
        if these.is_empty() && staged.is_empty() {
            continue;
        }
        let sources = these.iter().map(|r| r.part.clone()).collect();
        ingest_into(store, dig, sources, &staged)?;
        let mut b = store
            .keyspace
            .batch()
            .durability(Some(PersistMode::SyncAll));
        for r in &these {
            b.remove(&store.meta, record_key(*gen, r.num));
        }
        for s in &staged {
            b.remove(&runs.log, s.seq.to_be_bytes());
        }
        // Not recorded, an open finds the generation's digest partition
        // holding keys, and drops the runs and log values.
        b.commit()
            .map_err(|e| store.fail("cannot drop a generation's digest runs", e))?;
        let mut st = store.state.write().unwrap_or_else(|e| e.into_inner());
        st.runs.remove(gen);
        st.retired_digs.extend(these.into_iter().map(|r| r.part));
        drop(st);
        drop_staged(runs, *gen, staged.len());
    }
    store.drop_unread();
    Ok(())
}

/// A new partition named `name` holding every key of `sources` and
/// `staged`.
fn ingest_new(
    store: &Store,
    name: &str,
    sources: Vec<PartitionHandle>,
    staged: &[Arc<Staged>],
) -> Result<PartitionHandle, Error> {
    let part = store
        .keyspace
        .open_partition(name, run_options(store.memtable))
        .map_err(|e| store.fail("cannot write a digest run", e))?;
    if let Err(e) = ingest_into(store, &part, sources, staged) {
        let _ = store.keyspace.delete_partition(part);
        return Err(e);
    }
    Ok(part)
}

/// Ingests into `part` (which must be empty) every key of `sources`
/// and `staged`, in one sorted pass.
pub(super) fn ingest_into(
    store: &Store,
    part: &PartitionHandle,
    sources: Vec<PartitionHandle>,
    staged: &[Arc<Staged>],
) -> Result<(), Error> {
    let fail = |e: &dyn std::fmt::Display| store.fail("cannot write a digest run", e);
    // fjall's ingest panics on a partition that holds keys.
    if !part.is_empty().map_err(|e| fail(&e))? {
        return Err(fail(&format!("its partition {} holds keys", &*part.name)));
    }
    let failed = std::cell::RefCell::new(None);
    let from_parts = sources.iter().map(|p| {
        Box::new(p.iter().map_while(|kv| match kv {
            Ok((key, _)) => Some(key),
            Err(e) => {
                failed.borrow_mut().get_or_insert(e);
                None
            }
        })) as Box<dyn Iterator<Item = Slice>>
    });
    let from_staged = staged
        .iter()
        .map(|s| Box::new(s.keys().map(Slice::from)) as Box<dyn Iterator<Item = Slice>>);
    let keys = itertools::kmerge(from_parts.chain(from_staged).collect::<Vec<_>>());
    // Strictly ascending, as ingest requires: a capture put twice with
    // one digest has one key.
    let keys = itertools::Itertools::dedup(keys);
    let ingested = part.ingest(keys.map(|key| (key, Slice::from(&b""[..]))));
    if let Some(e) = failed.into_inner() {
        return Err(fail(&e));
    }
    ingested.map_err(|e| fail(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(gen: u64, keys: &[&[u8]]) -> Slice {
        let mut v = gen.to_le_bytes().to_vec();
        for k in keys {
            v.extend_from_slice(&(k.len() as u32).to_le_bytes());
            v.extend_from_slice(k);
        }
        Slice::from(v)
    }

    /// A log value reads back as its generation and keys, found by
    /// prefix; one cut short, with a length past its end or with keys
    /// out of order (which would make fjall's ingest panic) is refused.
    #[test]
    fn log_values_read_back_or_are_refused() {
        let keys: [&[u8]; 4] = [b"\x01aa1", b"\x01ab1", b"\x01ab2", b"\x02ab1"];
        let (gen, s) = Staged::parse(7, value(3, &keys)).unwrap();
        assert_eq!((gen, s.seq), (3, 7));
        assert_eq!(s.keys().collect::<Vec<_>>(), keys);
        let found: Vec<&[u8]> = s.with_prefix(b"\x01ab").collect();
        assert_eq!(found, [&b"\x01ab1"[..], b"\x01ab2"]);
        assert_eq!(s.with_prefix(b"\x03").count(), 0);
        let (_, empty) = Staged::parse(1, value(0, &[])).unwrap();
        assert_eq!(empty.keys().count(), 0);

        let whole = value(3, &keys);
        assert!(Staged::parse(1, Slice::from(&whole[..whole.len() - 1])).is_none());
        assert!(Staged::parse(1, Slice::from(&whole[..5])).is_none());
        let mut past = whole.to_vec();
        past[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(Staged::parse(1, Slice::from(past)).is_none());
        let unsorted: [&[u8]; 2] = [b"\x01b", b"\x01a"];
        assert!(Staged::parse(1, value(3, &unsorted)).is_none());
        let twice: [&[u8]; 2] = [b"\x01a", b"\x01a"];
        assert!(Staged::parse(1, value(3, &twice)).is_none());
    }
}

//! The embedded stores a live collection's delta could use, on the same
//! work: N CDX11 capture lines (as pywb's and OpenWayback's indexers
//! write them, about 200 bytes, hosts in random order as a crawl writes
//! them, base32 digests) in BATCH-line commits, each durable (fsync'd)
//! before the next, as `POST /NAME` commits; then a full scan and 10,000
//! short range scans (a host's first captures); then the space on disk
//! against the text's size. Ingest is timed and its CPU seconds counted
//! (user + system, every thread: the stores' flushes and compactions
//! too); a fjall or RocksDB store is then left to finish its
//! compactions (the CPU seconds they take are printed: the ingest's
//! full cost is the sum) before it is scanned.
//!
//! Layouts:
//! - `redb lines+ids`: redb 2.6, a `lines` table (line -> ()) and an
//!   `ids` table (capture id -> line), so a capture is stored twice;
//! - `fjall lines+ids`: the same two tables in fjall 2.11 (lz4);
//! - `fjall id->line`: one partition, capture id -> the line less its
//!   `key datetime ` (which the id holds): a capture is stored once, and
//!   a capture posted again overwrites its entry with no read (lz4, and
//!   without compression);
//! - `fjall id->line+dig` (`STORES=fjall+dig`): what `src/engine/live.rs`
//!   writes: that partition (the entry a tag byte and the line less its
//!   head) and a digest partition (`sha1:` + the digest's 20 bytes + the
//!   capture id -> empty, size-tiered), a batch's entries in id order
//!   then its digest keys in theirs, committed, then made durable by a
//!   `persist(SyncData)` (`Store::commit_durable`);
//! - `fjall3`: the same in fjall 3.1 (a database, two keyspaces, lz4 at
//!   every level, 4 KiB blocks, 8 MiB memtables); fjall 3 has no
//!   size-tiered compaction, so its digest keyspace is leveled too;
//! - `fjall3-ingest`: each batch written by two ingestions (fjall 3's
//!   `Keyspace::start_ingestion`: sorted keys written straight into a
//!   table, no journal, no memtable), the generation's then the
//!   digests': each is durable when `finish` returns (the table and
//!   the tree's version fsync'd), the two are not atomic together;
//! - `fjall3-ingest1`: one ingestion into one keyspace holding both, the
//!   digest keys under a `\x00` prefix (atomic);
//! - `fjall3-l01plain`: `fjall3` with fjall 3's default compression (none
//!   on the first two levels, lz4 below); `fjall3-16k`: 16 KiB blocks
//!   below the first two levels; `fjall3-kv`: values in blob files (KV
//!   separation from 64 bytes);
//! - `rocks[-sst][-universal][-lz4][+dig]`: RocksDB 11.8 (rust-rocksdb
//!   0.25), the entries of `fjall id->line+dig` in a column family.
//!   `rocks` writes a batch as one `WriteBatch` with `sync` set: its WAL
//!   record is fdatasync'd before `write` returns (one fdatasync per
//!   batch; flushes and compactions sync their tables and the MANIFEST
//!   in the background), as OutbackCDX writes a POST. `-sst` writes the
//!   batch, sorted, into a table (`SstFileWriter`; `finish` fdatasyncs
//!   it) and ingests it (`move_files`: linked into the database,
//!   fdatasync'd again, the directory fsync'd, the MANIFEST's edit
//!   fdatasync'd: durable when `ingest_external_file` returns; no WAL).
//!   Leveled compaction (RocksDB's defaults: dynamic level sizes, a
//!   compaction per 4 first-level tables), or `-universal`. lz4, with
//!   zstd at the bottommost level (most of the data), or `-lz4`: lz4
//!   everywhere. `+dig`: with the digest keys: a column family
//!   (universal, as fjall's size-tiered) in the same `WriteBatch`, or in
//!   `-sst` the same table under a `\x00` prefix (one ingestion: atomic).
//!   64 MiB memtables (RocksDB's default and OutbackCDX's; `MEMTABLE_MB`),
//!   4 KiB blocks (`BLOCK`), a 64 MiB block cache, 2 background jobs;
//! - `compat`: whether fjall 3 opens a keyspace fjall 2 wrote.
//!
//! fjall 2's tables are compacted leveled (as `engine::live` compacts a
//! generation; `COMPACTION=tiered` for size-tiered, which it used before
//! and which left every run of a tier for a range scan to read),
//! 4 KiB blocks (`BLOCK`), 8 MiB memtables (`MEMTABLE_MB`, fjall 3 too;
//! `L0` sets fjall 3's first-level compaction threshold, `WORKERS` its
//! number of flush and compaction threads).
//! `STORES=redb,fjall2,fjall,plain,fjall+dig,fjall3,...,rocks+dig,...`
//! picks and orders them, a store named twice being run twice
//! (`STORES=fjall+dig,rocks+dig,fjall+dig,rocks+dig` alternates); by
//! default: every store above but the RocksDB variants other than
//! `rocks`, `rocks+dig` and `rocks-sst+dig`.
//!
//! Usage: bench-store DIR [N] [BATCH]

use std::path::{Path, PathBuf};
use std::time::Instant;

/// A pseudo-random 64-bit number of `i` (splitmix64).
fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The `i`th capture: its id and its CDX11 line.
fn capture(i: u64) -> (Vec<u8>, Vec<u8>) {
    let r = mix(i);
    let h = r % 50_000;
    let p = (r >> 20) % 97;
    let q = (r >> 30) % 5;
    const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut digest = String::with_capacity(32);
    let mut d = mix(i ^ 0xdead_beef);
    for k in 0..32 {
        if k % 12 == 11 {
            d = mix(d);
        }
        digest.push(B32[(d & 31) as usize] as char);
        d >>= 5;
    }
    let dt = format!(
        "20{:02}{:02}{:02}{:02}{:02}{:02}",
        10 + (r >> 40) % 10,
        1 + (r >> 44) % 12,
        1 + (r >> 48) % 28,
        (r >> 52) % 24,
        (r >> 56) % 60,
        i % 60
    );
    let key = format!("com,example,host{h})/path/page{p}?x={q}");
    let file = format!("CRAWL-20200101000000-{:05}.warc.gz", i / 20_000);
    let offset = (i % 20_000) * 52_000;
    let line = format!(
        "{key} {dt} http://host{h}.example.com/path/page{p}?x={q} text/html 200 {digest} - - {} {offset} {file}",
        1000 + r % 60_000
    );
    let mut id = key.into_bytes();
    id.push(b' ');
    id.extend_from_slice(dt.as_bytes());
    id.push(0);
    id.extend_from_slice(file.as_bytes());
    id.push(0);
    id.extend_from_slice(offset.to_string().as_bytes());
    (id, line.into_bytes())
}

fn du(p: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(p).expect("list").flatten() {
        let m = e.metadata().expect("stat");
        n += if m.is_dir() { du(&e.path()) } else { m.len() };
    }
    n
}

fn fresh(dir: &Path, name: &str) -> PathBuf {
    let d = dir.join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create");
    d
}

/// CPU seconds (user + system) the process has used so far, all its
/// threads (the stores' background flushes and compactions too).
fn cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command's `)`: state is the 3rd, utime the 14th.
    let f: Vec<&str> = stat[stat.rfind(')').expect("stat") + 2..]
        .split(' ')
        .collect();
    let ticks = |i: usize| f[i - 3].parse::<f64>().expect("ticks");
    (ticks(14) + ticks(15)) / 100.0
}

/// Waits until the store's background work (flushes, compactions) is
/// done: the process idle (under 2% of a core) for a second, or 300 s.
/// Gives the CPU seconds it took.
fn settle() -> f64 {
    let (t0, c0) = (Instant::now(), cpu());
    let mut idle = 0;
    while idle < 4 && t0.elapsed().as_secs() < 300 {
        let c = cpu();
        std::thread::sleep(std::time::Duration::from_millis(250));
        idle = if cpu() - c <= 0.005 { idle + 1 } else { 0 };
    }
    cpu() - c0
}

/// Lines `range` as `engine::live` writes them: (capture id, entry) in
/// id order, the entry a tag byte (0: a put) and the line less its
/// `key datetime `; and the digest keys (`sha1:`, the digest's 20
/// bytes, the capture id) in their order.
fn batch_of(range: std::ops::Range<u64>) -> (Vec<(Vec<u8>, Vec<u8>)>, Vec<Vec<u8>>) {
    let mut entries = Vec::with_capacity((range.end - range.start) as usize);
    let mut keys = Vec::with_capacity(entries.capacity());
    for i in range {
        let (id, line) = capture(i);
        let head = id.iter().position(|&b| b == 0).expect("id") + 1;
        let mut entry = Vec::with_capacity(line.len() + 1 - head);
        entry.push(0);
        entry.extend_from_slice(&line[head..]);
        let digest = line.split(|&b| b == b' ').nth(5).expect("digest");
        let mut key = b"sha1:".to_vec();
        key.extend_from_slice(&base32(digest));
        key.extend_from_slice(&id);
        keys.push(key);
        entries.push((id, entry));
    }
    entries.sort_unstable();
    keys.sort_unstable();
    (entries, keys)
}

/// The bytes a 32-character base32 digest spells (20).
fn base32(s: &[u8]) -> Vec<u8> {
    let (mut out, mut acc, mut bits) = (Vec::with_capacity(20), 0u64, 0);
    for &c in s {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            _ => panic!("base32"),
        };
        acc = acc << 5 | u64::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// `secs`: ingest, its CPU seconds, full scan, range scans.
fn report(store: &str, n: u64, batch: u64, secs: [f64; 4], found: u64, space: u64, text: u64) {
    println!(
        "{store:<22}{:>9.0} lines/s ({n} lines, {batch}-line durable commits, {:.1} CPU s)  \
         full scan {:.2} s  10k range scans {:.3} s ({found} found)  \
         {:.1} MB on disk for {:.1} MB of text ({:.2}x)",
        n as f64 / secs[0],
        secs[1],
        secs[2],
        secs[3],
        space as f64 / 1e6,
        text as f64 / 1e6,
        space as f64 / text as f64
    );
}

/// Ten thousand hosts' first three captures.
fn scans(mut range: impl FnMut(&[u8]) -> Vec<Vec<u8>>) -> (f64, u64) {
    let t0 = Instant::now();
    let mut found = 0;
    for h in 0..10_000u64 {
        let k = format!("com,example,host{h})/");
        for v in range(k.as_bytes()) {
            found += u64::from(v.starts_with(k.as_bytes()));
        }
    }
    (t0.elapsed().as_secs_f64(), found)
}

fn redb_run(dir: &Path, n: u64, batch: u64, text: u64) {
    let d = fresh(dir, "redb");
    let db = redb::Database::builder()
        .set_cache_size(64 << 20)
        .create(d.join("delta.redb"))
        .expect("redb");
    const LINES: redb::TableDefinition<&[u8], ()> = redb::TableDefinition::new("lines");
    const IDS: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new("ids");
    let (t0, c0) = (Instant::now(), cpu());
    for b in 0..n.div_ceil(batch) {
        let mut tx = db.begin_write().expect("write");
        tx.set_durability(redb::Durability::Immediate);
        {
            let mut lines = tx.open_table(LINES).expect("table");
            let mut ids = tx.open_table(IDS).expect("table");
            for i in b * batch..((b + 1) * batch).min(n) {
                let (id, line) = capture(i);
                let old = ids
                    .insert(id.as_slice(), line.as_slice())
                    .expect("insert")
                    .map(|g| g.value().to_vec());
                if let Some(old) = old {
                    lines.remove(old.as_slice()).expect("remove");
                }
                lines.insert(line.as_slice(), ()).expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let (ingest, ingest_cpu) = (t0.elapsed().as_secs_f64(), cpu() - c0);
    let tx = db.begin_read().expect("read");
    let t = tx.open_table(LINES).expect("table");
    let t0 = Instant::now();
    let mut bytes = 0;
    for r in t.range::<&[u8]>(..).expect("range") {
        bytes += r.expect("entry").0.value().len();
    }
    assert!(bytes > 0);
    let scan = t0.elapsed().as_secs_f64();
    let (scans, found) = scans(|k| {
        t.range::<&[u8]>(k..)
            .expect("range")
            .take(3)
            .map(|r| r.expect("entry").0.value().to_vec())
            .collect()
    });
    drop((t, tx, db));
    let space = du(&d);
    report(
        "redb lines+ids",
        n,
        batch,
        [ingest, ingest_cpu, scan, scans],
        found,
        space,
        text,
    );
}

fn fjall_run(
    dir: &Path,
    n: u64,
    batch: u64,
    text: u64,
    once: bool,
    compression: fjall::CompressionType,
    dig: bool,
) {
    let name = match (once, compression, dig) {
        (true, _, true) => "fjall id->line+dig",
        (true, fjall::CompressionType::None, _) => "fjall id->line, plain",
        (true, _, _) => "fjall id->line, lz4",
        (false, _, _) => "fjall lines+ids, lz4",
    };
    let d = fresh(dir, "fjall");
    let ks = fjall::Config::new(&d).open().expect("fjall");
    let memtable: u32 = std::env::var("MEMTABLE_MB").map_or(8, |s| s.parse().expect("MEMTABLE_MB"));
    let opts = || {
        fjall::PartitionCreateOptions::default()
            .compression(compression)
            .max_memtable_size(memtable << 20)
            .block_size(std::env::var("BLOCK").map_or(4096, |s| s.parse().expect("BLOCK")))
            .compaction_strategy(compaction())
    };
    let lines = ks.open_partition("lines", opts()).expect("partition");
    let ids = ks.open_partition("ids", opts()).expect("partition");
    // As `engine::live`'s `dig_options`.
    let digs = ks
        .open_partition(
            "dig",
            fjall::PartitionCreateOptions::default()
                .compression(compression)
                .max_memtable_size(memtable << 20)
                .compaction_strategy(fjall::compaction::Strategy::SizeTiered(
                    fjall::compaction::SizeTiered::default(),
                )),
        )
        .expect("partition");
    let (t0, c0) = (Instant::now(), cpu());
    for b in 0..n.div_ceil(batch) {
        let mode = match std::env::var("SYNC").as_deref() {
            Ok("data") => fjall::PersistMode::SyncData,
            Ok("none") => fjall::PersistMode::Buffer,
            _ => fjall::PersistMode::SyncAll,
        };
        let mut wb = ks.batch().durability(Some(mode));
        if dig {
            // As `engine::live` writes a batch: in id order, then the
            // digest keys in their order.
            let (entries, keys) = batch_of(b * batch..((b + 1) * batch).min(n));
            for (id, entry) in entries {
                wb.insert(&ids, id, entry);
            }
            for k in keys {
                wb.insert(&digs, k, b"");
            }
            // Committed, then made durable (`Store::commit_durable`).
            let wb = wb.durability(Some(fjall::PersistMode::Buffer));
            wb.commit().expect("commit");
            ks.persist(fjall::PersistMode::SyncData).expect("persist");
            continue;
        }
        for i in b * batch..((b + 1) * batch).min(n) {
            let (id, line) = capture(i);
            if once {
                // The line less its `key datetime `, which the id holds.
                let head = id.iter().position(|&b| b == 0).expect("id") + 1;
                wb.insert(&ids, id, &line[head..]);
            } else {
                if let Some(old) = ids.get(&id).expect("get") {
                    wb.remove(&lines, old);
                }
                wb.insert(&ids, id, line.clone());
                wb.insert(&lines, line, b"");
            }
        }
        wb.commit().expect("commit");
    }
    let (ingest, ingest_cpu) = (t0.elapsed().as_secs_f64(), cpu() - c0);
    println!(
        "  tables after ingest: {} (+{} digest tables)",
        if once {
            ids.segment_count()
        } else {
            lines.segment_count() + ids.segment_count()
        },
        digs.segment_count()
    );
    let (t1, settled) = (Instant::now(), settle());
    println!(
        "  then compactions: {settled:.1} CPU s in {:.1} s; ingest and them: {:.1} CPU s, \
         tables: {} (+{} digest tables)",
        t1.elapsed().as_secs_f64(),
        ingest_cpu + settled,
        if once {
            ids.segment_count()
        } else {
            lines.segment_count() + ids.segment_count()
        },
        digs.segment_count()
    );
    let scanned = if once { &ids } else { &lines };
    let t0 = Instant::now();
    let mut bytes = 0;
    for kv in scanned.iter() {
        let (k, v) = kv.expect("entry");
        bytes += k.len() + v.len();
    }
    assert!(bytes > 0);
    let scan = t0.elapsed().as_secs_f64();
    let (scans, found) = scans(|k| {
        scanned
            .range(k.to_vec()..)
            .take(3)
            .map(|kv| kv.expect("entry").0.to_vec())
            .collect()
    });
    ks.persist(fjall::PersistMode::SyncAll).expect("persist");
    // What stays on disk once the journal is flushed into tables.
    for p in [&lines, &ids, &digs] {
        p.rotate_memtable_and_wait().expect("flush");
    }
    println!(
        "  journal {:.1} MB, tables {:.1} MB (digests {:.1} MB)",
        ks.journal_disk_space() as f64 / 1e6,
        (lines.disk_space() + ids.disk_space() + digs.disk_space()) as f64 / 1e6,
        digs.disk_space() as f64 / 1e6
    );
    drop((lines, ids, digs, ks));
    let space = du(&d);
    report(
        name,
        n,
        batch,
        [ingest, ingest_cpu, scan, scans],
        found,
        space,
        text,
    );
}

/// How a fjall 3 store writes a batch.
#[derive(Clone, Copy, PartialEq)]
enum Write3 {
    /// One write batch (both keyspaces), committed then made durable.
    Batch,
    /// Two ingestions, the generation's then the digests' (each durable
    /// once `finish` returns; not atomic together).
    Ingest,
    /// One ingestion into one keyspace holding both, the digest keys
    /// under a `\x00` prefix (no capture id starts with it): atomic.
    Ingest1,
}

/// The generation keyspace's options of a fjall 3 store: today's (lz4 at
/// every level, 4 KiB blocks, leveled, 8 MiB memtables), with `tweak`'s
/// change.
fn gen3(tweak: &str) -> fjall3::KeyspaceCreateOptions {
    use fjall3::config::{BlockSizePolicy, CompressionPolicy};
    use fjall3::CompressionType::{Lz4, None};
    let memtable: u64 = std::env::var("MEMTABLE_MB").map_or(8, |s| s.parse().expect("MEMTABLE_MB"));
    let block: u32 = std::env::var("BLOCK").map_or(4096, |s| s.parse().expect("BLOCK"));
    let mut leveled = fjall3::compaction::Leveled::default();
    if let Ok(l0) = std::env::var("L0") {
        leveled = leveled.with_l0_threshold(l0.parse().expect("L0"));
    }
    let o = fjall3::KeyspaceCreateOptions::default()
        .max_memtable_size(memtable << 20)
        .data_block_size_policy(BlockSizePolicy::all(block))
        .data_block_compression_policy(CompressionPolicy::all(Lz4))
        .compaction_strategy(std::sync::Arc::new(leveled));
    match tweak {
        // fjall 3's default: the first two levels (written, then soon
        // rewritten, by flushes and their compactions) uncompressed.
        "l01plain" => o.data_block_compression_policy(CompressionPolicy::new([None, None, Lz4])),
        // Bigger blocks where most of the data lies.
        "16k" => o.data_block_size_policy(BlockSizePolicy::new([4096, 4096, 16384])),
        // Values in blob files, the tree holding keys and pointers.
        "kv" => o.with_kv_separation(Some(
            fjall3::KvSeparationOptions::default().separation_threshold(64),
        )),
        _ => o,
    }
}

/// The digest keyspace's options in fjall 3, which has no size-tiered
/// compaction (its `SizeTiered` is not implemented): leveled.
fn dig3() -> fjall3::KeyspaceCreateOptions {
    gen3("")
}

fn fjall3_run(dir: &Path, n: u64, batch: u64, text: u64, name: &str, how: Write3, tweak: &str) {
    let d = fresh(dir, "fjall3");
    let mut db = fjall3::Database::builder(&d)
        .cache_size(256 << 20)
        .max_journaling_size(128 << 20);
    if let Ok(w) = std::env::var("WORKERS") {
        db = db.worker_threads(w.parse().expect("WORKERS"));
    }
    let db = db.open().expect("fjall 3");
    let ids = db.keyspace("gen", || gen3(tweak)).expect("keyspace");
    let digs = db.keyspace("dig", dig3).expect("keyspace");
    let (t0, c0) = (Instant::now(), cpu());
    for b in 0..n.div_ceil(batch) {
        let (entries, keys) = batch_of(b * batch..((b + 1) * batch).min(n));
        match how {
            Write3::Batch => {
                let mut wb = db.batch().durability(Some(fjall3::PersistMode::Buffer));
                for (id, entry) in entries {
                    wb.insert(&ids, id, entry);
                }
                for k in keys {
                    wb.insert(&digs, k, b"");
                }
                wb.commit().expect("commit");
                db.persist(fjall3::PersistMode::SyncData).expect("persist");
            }
            Write3::Ingest => {
                let mut ing = ids.start_ingestion().expect("ingestion");
                for (id, entry) in entries {
                    ing.write(id, entry).expect("ingest");
                }
                ing.finish().expect("finish");
                let mut ing = digs.start_ingestion().expect("ingestion");
                for k in keys {
                    ing.write(k, b"").expect("ingest");
                }
                ing.finish().expect("finish");
            }
            Write3::Ingest1 => {
                let mut ing = ids.start_ingestion().expect("ingestion");
                for mut k in keys {
                    k.insert(0, 0);
                    ing.write(k, b"").expect("ingest");
                }
                for (id, entry) in entries {
                    ing.write(id, entry).expect("ingest");
                }
                ing.finish().expect("finish");
            }
        }
    }
    let (ingest, ingest_cpu) = (t0.elapsed().as_secs_f64(), cpu() - c0);
    let tables = || {
        format!(
            "{} ({} in L0) + {} digest tables ({} in L0), {} blob files",
            ids.table_count(),
            ids.l0_table_count(),
            digs.table_count(),
            digs.l0_table_count(),
            ids.blob_file_count()
        )
    };
    let range = |k: &[u8]| -> Vec<Vec<u8>> {
        ids.range(k.to_vec()..)
            .take(3)
            .map(|kv| kv.key().expect("entry").to_vec())
            .collect()
    };
    let (early, _) = scans(range);
    println!(
        "  tables after ingest: {}; 10k range scans then: {early:.3} s",
        tables()
    );
    let (t1, settled) = (Instant::now(), settle());
    println!(
        "  then compactions: {settled:.1} CPU s in {:.1} s; ingest and them: {:.1} CPU s, \
         tables: {}",
        t1.elapsed().as_secs_f64(),
        ingest_cpu + settled,
        tables()
    );
    let t0 = Instant::now();
    let mut bytes = 0;
    for kv in ids.range::<&[u8], _>(&b"\x01"[..]..) {
        let (k, v) = kv.into_inner().expect("entry");
        bytes += k.len() + v.len();
    }
    assert!(bytes > 0);
    let scan = t0.elapsed().as_secs_f64();
    let (scans, found) = scans(range);
    // What stays on disk once the journal is flushed into tables.
    for p in [&ids, &digs] {
        p.rotate_memtable_and_wait().expect("flush");
    }
    db.persist(fjall3::PersistMode::SyncAll).expect("persist");
    println!(
        "  journal {:.1} MB, tables {:.1} MB (digests {:.1} MB)",
        db.journal_disk_space().expect("journal") as f64 / 1e6,
        (ids.disk_space() + digs.disk_space()) as f64 / 1e6,
        digs.disk_space() as f64 / 1e6,
    );
    drop((ids, digs, db));
    let space = du(&d);
    report(
        name,
        n,
        batch,
        [ingest, ingest_cpu, scan, scans],
        found,
        space,
        text,
    );
}

/// A RocksDB store, as its name (`rocks[-sst][-universal][-lz4][+dig]`)
/// says: written by a `WriteBatch` per batch (WAL fsync'd), or by
/// `-sst`: a table per batch (`SstFileWriter`) ingested; leveled
/// compaction (RocksDB's defaults) or `-universal`; lz4 with zstd at the
/// bottommost level, or `-lz4`: lz4 everywhere; `+dig`: with the
/// digest keys (a column family, universal as fjall's size-tiered, or
/// in `-sst` under a `\x00` prefix in the same table, ingested at once).
#[derive(Clone, Copy)]
struct Rocks {
    sst: bool,
    universal: bool,
    lz4: bool,
    dig: bool,
}

impl Rocks {
    fn parse(name: &str) -> Option<Rocks> {
        let (base, dig) = match name.strip_suffix("+dig") {
            Some(b) => (b, true),
            None => (name, false),
        };
        let mut r = Rocks {
            sst: false,
            universal: false,
            lz4: false,
            dig,
        };
        let mut rest = base.strip_prefix("rocks")?;
        for (suffix, flag) in [
            ("-sst", &mut r.sst),
            ("-universal", &mut r.universal),
            ("-lz4", &mut r.lz4),
        ] {
            if let Some(more) = rest.strip_prefix(suffix) {
                *flag = true;
                rest = more;
            }
        }
        rest.is_empty().then_some(r)
    }

    /// A column family's options (and the database's).
    fn options(self, universal: bool, cache: &rocksdb::Cache) -> rocksdb::Options {
        use rocksdb::DBCompressionType::{Lz4, Zstd};
        let memtable: usize =
            std::env::var("MEMTABLE_MB").map_or(64, |s| s.parse().expect("MEMTABLE_MB"));
        let block: usize = std::env::var("BLOCK").map_or(4096, |s| s.parse().expect("BLOCK"));
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        o.set_write_buffer_size(memtable << 20);
        o.set_compression_type(Lz4);
        o.set_bottommost_compression_type(if self.lz4 { Lz4 } else { Zstd });
        let mut t = rocksdb::BlockBasedOptions::default();
        t.set_block_size(block);
        t.set_block_cache(cache);
        o.set_block_based_table_factory(&t);
        if universal {
            o.set_compaction_style(rocksdb::DBCompactionStyle::Universal);
        }
        o
    }
}

/// The number of tables at each level of `cf` that has any.
fn rocks_levels(db: &rocksdb::DB, cf: &rocksdb::ColumnFamily) -> String {
    let mut out = Vec::new();
    for l in 0..7 {
        let n = db
            .property_value_cf(cf, &format!("rocksdb.num-files-at-level{l}"))
            .expect("property")
            .map_or(0, |v| v.parse::<u64>().expect("number"));
        if n > 0 {
            out.push(format!("L{l} {n}"));
        }
    }
    out.join(", ")
}

fn rocks_run(dir: &Path, n: u64, batch: u64, text: u64, name: &str, r: Rocks) {
    let d = fresh(dir, "rocks");
    let stage = d.join("stage");
    std::fs::create_dir_all(&stage).expect("create");
    let cache = rocksdb::Cache::new_lru_cache(64 << 20);
    let opts = r.options(r.universal, &cache);
    let mut cfs = vec![rocksdb::ColumnFamilyDescriptor::new(
        "gen",
        r.options(r.universal, &cache),
    )];
    if r.dig && !r.sst {
        // As fjall's digest partition: size-tiered, RocksDB's universal.
        cfs.push(rocksdb::ColumnFamilyDescriptor::new(
            "dig",
            r.options(true, &cache),
        ));
    }
    let db = rocksdb::DB::open_cf_descriptors(&opts, db_path(&d), cfs).expect("rocksdb");
    let ids = db.cf_handle("gen").expect("cf");
    let digs = db.cf_handle("dig");
    let mut wo = rocksdb::WriteOptions::default();
    // Each batch's WAL record written and fsync'd (fdatasync) before
    // `write` returns.
    wo.set_sync(true);
    let mut ingest_opts = rocksdb::IngestExternalFileOptions::default();
    // The table linked into the database, not copied.
    ingest_opts.set_move_files(true);
    let (t0, c0) = (Instant::now(), cpu());
    for b in 0..n.div_ceil(batch) {
        let (entries, keys) = batch_of(b * batch..((b + 1) * batch).min(n));
        if r.sst {
            // Sorted keys straight into a table: synced by `finish`,
            // then linked, synced again with its directory and logged
            // in the MANIFEST (synced) by the ingestion.
            let path = stage.join(format!("{b}.sst"));
            let mut w = rocksdb::SstFileWriter::create(&opts);
            w.open(&path).expect("sst");
            if r.dig {
                for k in keys {
                    let mut p = Vec::with_capacity(k.len() + 1);
                    p.push(0);
                    p.extend_from_slice(&k);
                    w.put(p, b"").expect("put");
                }
            }
            for (id, entry) in entries {
                w.put(id, entry).expect("put");
            }
            w.finish().expect("finish");
            db.ingest_external_file_cf_opts(ids, &ingest_opts, vec![&path])
                .expect("ingest");
        } else {
            let mut wb = rocksdb::WriteBatch::default();
            for (id, entry) in entries {
                wb.put_cf(ids, id, entry);
            }
            if let Some(digs) = digs {
                for k in keys {
                    wb.put_cf(digs, k, b"");
                }
            }
            db.write_opt(wb, &wo).expect("write");
        }
    }
    let (ingest, ingest_cpu) = (t0.elapsed().as_secs_f64(), cpu() - c0);
    let tables = || {
        format!(
            "{}{}",
            rocks_levels(&db, ids),
            digs.map_or(String::new(), |c| format!(
                " + digest tables: {}",
                rocks_levels(&db, c)
            ))
        )
    };
    println!("  tables after ingest: {}", tables());
    let (t1, settled) = (Instant::now(), settle());
    println!(
        "  then compactions: {settled:.1} CPU s in {:.1} s; ingest and them: {:.1} CPU s, \
         tables: {}",
        t1.elapsed().as_secs_f64(),
        ingest_cpu + settled,
        tables()
    );
    let t0 = Instant::now();
    let mut bytes = 0;
    let mut it = db.raw_iterator_cf(ids);
    it.seek(b"\x01");
    while let (Some(k), Some(v)) = (it.key(), it.value()) {
        bytes += k.len() + v.len();
        it.next();
    }
    it.status().expect("scan");
    drop(it);
    assert!(bytes > 0);
    let scan = t0.elapsed().as_secs_f64();
    let (scans, found) = scans(|k| {
        let mut it = db.raw_iterator_cf(ids);
        it.seek(k);
        let mut out = Vec::with_capacity(3);
        while out.len() < 3 {
            match it.key() {
                Some(k) => out.push(k.to_vec()),
                None => break,
            }
            it.next();
        }
        out
    });
    // What stays on disk once the WAL is flushed into tables.
    db.flush_cf(ids).expect("flush");
    if let Some(digs) = digs {
        db.flush_cf(digs).expect("flush");
    }
    settle();
    let size = |cf| {
        db.property_int_value_cf(cf, "rocksdb.total-sst-files-size")
            .expect("property")
            .unwrap_or(0)
    };
    let dig_size = digs.map_or(0, size);
    println!(
        "  tables {:.1} MB (digests {:.1} MB)",
        (size(ids) + dig_size) as f64 / 1e6,
        dig_size as f64 / 1e6
    );
    drop(db);
    let space = du(&d);
    report(
        name,
        n,
        batch,
        [ingest, ingest_cpu, scan, scans],
        found,
        space,
        text,
    );
}

fn db_path(d: &Path) -> PathBuf {
    d.join("db")
}

/// Whether fjall 3 opens a keyspace fjall 2 wrote.
fn compat(dir: &Path) {
    let d = fresh(dir, "compat");
    {
        let ks = fjall::Config::new(&d).open().expect("fjall");
        let p = ks
            .open_partition("gen_0", fjall::PartitionCreateOptions::default())
            .expect("partition");
        p.insert("a", "b").expect("insert");
        ks.persist(fjall::PersistMode::SyncAll).expect("persist");
    }
    match fjall3::Database::builder(&d).open() {
        Ok(db) => println!(
            "fjall 3 opened a fjall 2 keyspace: {:?}",
            db.list_keyspace_names()
        ),
        Err(e) => println!("fjall 3 refuses a fjall 2 keyspace: {e:?}"),
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// `COMPACTION`: `leveled` (the default; lsm-tree's default sizes) or
/// `leveled:L0` (the number of first-level tables that starts a
/// compaction), `tiered` or `tiered:BASE_MB` (its first level's target
/// size).
fn compaction() -> fjall::compaction::Strategy {
    let spec = std::env::var("COMPACTION").unwrap_or_default();
    let (kind, arg) = spec.split_once(':').unwrap_or((&spec, ""));
    let arg = || arg.parse::<u32>().expect("COMPACTION's number");
    match kind {
        "leveled" if spec.contains(':') => {
            fjall::compaction::Strategy::Leveled(fjall::compaction::Leveled {
                l0_threshold: arg() as u8,
                ..Default::default()
            })
        }
        "tiered" if spec.contains(':') => fjall::compaction::Strategy::SizeTiered(
            fjall::compaction::SizeTiered::new(arg() << 20, 4),
        ),
        "tiered" => {
            fjall::compaction::Strategy::SizeTiered(fjall::compaction::SizeTiered::default())
        }
        _ => fjall::compaction::Strategy::default(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).expect("usage: bench-store DIR [N] [BATCH]"));
    let n: u64 = args.get(2).map_or(100_000, |s| s.parse().expect("N"));
    let batch: u64 = args.get(3).map_or(5_000, |s| s.parse().expect("BATCH"));
    let text: u64 = (0..n).map(|i| capture(i).1.len() as u64 + 1).sum();
    println!("{}", String::from_utf8_lossy(&capture(0).1));
    let t0 = Instant::now();
    let made: usize = (0..n).map(|i| capture(i).0.len()).sum();
    println!(
        "making the {n} lines alone: {:.2} s ({made} id bytes)",
        t0.elapsed().as_secs_f64()
    );
    // What the stores written from `batch_of` spend before writing.
    let c0 = cpu();
    for b in 0..n.div_ceil(batch) {
        std::hint::black_box(batch_of(b * batch..((b + 1) * batch).min(n)));
    }
    println!("making the batches alone: {:.1} CPU s", cpu() - c0);
    let only = std::env::var("STORES").unwrap_or_default();
    let stores: Vec<&str> = if only.is_empty() {
        vec![
            "redb",
            "fjall2",
            "fjall",
            "fjall+dig",
            "plain",
            "fjall3",
            "fjall3-ingest",
            "fjall3-ingest1",
            "fjall3-l01plain",
            "fjall3-16k",
            "fjall3-kv",
            "rocks",
            "rocks+dig",
            "rocks-sst+dig",
            "compat",
        ]
    } else {
        only.split(',').collect()
    };
    // In the order named, as often as named (`STORES=a,b,a,b` alternates).
    for store in stores {
        let lz4 = fjall::CompressionType::Lz4;
        match store {
            "redb" => redb_run(&dir, n, batch, text),
            "fjall2" => fjall_run(&dir, n, batch, text, false, lz4, false),
            "fjall" => fjall_run(&dir, n, batch, text, true, lz4, false),
            "fjall+dig" => fjall_run(&dir, n, batch, text, true, lz4, true),
            "plain" => fjall_run(
                &dir,
                n,
                batch,
                text,
                true,
                fjall::CompressionType::None,
                false,
            ),
            "fjall3" => fjall3_run(&dir, n, batch, text, store, Write3::Batch, ""),
            "fjall3-ingest" => fjall3_run(&dir, n, batch, text, store, Write3::Ingest, ""),
            "fjall3-ingest1" => fjall3_run(&dir, n, batch, text, store, Write3::Ingest1, ""),
            "fjall3-l01plain" => fjall3_run(&dir, n, batch, text, store, Write3::Batch, "l01plain"),
            "fjall3-16k" => fjall3_run(&dir, n, batch, text, store, Write3::Batch, "16k"),
            "fjall3-kv" => fjall3_run(&dir, n, batch, text, store, Write3::Batch, "kv"),
            "compat" => compat(&dir),
            _ => match Rocks::parse(store) {
                Some(r) => rocks_run(&dir, n, batch, text, store, r),
                None => panic!("unknown store {store}"),
            },
        }
    }
}

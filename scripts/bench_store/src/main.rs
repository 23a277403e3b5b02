//! The embedded stores a live collection's delta could use, on the same
//! work: N CDX11 capture lines (as pywb's and OpenWayback's indexers
//! write them, about 200 bytes, hosts in random order as a crawl writes
//! them, base32 digests) in BATCH-line commits, each durable (fsync'd)
//! before the next, as `POST /NAME` commits; then a full scan and 10,000
//! short range scans (a host's first captures); then the space on disk
//! against the text's size.
//!
//! Layouts:
//! - `redb lines+ids`: redb 2.6, a `lines` table (line -> ()) and an
//!   `ids` table (capture id -> line), so a capture is stored twice;
//! - `fjall lines+ids`: the same two tables in fjall 2.11 (lz4);
//! - `fjall id->line`: one partition, capture id -> the line less its
//!   `key datetime ` (which the id holds): a capture is stored once, and
//!   a capture posted again overwrites its entry with no read (lz4, and
//!   without compression). This is what `src/engine/live.rs` keeps.
//!
//! fjall's tables are compacted leveled (as `engine::live` compacts a
//! generation; `COMPACTION=tiered` for size-tiered, which it used before
//! and which left every run of a tier for a range scan to read),
//! 4 KiB blocks (`BLOCK`), 8 MiB
//! memtables (`MEMTABLE_MB`). `STORES=redb,fjall2,fjall,plain` picks.
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

fn report(store: &str, n: u64, batch: u64, secs: [f64; 3], found: u64, space: u64, text: u64) {
    println!(
        "{store:<22}{:>9.0} lines/s ({n} lines, {batch}-line durable commits)  full scan {:.2} s  \
         10k range scans {:.3} s ({found} found)  {:.1} MB on disk for {:.1} MB of text ({:.2}x)",
        n as f64 / secs[0],
        secs[1],
        secs[2],
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
    let t0 = Instant::now();
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
    let ingest = t0.elapsed().as_secs_f64();
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
        [ingest, scan, scans],
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
) {
    let name = match (once, compression) {
        (true, fjall::CompressionType::None) => "fjall id->line, plain",
        (true, _) => "fjall id->line, lz4",
        (false, _) => "fjall lines+ids, lz4",
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
    let t0 = Instant::now();
    for b in 0..n.div_ceil(batch) {
        let mode = match std::env::var("SYNC").as_deref() {
            Ok("data") => fjall::PersistMode::SyncData,
            Ok("none") => fjall::PersistMode::Buffer,
            _ => fjall::PersistMode::SyncAll,
        };
        let mut wb = ks.batch().durability(Some(mode));
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
    let ingest = t0.elapsed().as_secs_f64();
    println!(
        "  tables after ingest: {}",
        if once { ids.segment_count() } else { lines.segment_count() + ids.segment_count() }
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
    for p in [&lines, &ids] {
        p.rotate_memtable_and_wait().expect("flush");
    }
    println!(
        "  journal {:.1} MB, tables {:.1} MB",
        ks.journal_disk_space() as f64 / 1e6,
        (lines.disk_space() + ids.disk_space()) as f64 / 1e6
    );
    drop((lines, ids, ks));
    let space = du(&d);
    report(name, n, batch, [ingest, scan, scans], found, space, text);
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
    let only = std::env::var("STORES").unwrap_or_default();
    let want = |s: &str| only.is_empty() || only.split(',').any(|o| o == s);
    if want("redb") {
        redb_run(&dir, n, batch, text);
    }
    if want("fjall2") {
        fjall_run(&dir, n, batch, text, false, fjall::CompressionType::Lz4);
    }
    if want("fjall") {
        fjall_run(&dir, n, batch, text, true, fjall::CompressionType::Lz4);
    }
    if want("plain") {
        fjall_run(&dir, n, batch, text, true, fjall::CompressionType::None);
    }
}

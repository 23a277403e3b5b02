//! redb (the store `engine::live` uses) and fjall (an LSM tree) on the
//! same work: N capture lines (CDXJ, about 240 bytes, hosts in random
//! order as a crawl writes them) in BATCH-line commits, each durable
//! (fsync'd) before the next, as `POST /NAME` commits; then a full scan
//! and 10,000 short range scans (a host's first captures); then the
//! space on disk against the text's size.
//!
//! Usage: bench-store DIR [N] [BATCH]

use std::path::{Path, PathBuf};
use std::time::Instant;

fn line(i: u64) -> Vec<u8> {
    let h = i.wrapping_mul(2_654_435_761) % 50_000;
    let p = i % 97;
    format!(
        "com,host{h})/page/{p} 2020{i:010} {{\"url\": \"http://host{h}.com/page/{p}\", \
         \"mime\": \"text/html\", \"status\": \"200\", \
         \"digest\": \"SHA1ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\", \"length\": \"1234\", \
         \"offset\": \"{}\", \"filename\": \"crawl-20200101.warc.gz\"}}",
        i * 1000
    )
    .into_bytes()
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
        "{store}\t{:.0} lines/s ({n} lines, {batch}-line durable commits)\tfull scan {:.3} s\t\
         10k range scans {:.3} s ({found} found)\t{:.1} MB on disk for {:.1} MB of text ({:.2}x)",
        n as f64 / secs[0],
        secs[1],
        secs[2],
        space as f64 / 1e6,
        text as f64 / 1e6,
        space as f64 / text as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(args.get(1).expect("usage: bench-store DIR [N] [BATCH]"));
    let n: u64 = args.get(2).map_or(100_000, |s| s.parse().expect("N"));
    let batch: u64 = args.get(3).map_or(5_000, |s| s.parse().expect("BATCH"));
    let text: u64 = (0..n).map(|i| line(i).len() as u64 + 1).sum();

    let d = fresh(&dir, "redb");
    let db = redb::Database::builder()
        .set_cache_size(64 << 20)
        .create(d.join("delta.redb"))
        .expect("redb");
    const T: redb::TableDefinition<&[u8], ()> = redb::TableDefinition::new("lines");
    let t0 = Instant::now();
    for b in 0..n.div_ceil(batch) {
        let mut tx = db.begin_write().expect("write");
        tx.set_durability(redb::Durability::Immediate);
        {
            let mut t = tx.open_table(T).expect("table");
            for i in b * batch..((b + 1) * batch).min(n) {
                t.insert(line(i).as_slice(), ()).expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    let ingest = t0.elapsed().as_secs_f64();
    let tx = db.begin_read().expect("read");
    let t = tx.open_table(T).expect("table");
    let t0 = Instant::now();
    let mut bytes = 0;
    for r in t.range::<&[u8]>(..).expect("range") {
        bytes += r.expect("entry").0.value().len();
    }
    assert!(bytes > 0);
    let scan = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let mut found = 0;
    for h in 0..10_000u64 {
        let k = format!("com,host{h})/");
        for r in t.range::<&[u8]>(k.as_bytes()..).expect("range").take(3) {
            found += u64::from(r.expect("entry").0.value().starts_with(k.as_bytes()));
        }
    }
    let scans = t0.elapsed().as_secs_f64();
    drop((t, tx, db));
    report("redb", n, batch, [ingest, scan, scans], found, du(&d), text);

    let d = fresh(&dir, "fjall");
    let ks = fjall::Config::new(&d).open().expect("fjall");
    let p = ks
        .open_partition("lines", fjall::PartitionCreateOptions::default())
        .expect("partition");
    let t0 = Instant::now();
    for b in 0..n.div_ceil(batch) {
        let mut wb = ks.batch().durability(Some(fjall::PersistMode::SyncAll));
        for i in b * batch..((b + 1) * batch).min(n) {
            wb.insert(&p, line(i), b"");
        }
        wb.commit().expect("commit");
    }
    let ingest = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let mut bytes = 0;
    for kv in p.iter() {
        bytes += kv.expect("entry").0.len();
    }
    assert!(bytes > 0);
    let scan = t0.elapsed().as_secs_f64();
    let t0 = Instant::now();
    let mut found = 0;
    for h in 0..10_000u64 {
        let k = format!("com,host{h})/");
        for kv in p.range(k.as_bytes().to_vec()..).take(3) {
            found += u64::from(kv.expect("entry").0.starts_with(k.as_bytes()));
        }
    }
    let scans = t0.elapsed().as_secs_f64();
    ks.persist(fjall::PersistMode::SyncAll).expect("persist");
    report(
        "fjall",
        n,
        batch,
        [ingest, scan, scans],
        found,
        du(&d),
        text,
    );
}

//! Reads every record of the ARC files given on the command line and
//! prints counts and time; `scripts/bench_arc.sh` compares it with
//! `gzip -dc`. Not a criterion bench: one timed pass over real-sized
//! files, like the peers it is compared with.
//!
//! Usage: `arc_read [-j THREADS] FILE...` (files are split over threads).

use std::io::Read;
use std::time::Instant;

use ukvs::arc::{Reader, Record};

#[derive(Default)]
struct Count {
    records: u64,
    errors: u64,
    block_bytes: u64,
    file_bytes: u64,
}

fn read_file(path: &str) -> std::io::Result<Count> {
    let file = std::fs::File::open(path)?;
    let mut rdr = Reader::new(file);
    let mut rec = Record::default();
    let mut c = Count::default();
    loop {
        match rdr.read_record(&mut rec) {
            Ok(true) => {
                c.records += 1;
                c.block_bytes += rec.block().len() as u64;
            }
            Ok(false) => break,
            Err(e) => {
                c.errors += 1;
                if e.is_fatal() {
                    eprintln!("{path}: {e}");
                    break;
                }
            }
        }
    }
    c.file_bytes = rdr.position();
    Ok(c)
}

fn main() -> std::io::Result<()> {
    let mut args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let mut threads = 1;
    if args.first().map(String::as_str) == Some("-j") && args.len() > 1 {
        threads = args[1].parse().unwrap_or(1).max(1);
        args.drain(..2);
    }
    if args.is_empty() {
        eprintln!("usage: arc_read [-j THREADS] FILE...");
        return Ok(());
    }
    let t = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let total = std::sync::Mutex::new(Count::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = args.get(i) else { break };
                match read_file(path) {
                    Ok(c) => {
                        let mut t = total.lock().unwrap();
                        t.records += c.records;
                        t.errors += c.errors;
                        t.block_bytes += c.block_bytes;
                        t.file_bytes += c.file_bytes;
                    }
                    Err(e) => eprintln!("{path}: {e}"),
                }
            });
        }
    });
    let secs = t.elapsed().as_secs_f64();
    let c = total.into_inner().unwrap();
    println!(
        "arc_read -j {threads}: {} files, {} records, {} errors, {:.1} MB stored, {:.1} MB blocks, {:.3} s, {:.0} MB/s stored",
        args.len(),
        c.records,
        c.errors,
        c.file_bytes as f64 / 1e6,
        c.block_bytes as f64 / 1e6,
        secs,
        c.file_bytes as f64 / 1e6 / secs
    );
    // Keep `Read` in scope for readers of this file wondering what Reader
    // needs: any `Read`, here a `File` (the reader buffers by itself).
    let _: Option<&dyn Read> = None;
    Ok(())
}

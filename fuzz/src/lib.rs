//! The bodies of the fuzz targets, one function each, so that a crash
//! found by `cargo fuzz` replays through the same code in
//! `tests/it/fuzz.rs` (which reads `tests/data/fuzz/TARGET/*`).
//!
//! Each function must not panic, hang or allocate without bound on any
//! input; what it computes is thrown away.

use ukvs::capture::{self, Indexer, Profile};

/// The server's model of pywb's CDX objects (in the binary, so included
/// by path).
#[allow(dead_code)]
#[path = "../../src/serve/pywb.rs"]
mod pywb;

/// The indexers of every profile, with and without `--all-records`.
fn indexers() -> Vec<Indexer> {
    [Profile::Ukvs, Profile::Cdxj, Profile::Cdx11]
        .into_iter()
        .flat_map(|profile| {
            [false, true].map(|all_records| {
                let opts = capture::Options {
                    profile,
                    all_records,
                    verify_digests: true,
                    ..capture::Options::default()
                };
                Indexer::new(opts, b"f")
            })
        })
        .collect()
}

/// Limits that keep one input's memory small: a record block of at most
/// 1 MiB.
const MAX_BLOCK: u64 = 1 << 20;

/// WARC bytes through the reader (a small buffer, and shared bytes), every
/// profile, and POST pairing of neighbours.
pub fn warc_stream(data: &[u8]) {
    use ukvs::warc::{Options, Reader, Record};
    let opts = Options {
        max_block: MAX_BLOCK,
        buffer_size: 256,
    };
    let mut ix = indexers();
    let mut rdr = Reader::with_options(data, opts.clone());
    let (mut rec, mut prev) = (Record::default(), Record::default());
    let mut out = Vec::new();
    for _ in 0..(4 * data.len() + 16) {
        match rdr.read_record(&mut rec) {
            Ok(true) => {
                let post = capture::warc::post_pair(&prev, &rec);
                for i in &mut ix {
                    out.clear();
                    i.write_warc_post(&rec, None, post.as_ref(), &mut out);
                }
                std::mem::swap(&mut prev, &mut rec);
            }
            Ok(false) => break,
            Err(e) if e.is_fatal() => break,
            Err(_) => {}
        }
    }
    let shared: ukvs::warc::SharedBytes = std::sync::Arc::new(data.to_vec());
    let mut rdr = Reader::from_shared(shared, opts);
    for _ in 0..(4 * data.len() + 16) {
        match rdr.read_record(&mut rec) {
            Ok(false) => break,
            Err(e) if e.is_fatal() => break,
            _ => {}
        }
    }
    let _ = ukvs::warc::is_warc(data);
}

/// ARC bytes through the reader and every profile.
pub fn arc_stream(data: &[u8]) {
    use ukvs::arc::{Options, Reader, Record};
    let opts = Options {
        max_block: MAX_BLOCK,
        buffer_size: 256,
    };
    let mut ix = indexers();
    let mut rdr = Reader::with_options(data, opts);
    let mut rec = Record::default();
    let mut out = Vec::new();
    for _ in 0..(4 * data.len() + 16) {
        match rdr.read_record(&mut rec) {
            Ok(true) => {
                for i in &mut ix {
                    out.clear();
                    i.write(&rec, &mut out);
                }
            }
            Ok(false) => break,
            Err(e) if e.is_fatal() => break,
            Err(_) => {}
        }
    }
}

/// A URL through every SURT profile.
pub fn surt(data: &[u8]) {
    for with_scheme in [false, true] {
        for host_massage in [false, true] {
            let opts = ukvs::surt::Options {
                with_scheme,
                host_massage,
                ..ukvs::surt::Options::default()
            };
            let _ = ukvs::surt::key(data, &opts);
        }
    }
}

/// Lines of a UKVS file through the validator and the line model.
pub fn ukvs_lines(data: &[u8]) {
    let mut v = ukvs::ukvs::Validator::new();
    for line in data.split(|&b| b == b'\n') {
        let _ = v.line(line);
        if let ukvs::ukvs::Line::Data(r) = ukvs::ukvs::classify(line) {
            for t in r.tokens() {
                let _ = t;
            }
        }
    }
    let _ = v.finish();
}

/// CDX (with a legend taken from the first line) and CDXJ lines converted
/// to captures.
pub fn cdx_convert(data: &[u8]) {
    let mut lines = data.split(|&b| b == b'\n');
    let first = lines.next().unwrap_or_default();
    let _ = ukvs::ukvs::convert::sniff(first, 1);
    let legend = ukvs::ukvs::convert::CdxLegend::parse(first).and_then(Result::ok);
    for (n, line) in lines.enumerate() {
        let _ = ukvs::ukvs::convert::from_cdxj(line, n as u64 + 2);
        if let Some(l) = &legend {
            let _ = ukvs::ukvs::convert::from_cdx(l, line, n as u64 + 2);
        }
    }
}

/// MementoMap lines and frequency fields, parsed and written back.
pub fn mementomap_lines(data: &[u8]) {
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        if let Ok(r) = ukvs::mementomap::record::Record::parse(line, n as u64 + 1) {
            let _ = r.to_line();
        }
        if let Ok(f) = ukvs::mementomap::Frequency::parse(line) {
            let mut out = Vec::new();
            f.plus(f).write_to(&mut out);
            f.add_overlapping(f).write_to(&mut out);
        }
    }
}

/// ZipNum secondary-index lines.
pub fn zipnum_idx(data: &[u8]) {
    for (n, line) in data.split(|&b| b == b'\n').enumerate() {
        if let Ok(b) = ukvs::sorted::zipnum::Block::parse(line, n as u64 + 1) {
            let _ = b.to_line();
        }
        let _ = ukvs::sorted::zipnum::first_key(line);
    }
}

/// Index lines read as pywb's CDX server reads them, and rendered in every
/// output, with and without field lists.
pub fn pywb_lines(data: &[u8]) {
    let names = ["offset".to_string(), "digest".to_string()];
    let fl: Vec<String> = ["urlkey", "timestamp", "url", "bogus", "mime", "mime"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for line in data.split(|&b| b == b'\n') {
        if let Ok(mut o) = pywb::Obj::parse(line, &names) {
            let _ = (o.to_cdxj(None), o.to_json(None), o.to_text(None), o.whole());
            let _ = (
                o.to_cdxj(Some(&fl)),
                o.to_json(Some(&fl)),
                o.to_text(Some(&fl)),
            );
            let _ = o.get_str("status");
            o.set("source", "x");
            let _ = (o.to_text(None), o.whole(), o.order_key());
        }
    }
}

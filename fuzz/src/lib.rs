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
        .chain(custom_indexers())
        .collect()
}

/// Indexers with cdxj-indexer's options: every kind of field, every
/// record, each line shape, and the fields added to `ukvs` lines.
fn custom_indexers() -> Vec<Indexer> {
    use ukvs::capture::fields::{Custom, Records, Shape};
    let fields = "warc-type,content-type,http:date,http:server,req.http:referer,method,x";
    [
        (Profile::Cdxj, Shape::Json, Some(fields)),
        (Profile::Cdxj, Shape::Cdx9, None),
        (Profile::Cdxj, Shape::Cdx11, None),
        (Profile::Ukvs, Shape::Json, Some(fields)),
    ]
    .into_iter()
    .map(|(profile, shape, fields)| {
        let custom = Custom::new(Records::All, fields, None, true, shape);
        let opts = capture::Options {
            profile,
            verify_digests: true,
            cdxj: custom.map(std::sync::Arc::new),
            ..capture::Options::default()
        };
        Indexer::new(opts, b"f")
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
                    let block = rec.block();
                    let hashed = i
                        .digest_start(&rec)
                        .map(|start| capture::sha1(&block[start.min(block.len())..]));
                    i.write_hashed(&rec, hashed, &mut out);
                }
            }
            Ok(false) => break,
            Err(e) if e.is_fatal() => break,
            Err(_) => {}
        }
    }
    for i in &mut ix {
        i.finish(&mut out);
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

/// A body POSTed to a live collection, line by line, with the default
/// SURT profile and with scheme and trailing comma: every line taken is
/// read by pywb's reader, and its stored form has the id it was given.
pub fn post_body(data: &[u8]) {
    let names = vec!["offset".to_string(), "digest".to_string()];
    let profiles = [
        ukvs::surt::Options::default(),
        ukvs::surt::Options {
            with_scheme: true,
            trailing_comma: true,
            ..ukvs::surt::Options::default()
        },
    ];
    for opts in &profiles {
        let mut body = ukvs::ukvs::post::Body::new(opts, &names);
        for line in data.split(|&b| b == b'\n') {
            if let Ok(Some(r)) = body.line(line) {
                assert!(
                    pywb::Obj::parse(&r.line, &names).is_ok(),
                    "a line taken that pywb's reader refuses: {:?}",
                    String::from_utf8_lossy(&r.line)
                );
                assert_eq!(
                    ukvs::ukvs::post::line_id(&r.line, &names).as_deref(),
                    Some(&r.id[..]),
                    "the stored line's id differs: {:?}",
                    String::from_utf8_lossy(&r.line)
                );
            }
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

/// Index lines through MementoMap generation, with and without queries
/// kept and decompositions, holding a host's lines as generation does and
/// holding almost none (late records then go through the sort, and held
/// lines out and folded a few at a time): both must give the same
/// records.
pub fn generate_lines(data: &[u8]) {
    use ukvs::mementomap::generate::{records_held, records_of, Dimension, Options};
    let decompositions = [Dimension::Year, Dimension::Status, Dimension::Mime];
    for (keep_query, by) in [(false, Vec::new()), (true, decompositions.to_vec())] {
        let opts = Options {
            keep_query,
            by,
            ..Options::default()
        };
        let held = records_of(data, &opts);
        let few = records_held(data, &opts, 64);
        if let (Ok((held, _)), Ok((few, _))) = (held, few) {
            assert!(held == few, "the records depend on how many lines are held");
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

/// Kulturarw3 bytes: every object and error, the digests, the tree path
/// checks against each object, and the bytes read as a tree path.
pub fn kulturarw3_objects(data: &[u8]) {
    use ukvs::kulturarw3::{check_path, looks_like_object, objects, parse_tree_path};
    let _ = looks_like_object(data);
    let path =
        parse_tree_path(b"archive/9f/www.kb.se/1/33c6bfbd6f8365a72f333487e7557b58.875721538");
    // Errors come between objects: the reader goes on after each.
    for o in objects(data).take(data.len() + 16).flatten() {
        let _ = (o.sha1_base32(), o.md5_ok());
        if let Some(p) = &path {
            let _ = check_path(p, &o);
        }
    }
    if let Some(p) = parse_tree_path(data) {
        for o in objects(data).take(4).flatten() {
            let _ = check_path(&p, &o);
        }
    }
}

/// Nedlib bytes as a `.meta` file (with the bytes as its data file too),
/// as an access list, and as a directory listing and a tree path.
pub fn nedlib_meta(data: &[u8]) {
    use ukvs::nedlib::{
        check, looks_like_access_list, looks_like_meta, pair, parse_access_list, parse_meta,
        parse_path,
    };
    let _ = (looks_like_meta(data), looks_like_access_list(data));
    if let Ok(meta) = parse_meta(data) {
        let _ = ukvs::capture::object::Object::of_nedlib(&meta, data).digest();
        let _ = check(&meta, data, "0aca879afd45103783c3990636c860ac");
        for e in parse_access_list(data).take(data.len() + 16).flatten() {
            let _ = e.check(&meta);
        }
    }
    for _ in parse_access_list(data).take(data.len() + 16) {}
    let text = String::from_utf8_lossy(data);
    let names: Vec<&str> = text.split('\n').collect();
    let _ = pair(&names);
    for n in &names {
        let _ = parse_path(*n);
    }
}

/// Index lines through the statistics: every layout, in one scan and in
/// two parts absorbed, a merge of the two reports, and every rendering.
pub fn stats_lines(data: &[u8]) {
    use ukvs::stats::{html, write_csv, write_text, Layout, Report, Scan};
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let first = lines
        .iter()
        .find(|l| !ukvs::stats::is_header(l))
        .copied()
        .unwrap_or(b"");
    let mut layouts = vec![Layout::Json, Layout::guess(first)];
    layouts.extend(lines.iter().take(2).filter_map(|l| Layout::from_legend(l)));
    for layout in &layouts {
        let (mut whole, mut a, mut b) = (Scan::new(3), Scan::new(0), Scan::new(0));
        for (i, line) in lines.iter().enumerate() {
            let _ = whole.line(layout, line);
            let _ = if i < lines.len() / 2 {
                a.line(layout, line)
            } else {
                b.line(layout, line)
            };
        }
        let ra = a.clone().finish();
        a.absorb(b.clone());
        let merged = Report::merge(vec![ra, b.finish()], 2);
        let report = whole.finish();
        let mut out = Vec::new();
        let _ = write_text(&report, &mut out);
        let _ = write_csv(&merged, &mut out);
        let _ = html::write_html(&a.finish(), "t", &mut out);
        let _ = serde_json::from_str::<Report>(&report.to_json());
    }
}

/// Digest spellings, one per line: a spelling read gives a canonical
/// form that reads back to the same digest and is its own canonical
/// form; each line read as an index line gives digest-file lines that
/// read back keyed by that form.
pub fn digest_spellings(data: &[u8]) {
    use ukvs::digest::{Digest, Entry, IndexRecord};
    let names = vec!["offset".to_string(), "digest".to_string()];
    for line in data.split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(line);
        if let Ok(d) = Digest::parse(&text) {
            let canon = d.canonical();
            assert_eq!(
                Digest::parse(&canon).as_ref(),
                Ok(&d),
                "{canon:?} (of {text:?}) does not read back"
            );
            assert_eq!(d.bytes().len(), d.algo().digest_len());
        }
        if let Some(rec) = IndexRecord::parse(line, &names) {
            let mut out = Vec::new();
            rec.digest_lines(&mut out);
            for l in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                let e = Entry::parse(l).unwrap_or_else(|| {
                    panic!(
                        "a digest line that does not read back: {:?}",
                        String::from_utf8_lossy(l)
                    )
                });
                let d = Digest::parse(&e.digest).expect("a digest line's key reads");
                assert_eq!(d.canonical(), e.digest);
            }
        }
    }
}

/// OutbackCDX's query form: the first line is a query string (the CDX
/// form and the XML `q=`), the others index lines answered through it.
/// Every JSON row written must be JSON, every text row one line.
pub fn outback_query(data: &[u8]) {
    use ukvs::ukvs::outback::{
        closest_order, xml_capture, Capture, JsonRows, Params, Query, XmlQuery,
    };
    let mut lines = data.split(|&b| b == b'\n');
    let first = String::from_utf8_lossy(lines.next().unwrap_or_default()).into_owned();
    let params = Params::parse(&first);
    let _ = XmlQuery::parse(&params);
    let Ok(q) = Query::parse(&params) else {
        return;
    };
    let key = q.key(&ukvs::surt::Options::default());
    let range = q.range(&key);
    let names = vec!["offset".to_string(), "digest".to_string()];
    let mut rows = JsonRows::default();
    let mut kept = Vec::new();
    for line in lines {
        let Ok(c) = Capture::from_line(line, &names) else {
            continue;
        };
        let _ = range.contains(line);
        if !q.accepts(&c) {
            continue;
        }
        if let Some(col) = &q.collapse {
            let _ = col.token(&c);
        }
        let text = c.text(&q.fields);
        assert!(!text.contains('\n'), "a text row of two lines: {text:?}");
        let row = rows.row(&c, &q.fields, Some(&q.field_names));
        let row = row.trim_start_matches(',');
        assert!(
            serde_json::from_str::<serde_json::Value>(row).is_ok(),
            "not JSON: {row}"
        );
        let _ = xml_capture(&c);
        kept.push(c);
    }
    if let Some(at) = &q.closest {
        let n = kept.len();
        kept.sort_by_key(Capture::timestamp_u64);
        assert_eq!(closest_order(kept, at, Capture::timestamp_u64).len(), n);
    }
}

/// The Wayback CDX API's query-string parser (in the binary, so included
/// by path).
#[allow(dead_code)]
#[path = "../../src/serve/wayback/params.rs"]
mod wayback_params;

/// A query string: read or refused with a message; what is read is used
/// (fields, each filter on the input itself).
pub fn wayback_params(data: &[u8]) {
    let q = String::from_utf8_lossy(data);
    match wayback_params::Params::parse(&q) {
        Ok(p) => {
            let _ = p.fields();
            for f in &p.filters {
                let _ = f.accepts(&q);
            }
        }
        Err(msg) => assert!(!msg.is_empty()),
    }
}

/// A WACZ package: the ZIP's central directory and entries read from
/// arbitrary bytes, each entry's contents inflated (a bounded amount),
/// its `.idx`, data-file name and `datapackage.json` parsed; the same
/// parsers on the raw bytes. Invariant: an `.idx` line read becomes a
/// ZipNum secondary-index line that reads back with its offset moved.
pub fn wacz_package(data: &[u8]) {
    use std::io::Read;
    use ukvs::wacz;
    let check_idx = |bytes: &[u8]| {
        let _ = wacz::idx_data_name(bytes);
        if let Ok(entries) = wacz::parse_idx("indexes/index.idx", bytes) {
            let z = wacz::zipnum_idx(&entries, "s", 7);
            for (e, line) in entries.iter().zip(z.split(|&b| b == b'\n')) {
                // A prefix with a tab or LF is not a ZipNum key; the rest
                // must read back.
                if e.prefix.iter().any(|&b| b == b'\t' || b == b'\n') {
                    continue;
                }
                let b = ukvs::sorted::zipnum::Block::parse(line, 1).expect("own line reads back");
                assert_eq!((b.offset, b.length), (e.offset.saturating_add(7), e.length));
            }
        }
    };
    check_idx(data);
    let _ = wacz::parse_datapackage(data);
    // The same bytes as the Range header of a request for an entry's
    // bytes (`ukvs serve`'s /NAME/archive/FILE): any range it gives lies
    // within the entry and is not empty.
    if let Ok(text) = std::str::from_utf8(data) {
        for size in [0, 1, 7, 1 << 20, u64::MAX] {
            if let Ok(r) = wacz::byte_range(text, size) {
                assert!(r.start < r.end && r.end <= size, "{text:?} {size}: {r:?}");
            }
        }
    }
    let Ok(package) = wacz::Package::read(std::io::Cursor::new(data)) else {
        return;
    };
    for e in &package.entries {
        let Some(stored) = usize::try_from(e.range().start)
            .ok()
            .zip(usize::try_from(e.range().end).ok())
            .and_then(|(a, b)| data.get(a..b))
        else {
            continue;
        };
        let mut contents = Vec::new();
        if let Ok(r) = e.reader(stored) {
            let _ = r.take(1 << 20).read_to_end(&mut contents);
        }
        let _ = (e.is_archive(), e.archive_name());
        check_idx(&contents);
        let _ = wacz::parse_datapackage(&contents);
    }
    let _ = package.archives().count();
    let _ = package.index(None);
}

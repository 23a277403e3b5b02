//! WACZ packages: indexing the WARCs inside, reading the package's own
//! index wherever indexes are read, writing the `cdxj-gzip-1.0` index as
//! py-wacz writes it, and damage. py-wacz (`wacz create`) and
//! cdxj-indexer run live where installed; py-wacz's own fixtures
//! (`tests/data/wacz`) are read as it reads them.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::serve::{agent, get, start_pywb, try_get, Server};
use crate::util::{self, assert_ok, data_dir, run};

/// The options py-wacz indexes its WARCs with (cdxj-indexer's `-p -d
/// --fields referrer,req.http:cookie`).
const PY_WACZ_OPTIONS: [&str; 6] = [
    "--format",
    "cdxj",
    "--post-append",
    "--digest-records",
    "--fields",
    "referrer,req.http:cookie",
];

fn ukvs(args: &[&str]) -> Output {
    run(args, b"")
}

fn stdout(o: &Output) -> Vec<u8> {
    assert_ok(o);
    o.stdout.clone()
}

/// Every entry of a ZIP: name and contents (inflated).
fn entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).unwrap();
            let mut buf = Vec::new();
            f.read_to_end(&mut buf).unwrap();
            (f.name().to_string(), buf)
        })
        .collect()
}

fn entry(path: &Path, name: &str) -> Vec<u8> {
    entries(path)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{} has no {name}", path.display()))
        .1
}

fn gunzip(gz: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(gz)
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The package's index lines, inflated from its `indexes/index.cdx.gz`.
fn package_lines(path: &Path) -> Vec<u8> {
    gunzip(&entry(path, "indexes/index.cdx.gz"))
}

/// Extracts the WARCs of a package into `dir/archive/`; their paths.
fn extract_archives(package: &Path, dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (name, bytes) in entries(package) {
        if let Some(base) = name.strip_prefix("archive/") {
            let p = dir.join("archive").join(base);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, bytes).unwrap();
            out.push(p);
        }
    }
    out
}

/// Writes a ZIP of `(name, contents, deflated)` entries, in order.
fn write_zip(path: &Path, parts: &[(&str, &[u8], bool)]) {
    use zip::write::SimpleFileOptions;
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, bytes, deflated) in parts {
        let method = match deflated {
            true => zip::CompressionMethod::Deflated,
            false => zip::CompressionMethod::Stored,
        };
        w.start_file(
            *name,
            SimpleFileOptions::default().compression_method(method),
        )
        .unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap();
}

/// Runs py-wacz's `wacz create -o OUT WARCS...`; false (with a skip
/// message) when py-wacz is not installed.
fn py_wacz_create(out: &Path, warcs: &[PathBuf], test: &str) -> bool {
    if !util::has_python_module("wacz", test) {
        return false;
    }
    let o = Command::new("python3")
        .args(["-m", "wacz", "create", "-o"])
        .arg(out)
        .args(warcs)
        .output()
        .expect("run py-wacz");
    assert!(
        o.status.success(),
        "wacz create: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    true
}

/// WARCs of the fixtures with responses, revisits, resources, POSTs and
/// chunked bodies.
fn fixture_warcs() -> Vec<PathBuf> {
    [
        "cc.warc.gz",
        "example-resource.warc.gz",
        "example-digest.warc",
        "post-test.warc.gz",
        "example.warc.gz",
        "example-iana.org-chunked.warc",
        "post-test-more.warc",
    ]
    .iter()
    .map(|n| data_dir().join("warc").join(n))
    .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn index_of_a_wacz_is_cdxj_indexers_of_its_extracted_warcs() {
    let test = "index_of_a_wacz_is_cdxj_indexers_of_its_extracted_warcs";
    let tmp = tempfile::tempdir().unwrap();
    let package = tmp.path().join("p.wacz");
    if !py_wacz_create(&package, &fixture_warcs(), test)
        || !util::has_python_module("cdxj_indexer", test)
    {
        return;
    }
    let warcs = extract_archives(&package, &tmp.path().join("x"));
    assert_eq!(warcs.len(), 7);
    // cdxj-indexer on the extracted WARCs: names as in the package,
    // offsets within each WARC.
    let mut args = vec![Path::new("-s")];
    args.extend(warcs.iter().map(PathBuf::as_path));
    let (theirs, ok) = crate::index::cdxj_indexer_run(&args);
    assert!(ok, "cdxj-indexer failed");
    let ours = stdout(&ukvs(&["index", s(&package), "--format", "cdxj"]));
    assert!(ours.len() > 1000);
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
    // Read streamed instead of mapped: the same lines.
    let streamed = stdout(&ukvs(&[
        "index",
        s(&package),
        "--format",
        "cdxj",
        "--no-mmap",
    ]));
    assert_eq!(streamed, ours);
    // With py-wacz's options: the package's own index, line for line
    // (recordDigest read again from the package at the entry's offset).
    for extra in [&[][..], &["--no-mmap"][..], &["-j", "1"][..]] {
        let args: Vec<&str> = [&["index", s(&package)][..], &PY_WACZ_OPTIONS, extra].concat();
        let own = stdout(&ukvs(&args));
        assert_eq!(
            String::from_utf8_lossy(&own),
            String::from_utf8_lossy(&package_lines(&package)),
            "{extra:?}"
        );
    }
    // Every profile: the package's WARCs index as the extracted ones do,
    // and a directory holding the package as the package.
    let dir = tmp.path().join("dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&package, dir.join("p.wacz")).unwrap();
    for profile in ["ukvs", "cdxj", "cdx11", "cdx9"] {
        let from_package = stdout(&ukvs(&["index", s(&package), "--format", profile]));
        let mut args = vec!["index", "--format", profile];
        args.extend(warcs.iter().map(|p| s(p)));
        let from_files = stdout(&ukvs(&args));
        assert_eq!(from_package, from_files, "{profile}");
        let from_dir = stdout(&ukvs(&["index", s(&dir), "--format", profile]));
        assert_eq!(from_dir, from_package, "{profile}");
    }
    // One scan gives the MementoMap and statistics of its index.
    let idx = tmp.path().join("p.ukvs");
    let map = tmp.path().join("p.map");
    let stats = tmp.path().join("p.stats");
    assert_ok(&ukvs(&[
        "index",
        s(&package),
        "-o",
        s(&idx),
        "--mementomap",
        s(&map),
        "--stats",
        s(&stats),
    ]));
    let map_after = stdout(&ukvs(&["mementomap", "generate", s(&idx)]));
    let data = |b: &[u8]| -> Vec<u8> {
        b.split(|&c| c == b'\n')
            .filter(|l| !l.starts_with(b"!meta"))
            .flat_map(|l| [l, b"\n"].concat())
            .collect()
    };
    assert_eq!(data(&std::fs::read(&map).unwrap()), data(&map_after));
    let stats_after = stdout(&ukvs(&["stats", s(&idx)]));
    assert_eq!(std::fs::read(&stats).unwrap(), stats_after);
}

#[test]
fn zipnum_build_wacz_layout_is_py_waczs_index_byte_for_byte() {
    let test = "zipnum_build_wacz_layout_is_py_waczs_index_byte_for_byte";
    let Some(tools) = util::shared_dir("tools", test) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let gen = tmp.path().join("gen");
    let made = Command::new("python3")
        .arg(tools.join("gen_arc_corpus.py"))
        .args([
            "--warc",
            "--files",
            "2",
            "--records-per-file",
            "700",
            "--jobs",
            "1",
        ])
        .args(["--seed", "wacz", "--out"])
        .arg(&gen)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let mut warcs: Vec<PathBuf> = std::fs::read_dir(&gen)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| s(p).ends_with(".warc.gz"))
        .collect();
    warcs.sort();
    let package = tmp.path().join("g.wacz");
    if !py_wacz_create(&package, &warcs, test) {
        return;
    }
    // Built from py-wacz's lines: its two files, byte for byte, over
    // blocks of 1024 lines and a short last one.
    let lines = tmp.path().join("lines.cdxj");
    std::fs::write(&lines, package_lines(&package)).unwrap();
    let out = tmp.path().join("built");
    assert_ok(&ukvs(&[
        "zipnum",
        "build",
        "--layout",
        "wacz",
        s(&lines),
        "-o",
        s(&out),
    ]));
    let idx = entry(&package, "indexes/index.idx");
    assert!(idx.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count() > 2);
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(out.join("index.idx")).unwrap()),
        String::from_utf8_lossy(&idx)
    );
    assert!(
        std::fs::read(out.join("index.cdx.gz")).unwrap() == entry(&package, "indexes/index.cdx.gz")
    );

    // From WARCs: `ukvs index` with py-wacz's options, then the build,
    // give the package's files (WARCs that state their payload digests;
    // see FORMATS 2.7 for those that do not).
    let package = tmp.path().join("f.wacz");
    assert!(py_wacz_create(&package, &fixture_warcs(), test));
    let idx_lines = tmp.path().join("f.cdxj");
    let args: Vec<&str> = [
        &["index", s(&package), "-o", s(&idx_lines)][..],
        &PY_WACZ_OPTIONS,
    ]
    .concat();
    assert_ok(&ukvs(&args));
    let out = tmp.path().join("built2");
    assert_ok(&ukvs(&[
        "zipnum",
        "build",
        "--layout",
        "wacz",
        s(&idx_lines),
        "-o",
        s(&out),
    ]));
    assert_eq!(
        std::fs::read(out.join("index.idx")).unwrap(),
        entry(&package, "indexes/index.idx")
    );
    assert!(
        std::fs::read(out.join("index.cdx.gz")).unwrap() == entry(&package, "indexes/index.cdx.gz")
    );
}

/// A package whose index spans many blocks, written here without py-wacz:
/// an index of the fixture WARCs repeated under many URLs is cut by
/// `zipnum build --layout wacz` into blocks of 7 lines and zipped with
/// the WARCs (stored) and a deflated `index.idx`, as py-wacz lays it out.
fn many_block_package(dir: &Path) -> (PathBuf, PathBuf) {
    let mut args = vec!["index", "--format", "cdxj"];
    let warcs = fixture_warcs();
    args.extend(warcs.iter().map(|p| s(p)));
    let one = stdout(&ukvs(&args));
    // More keys: each line again under 40 made-up hosts, sorted.
    let mut lines: Vec<Vec<u8>> = Vec::new();
    for l in one.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        lines.push(l.to_vec());
        for i in 0..40 {
            let mut k = format!("com,host{i:02})/").into_bytes();
            let rest = &l[l.iter().position(|&b| b == b' ').unwrap()..];
            k.extend_from_slice(rest);
            lines.push(k);
        }
    }
    lines.sort();
    let plain = dir.join("index.cdxj");
    std::fs::write(
        &plain,
        lines
            .iter()
            .flat_map(|l| [&l[..], b"\n"].concat())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let built = dir.join("built");
    assert_ok(&ukvs(&[
        "zipnum",
        "build",
        "--layout",
        "wacz",
        "--lines-per-block",
        "7",
        s(&plain),
        "-o",
        s(&built),
    ]));
    let gz = std::fs::read(built.join("index.cdx.gz")).unwrap();
    let idx = std::fs::read(built.join("index.idx")).unwrap();
    let mut parts: Vec<(String, Vec<u8>, bool)> = vec![
        ("indexes/index.cdx.gz".into(), gz, false),
        ("indexes/index.idx".into(), idx, true),
    ];
    for w in &warcs {
        let name = format!("archive/{}", w.file_name().unwrap().to_str().unwrap());
        parts.push((name, std::fs::read(w).unwrap(), false));
    }
    // What py-wacz's datapackage.json says of each entry (WACZ 1.1).
    let resources: Vec<serde_json::Value> = parts
        .iter()
        .map(|(n, b, _)| {
            use sha2::Digest;
            let hex: String = sha2::Sha256::digest(b).iter().map(|x| format!("{x:02x}")).collect();
            serde_json::json!({"name": n.rsplit('/').next(), "path": n, "hash": format!("sha256:{hex}"), "bytes": b.len()})
        })
        .collect();
    let dp = serde_json::json!({"profile": "data-package", "resources": resources, "wacz_version": "1.1.1"});
    parts.push(("datapackage.json".into(), dp.to_string().into_bytes(), true));
    let package = dir.join("many.wacz");
    let borrowed: Vec<(&str, &[u8], bool)> = parts
        .iter()
        .map(|(n, b, d)| (n.as_str(), &b[..], *d))
        .collect();
    write_zip(&package, &borrowed);
    (package, plain)
}

#[test]
fn every_reader_of_indexes_reads_a_waczs_index_as_its_extracted_index() {
    let tmp = tempfile::tempdir().unwrap();
    let (package, plain) = many_block_package(tmp.path());
    let (p, x) = (s(&package), s(&plain));
    let urls = [
        "http://example.com/",
        "example.com",
        "host07.com/",
        "httpbin.org/post",
        "iana.org/",
        "nothere.example/",
    ];
    for url in urls {
        for m in ["exact", "prefix", "host", "domain"] {
            let a = ukvs(&["lookup", "--match", m, p, url]);
            let b = ukvs(&["lookup", "--match", m, x, url]);
            assert_eq!(a.status.code(), b.status.code(), "{url} {m}");
            assert_eq!(a.stdout, b.stdout, "{url} {m}");
        }
    }
    let hit = ukvs(&["lookup", "--match", "domain", p, "com"]);
    assert!(
        hit.stdout.split(|&b| b == b'\n').count() > 100,
        "the lookup crosses blocks"
    );
    // The jobs that read front to back.
    for cmd in [&["stats"][..], &["cat"], &["cat", "--json"], &["sort"]] {
        let a = stdout(&ukvs(&[cmd, &[p]].concat()));
        let b = stdout(&ukvs(&[cmd, &[x]].concat()));
        assert_eq!(a, b, "{cmd:?}");
    }
    let strip_meta = |b: Vec<u8>| -> Vec<u8> {
        b.split(|&c| c == b'\n')
            .filter(|l| !l.starts_with(b"!meta"))
            .flat_map(|l| [l, b"\n"].concat())
            .collect()
    };
    assert_eq!(
        strip_meta(stdout(&ukvs(&["mementomap", "generate", p]))),
        strip_meta(stdout(&ukvs(&["mementomap", "generate", x])))
    );
    let v = stdout(&ukvs(&["validate", p]));
    let v = String::from_utf8_lossy(&v);
    assert!(v.contains("0 problems: valid"), "{v}");
    // A directory of packages is one collection: the answers of both
    // packages, merged.
    let dir = tmp.path().join("coll");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(&package, dir.join("a.wacz")).unwrap();
    std::fs::copy(
        data_dir().join("wacz/valid_example_2.wacz"),
        dir.join("b.wacz"),
    )
    .unwrap();
    let both = stdout(&ukvs(&["lookup", s(&dir), "example.com/"]));
    let a = stdout(&ukvs(&["lookup", p, "example.com/"]));
    let b = stdout(&ukvs(&["lookup", s(&dir.join("b.wacz")), "example.com/"]));
    let mut want: Vec<&[u8]> = a
        .split_inclusive(|&c| c == b'\n')
        .chain(b.split_inclusive(|&c| c == b'\n'))
        .collect();
    want.sort();
    assert_eq!(both, want.concat());
    assert!(!b.is_empty());
}

#[test]
fn serve_answers_the_cdx_api_over_a_wacz_as_over_its_extracted_index() {
    let tmp = tempfile::tempdir().unwrap();
    let (package, plain) = many_block_package(tmp.path());
    // The same lines and blocks as a pywb ZipNum cluster: a package's
    // index is served as one (pywb's pages of blocks included), so every
    // answer is the cluster's; those within one page are also the plain
    // index's.
    let cluster = tmp.path().join("cluster");
    assert_ok(&ukvs(&[
        "zipnum",
        "build",
        "--lines-per-block",
        "7",
        s(&plain),
        "-o",
        s(&cluster),
    ]));
    // One collection name for all: answers name their collection.
    let start = |p: &Path| Server::start(&["--quiet".to_string(), format!("c={}", s(p))]);
    let over_package = start(&package);
    let over_cluster = start(&cluster);
    let over_index = start(&plain);
    let agent = agent();
    let mut answered = 0;
    for url in [
        "example.com/",
        "host07.com/*",
        "*.com",
        "httpbin.org/post",
        "iana.org/",
        "no.example/",
    ] {
        for extra in [
            "",
            "&output=json",
            "&matchType=prefix&limit=5",
            "&sort=reverse",
            "&closest=20140101000000&sort=closest&limit=3",
            "&filter=mime:text/html&fl=urlkey,timestamp,filename,offset",
            "&page=1",
            "&showNumPages=true",
        ] {
            let q = format!("/cdx?url={url}{extra}");
            let w = get(&agent, &over_package.url(&format!("/c{q}")));
            let z = get(&agent, &over_cluster.url(&format!("/c{q}")));
            let x = get(&agent, &over_index.url(&format!("/c{q}")));
            let text = |a: &(u16, String, Vec<u8>)| {
                (a.0, a.1.clone(), String::from_utf8_lossy(&a.2).into_owned())
            };
            assert_eq!(text(&w), text(&z), "{q}");
            if !url.contains('*') && !extra.contains("age") {
                assert_eq!(text(&w), text(&x), "{q}");
            }
            answered += usize::from(w.0 == 200 && !w.2.is_empty());
        }
    }
    assert!(
        answered > 10,
        "too few queries found something ({answered})"
    );
}

#[test]
fn py_waczs_fixtures_read_as_py_wacz_reads_them() {
    let dir = data_dir().join("wacz");
    // The index of each package's WARCs is the package's own index
    // (the Browsertrix and py-wacz 1.1 packages).
    for name in [
        "valid_example_2.wacz",
        "valid_signed_example_1.wacz",
        "invalid_signed_example_1.wacz",
    ] {
        let p = dir.join(name);
        let args: Vec<&str> = [&["index", s(&p)][..], &PY_WACZ_OPTIONS].concat();
        let ours = stdout(&ukvs(&args));
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&package_lines(&p)),
            "{name}"
        );
        let v = ukvs(&["validate", s(&p)]);
        assert_ok(&v);
    }
    // WACZ 1.0.0: lookups answer from its index (lines of that era:
    // digests without `sha1:`), its digests check out.
    let old = dir.join("valid_example_1.wacz");
    let hit = stdout(&ukvs(&["lookup", s(&old), "http://www.example.com/"]));
    assert_eq!(hit, package_lines(&old));
    assert_ok(&ukvs(&["validate", s(&old)]));
    // No index and no WARC: refused with the reason, exit 2.
    let bad = dir.join("invalid_example_1.wacz");
    let o = ukvs(&["lookup", s(&bad), "example.com"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no index"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = ukvs(&["index", s(&bad)]);
    assert_eq!(o.status.code(), Some(2));
    let o = ukvs(&["validate", s(&bad)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stdout).contains("data/indexes/index.cdx.gz"));
}

#[test]
fn damaged_packages_are_named_and_the_others_still_read() {
    let tmp = tempfile::tempdir().unwrap();
    let good = data_dir().join("wacz/valid_example_2.wacz");
    let bytes = std::fs::read(&good).unwrap();
    let good_index = stdout(&ukvs(&["index", s(&good), "--format", "cdxj"]));
    assert!(!good_index.is_empty());

    // Cut short: the central directory is gone.
    let cut = tmp.path().join("cut.wacz");
    std::fs::write(&cut, &bytes[..bytes.len() - 60]).unwrap();
    let o = ukvs(&["index", s(&cut), s(&good), "--format", "cdxj"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cut.wacz") && err.contains("not a readable ZIP"),
        "{err}"
    );
    assert_eq!(o.stdout, good_index, "the good package is still indexed");
    let o = ukvs(&["lookup", s(&cut), "example.com"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("cut.wacz"));

    // A WARC changed after the package was made: validate names the entry
    // and its digests; the index and the other entries are still read.
    let (start, len) = {
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&good).unwrap()).unwrap();
        let f = zip.by_name("archive/example-collection.warc").unwrap();
        (f.data_start() as usize, f.compressed_size() as usize)
    };
    let mut changed = bytes.clone();
    changed[start + len / 2] ^= 0x20;
    let bad = tmp.path().join("changed.wacz");
    std::fs::write(&bad, &changed).unwrap();
    let o = ukvs(&["validate", s(&bad)]);
    assert_eq!(o.status.code(), Some(2));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("entry archive/example-collection.warc: its sha256 is"),
        "{out}"
    );
    assert!(out.contains("1 problems"), "only the WARC: {out}");
    assert!(out.contains("1 records"), "the index is still read: {out}");
    // `index --verify-digests` says the same of the changed WARC, exit 2,
    // and still indexes it and the other packages; without the option
    // only the damaged gzip member is told, and the good package
    // verifies.
    let o = ukvs(&[
        "index",
        "--verify-digests",
        s(&bad),
        s(&good),
        "--format",
        "cdxj",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("changed.wacz: entry archive/example-collection.warc: its sha256 is"),
        "{err}"
    );
    assert!(!err.contains("valid_example_2.wacz"), "{err}");
    let plain = ukvs(&["index", s(&bad), "--format", "cdxj"]);
    let plain_err = String::from_utf8_lossy(&plain.stderr);
    assert!(!plain_err.contains("sha256"), "{plain_err}");
    let mut both = plain.stdout.clone();
    both.extend_from_slice(&good_index);
    let mut got: Vec<&[u8]> = o.stdout.split(|&b| b == b'\n').collect();
    let mut want: Vec<&[u8]> = both.split(|&b| b == b'\n').collect();
    got.sort();
    want.sort();
    assert_eq!(got, want, "both packages still indexed");
    assert_ok(&ukvs(&[
        "index",
        "--verify-digests",
        s(&good),
        "--format",
        "cdxj",
    ]));

    // No index: the streaming jobs and lookups say so, exit 2; indexing
    // the WARCs still works.
    let parts: Vec<(String, Vec<u8>)> = entries(&good)
        .into_iter()
        .filter(|(n, _)| !n.starts_with("indexes/"))
        .collect();
    let noidx = tmp.path().join("noidx.wacz");
    let borrowed: Vec<(&str, &[u8], bool)> = parts
        .iter()
        .map(|(n, b)| (n.as_str(), &b[..], false))
        .collect();
    write_zip(&noidx, &borrowed);
    for cmd in [&["stats"][..], &["lookup"], &["cat"]] {
        let mut args = cmd.to_vec();
        args.push(s(&noidx));
        if cmd == ["lookup"] {
            args.push("example.com");
        }
        let o = ukvs(&args);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("noidx.wacz") && err.contains("no index"),
            "{cmd:?}: {err}"
        );
    }
    assert_eq!(
        stdout(&ukvs(&["index", s(&noidx), "--format", "cdxj"])),
        good_index
    );
}

/// The package reader on damaged bytes: py-wacz's fixtures with bytes
/// flipped, cut short, or a run overwritten, read as the server and the
/// jobs read them (central directory, every entry inflated, `.idx` and
/// `datapackage.json` parsed): errors, never a panic.
#[test]
fn mutated_packages_read_without_panic() {
    use ukvs::wacz;
    let mut rng = util::Rng(0x3ac2_9e11);
    let mut read = 0;
    for name in [
        "valid_example_1.wacz",
        "valid_example_2.wacz",
        "valid_signed_example_1.wacz",
    ] {
        let good = std::fs::read(data_dir().join("wacz").join(name)).unwrap();
        for _ in 0..400 {
            let mut b = good.clone();
            match rng.below(3) {
                0 => {
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(b.len() as u64) as usize;
                        b[i] = rng.next() as u8;
                    }
                }
                1 => b.truncate(rng.below(b.len() as u64) as usize),
                _ => {
                    let i = rng.below(b.len() as u64) as usize;
                    let end = (i + 1 + rng.below(64) as usize).min(b.len());
                    b[i..end].fill(0xff);
                }
            }
            let Ok(p) = wacz::Package::read(std::io::Cursor::new(&b[..])) else {
                continue;
            };
            read += 1;
            for e in &p.entries {
                let r = e.range();
                let Some(stored) = b.get(r.start as usize..(r.end as usize).min(b.len())) else {
                    continue;
                };
                if let Ok(text) = e.contents(stored) {
                    let _ = wacz::parse_idx(&e.name, &text);
                    let _ = wacz::idx_data_name(&text);
                    let _ = wacz::parse_datapackage(&text);
                }
            }
            let _ = p.index(None);
        }
    }
    assert!(
        read > 100,
        "only {read} mutated packages kept a readable directory"
    );
}

#[test]
fn wacz_create_makes_packages_wacz_validate_accepts() {
    let test = "wacz_create_makes_packages_wacz_validate_accepts";
    let tmp = tempfile::tempdir().unwrap();
    let ours = tmp.path().join("ours.wacz");
    let warcs = fixture_warcs();
    let mut args = vec!["wacz", "create", "-o", s(&ours), "--title", "Fixtures"];
    args.extend(warcs.iter().map(|p| s(p)));
    assert_ok(&ukvs(&args));
    // Read back by ukvs: its entries check out, its WARCs index as its
    // own index says, in place.
    let v = stdout(&ukvs(&["validate", s(&ours)]));
    assert!(String::from_utf8_lossy(&v).contains("0 problems: valid"));
    let idx: Vec<&str> = [&["index", s(&ours)][..], &PY_WACZ_OPTIONS].concat();
    assert_eq!(stdout(&ukvs(&idx)), package_lines(&ours));
    let names: Vec<String> = entries(&ours).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names[..2], ["indexes/index.cdx.gz", "indexes/index.idx"]);
    assert!(names.contains(&"archive/post-test.warc.gz".to_string()));
    // A WARC given twice by name is refused, nothing written.
    let twice = tmp.path().join("twice.wacz");
    let o = ukvs(&[
        "wacz",
        "create",
        "-o",
        s(&twice),
        s(&warcs[0]),
        s(&warcs[0]),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("two WARCs are named"));
    assert!(!twice.exists());
    // py-wacz: valid, and its own package of the same WARCs has the same
    // index files.
    if !util::has_python_module("wacz", test) {
        return;
    }
    let o = Command::new("python3")
        .args(["-m", "wacz", "validate", "-f"])
        .arg(&ours)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && said.contains("the passed WACZ is valid"),
        "{said}"
    );
    let theirs = tmp.path().join("theirs.wacz");
    assert!(py_wacz_create(&theirs, &warcs, test));
    for name in ["indexes/index.cdx.gz", "indexes/index.idx"] {
        assert!(entry(&ours, name) == entry(&theirs, name), "{name}");
    }
}

/// A package whose index is a plain `indexes/index.cdxj` (the spec's
/// other layout, deflated here) is read as that file.
#[test]
fn a_plain_cdxj_index_in_a_package_is_read_as_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let mut args = vec!["index", "--format", "cdxj"];
    let warcs = fixture_warcs();
    args.extend(warcs.iter().map(|p| s(p)));
    let lines = stdout(&ukvs(&args));
    let plain = tmp.path().join("index.cdxj");
    std::fs::write(&plain, &lines).unwrap();
    let warc = std::fs::read(&warcs[0]).unwrap();
    let package = tmp.path().join("plain.wacz");
    write_zip(
        &package,
        &[
            ("archive/cc.warc.gz", &warc, false),
            ("indexes/index.cdxj", &lines, true),
        ],
    );
    let (p, x) = (s(&package), s(&plain));
    for url in ["example.com/", "httpbin.org/post", "commoncrawl.org/"] {
        assert_eq!(
            ukvs(&["lookup", p, url]).stdout,
            ukvs(&["lookup", x, url]).stdout,
            "{url}"
        );
    }
    assert!(!stdout(&ukvs(&["lookup", p, "example.com/"])).is_empty());
    assert_eq!(stdout(&ukvs(&["cat", p])), stdout(&ukvs(&["cat", x])));
    assert_eq!(stdout(&ukvs(&["stats", p])), stdout(&ukvs(&["stats", x])));
}

/// Each response's payload (the HTTP body, de-chunked, as pywb replays
/// it in `id_` mode) read by warcio from the extracted WARCs in `dir`, by
/// (file name, offset) of the index lines `index`.
fn warcio_payloads(index: &Path, dir: &Path) -> std::collections::HashMap<(String, u64), Vec<u8>> {
    let script = r#"
import json, sys, os
from warcio.archiveiterator import ArchiveIterator
for line in open(sys.argv[1], encoding='utf-8'):
    key, ts, block = line.split(' ', 2)
    rec = json.loads(block)
    f, off = rec.get('filename'), rec.get('offset')
    if not f or off is None:
        continue
    with open(os.path.join(sys.argv[2], f), 'rb') as fh:
        fh.seek(int(off))
        for r in ArchiveIterator(fh):
            if r.rec_type in ('response', 'resource'):
                print(f, off, r.content_stream().read().hex())
            break
"#;
    util::warcio_payload_lines(script, &[index.as_os_str(), dir.as_os_str()])
        .into_iter()
        .map(|(f, off, bytes)| ((f, off.parse().unwrap()), bytes))
        .collect()
}

/// A gzipped WARC (written by warcio) of 60 captures of distinct URLs:
/// statuses 200, 404 and 301, payloads of 0 bytes to 100 KB, text and
/// binary, some chunked; its path.
fn many_captures_warc(dir: &Path) -> PathBuf {
    let script = r#"
import sys, random
from io import BytesIO
from warcio.warcwriter import WARCWriter
from warcio.statusandheaders import StatusAndHeaders
rnd = random.Random(7)
with open(sys.argv[1], 'wb') as out:
    w = WARCWriter(out, gzip=True)
    for i in range(60):
        status = ['200 OK', '404 Not Found', '301 Moved Permanently'][i % 3]
        n = [0, 10, 3000, 100000][i % 4]
        body = bytes(rnd.getrandbits(8) for _ in range(n)) if i % 2 else (b'page %d ' % i) * (n // 8)
        headers = [('Content-Type', 'text/html' if i % 2 == 0 else 'application/octet-stream')]
        if i % 5 == 0:
            chunked = b''.join(b'%x\r\n%s\r\n' % (len(c), c) for c in [body[:7], body[7:]] if c) + b'0\r\n\r\n'
            headers.append(('Transfer-Encoding', 'chunked'))
            payload = chunked
        else:
            headers.append(('Content-Length', str(len(body))))
            payload = body
        if status.startswith('301'):
            headers.append(('Location', 'http://example.org/moved/%d' % i))
        http = StatusAndHeaders(status, headers, protocol='HTTP/1.1')
        rec = w.create_warc_record('http://example.org/page/%d' % i, 'response',
                                   payload=BytesIO(payload), http_headers=http,
                                   warc_headers_dict={'WARC-Date': '2021-01-%02dT10:00:00Z' % (i % 28 + 1)})
        w.write_record(rec)
"#;
    let path = dir.join("many.warc.gz");
    let o = Command::new("python3")
        .args(["-c", script])
        .arg(&path)
        .output()
        .expect("run warcio");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    path
}

/// A GET with a Range header: status, Content-Range and body.
fn get_range(url: &str, range: &str) -> (u16, String, Vec<u8>) {
    let mut res = agent().get(url).header("Range", range).call().unwrap();
    let cr = res
        .headers()
        .get("content-range")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = res.body_mut().read_to_vec().unwrap();
    (res.status().as_u16(), cr, body)
}

/// A package py-wacz made of the fixture WARCs, served as `w`: its
/// directory, the extracted `example.warc.gz` to compare with, the server
/// and the URL of that WARC's `/w/archive/` entry. None (and SKIPPED said)
/// without py-wacz.
fn served_package_warc(
    test: &str,
) -> Option<(tempfile::TempDir, std::path::PathBuf, Server, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let package = tmp.path().join("p.wacz");
    if !py_wacz_create(&package, &fixture_warcs(), test) {
        return None;
    }
    let warc = tmp.path().join("x/archive/example.warc.gz");
    extract_archives(&package, &tmp.path().join("x"));
    let ours = Server::start(&["--quiet".into(), format!("w={}", package.display())]);
    let url = format!("http://{}/w/archive/example.warc.gz", ours.addr);
    Some((tmp, warc, ours, url))
}

#[test]
fn serve_gives_a_packages_warc_bytes_by_range() {
    let Some((_tmp, warc, ours, url)) =
        served_package_warc("serve_gives_a_packages_warc_bytes_by_range")
    else {
        return;
    };
    let whole = std::fs::read(&warc).unwrap();
    let n = whole.len();
    assert_eq!(get(&agent(), &url).2, whole, "no Range: the whole entry");
    let (status, cr, body) = get_range(&url, "bytes=100-299");
    assert_eq!((status, cr.as_str()), (206, &*format!("bytes 100-299/{n}")));
    assert_eq!(body, &whole[100..300]);
    let (status, _, body) = get_range(&url, &format!("bytes={}-", n - 10));
    assert_eq!((status, body.as_slice()), (206, &whole[n - 10..]));
    let (status, _, body) = get_range(&url, "bytes=-7");
    assert_eq!((status, body.as_slice()), (206, &whole[n - 7..]));
    // Bad requests: 4xx with a message.
    for (range, want) in [
        (format!("bytes={n}-"), "past the end"),
        ("bytes=5-1".to_string(), "is not bytes="),
        ("bytes=0-1,4-5".to_string(), "several ranges"),
        ("pages=1".to_string(), "is not bytes="),
    ] {
        let (status, _, body) = get_range(&url, &range);
        assert_eq!(status, 416, "{range}");
        assert!(String::from_utf8_lossy(&body).contains(want), "{range}");
    }
    let (status, _, body) = get(
        &agent(),
        &format!("http://{}/w/archive/nope.warc", ours.addr),
    );
    assert_eq!(status, 404);
    assert!(String::from_utf8_lossy(&body).contains("nope.warc"));
}

/// A HEAD: status and the named headers (absent ones empty); its body
/// must be empty.
fn head(url: &str, range: Option<&str>, names: &[&str]) -> (u16, Vec<String>) {
    let mut req = agent().head(url);
    if let Some(r) = range {
        req = req.header("Range", r);
    }
    let mut res = req.call().unwrap();
    let got = names
        .iter()
        .map(|n| {
            let v = res.headers().get(*n).and_then(|v| v.to_str().ok());
            v.unwrap_or_default().to_string()
        })
        .collect();
    let body = res.body_mut().read_to_vec().unwrap();
    assert!(
        body.is_empty(),
        "HEAD {url} has a body of {} bytes",
        body.len()
    );
    (res.status().as_u16(), got)
}

/// HEAD of `/NAME/archive/FILE` answers as the GET would, headers only:
/// the whole entry's length, a range's length and Content-Range, 416 for
/// a range past the end, 404 for a name no package holds.
#[test]
fn serve_answers_head_of_a_packages_warc_as_its_get() {
    let Some((_tmp, warc, ours, url)) =
        served_package_warc("serve_answers_head_of_a_packages_warc_as_its_get")
    else {
        return;
    };
    let n = std::fs::metadata(&warc).unwrap().len();
    let names = ["content-length", "content-range", "accept-ranges"];
    let (status, got) = head(&url, None, &names);
    assert_eq!(
        (status, got),
        (200, vec![n.to_string(), "".into(), "bytes".into()])
    );
    let (status, got) = head(&url, Some("bytes=100-299"), &names);
    let want = vec!["200".into(), format!("bytes 100-299/{n}"), "bytes".into()];
    assert_eq!((status, got), (206, want));
    let (status, got) = head(&url, Some("bytes=-7"), &names);
    let want = vec![
        "7".into(),
        format!("bytes {}-{}/{n}", n - 7, n - 1),
        "bytes".into(),
    ];
    assert_eq!((status, got), (206, want));
    let past = [
        format!("bytes={n}-"),
        format!("bytes={}-{}", n + 5, n + 9),
        "bytes=-0".into(),
    ];
    for range in past {
        assert_eq!(head(&url, Some(&range), &[]).0, 416, "{range}");
        // The GET says why, and the entry's length, in the body and in
        // Content-Range.
        let (status, cr, body) = get_range(&url, &range);
        let body = String::from_utf8_lossy(&body).into_owned();
        assert_eq!((status, cr), (416, format!("bytes */{n}")), "{range}");
        assert!(body.contains(&format!("bytes */{n}")), "{range}: {body}");
    }
    let nope = format!("http://{}/w/archive/nope.warc", ours.addr);
    assert_eq!(head(&nope, None, &[]).0, 404);
}

/// A WARC deflated in the ZIP has no byte offsets: its range request is
/// refused with 409 and a message naming the package and the entry (GET
/// and HEAD, with and without a range); the package's index still
/// serves.
#[test]
fn serve_refuses_a_deflated_warc_of_a_package_with_409() {
    let tmp = tempfile::tempdir().unwrap();
    let warc_path = data_dir().join("warc/cc.warc.gz");
    let lines = stdout(&ukvs(&["index", "--format", "cdxj", s(&warc_path)]));
    let warc = std::fs::read(&warc_path).unwrap();
    let package = tmp.path().join("deflated.wacz");
    write_zip(
        &package,
        &[
            ("archive/cc.warc.gz", &warc, true),
            ("indexes/index.cdxj", &lines, false),
        ],
    );
    let ours = Server::start(&["--quiet".into(), format!("w={}", package.display())]);
    let url = format!("http://{}/w/archive/cc.warc.gz", ours.addr);
    let (status, _, body) = get(&agent(), &url);
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains("deflated.wacz entry archive/cc.warc.gz: compressed in the ZIP"),
        "{body}"
    );
    let (status, _, _) = get_range(&url, "bytes=0-99");
    assert_eq!(status, 409);
    assert_eq!(head(&url, None, &[]).0, 409);
    assert_eq!(head(&url, Some("bytes=0-99"), &[]).0, 409);
    // The index is served all the same.
    let cdx = format!(
        "http://{}/w/cdx?url=commoncrawl.org/&output=json",
        ours.addr
    );
    let (status, _, body) = get(&agent(), &cdx);
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&body).contains("cc.warc.gz"));
}

/// pywb replays every capture of a package with ukvs serve as its index
/// and as its archive (the WARC bytes by Range from the package in
/// place): each answer as pywb gives it from the extracted WARCs and
/// their index, and each response's payload as warcio reads it.
#[test]
fn pywb_replays_every_capture_of_a_package_through_serve() {
    let test = "pywb_replays_every_capture_of_a_package_through_serve";
    if !util::ensure_pywb(test) || !util::has_python_module("warcio", test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let package = tmp.path().join("p.wacz");
    let mut warcs = fixture_warcs();
    warcs.push(many_captures_warc(tmp.path()));
    if !py_wacz_create(&package, &warcs, test) {
        return;
    }
    let x = tmp.path().join("x");
    extract_archives(&package, &x);
    let index = tmp.path().join("index.cdxj");
    std::fs::write(&index, package_lines(&package)).unwrap();
    let ours = Server::start(&["--quiet".into(), format!("w={}", package.display())]);
    let config = format!(
        "collections:\n  w:\n    index: cdx+http://{a}/w/cdx\n    archive_paths: http://{a}/w/archive/\n  \
         local:\n    index: {}\n    archive_paths: {}/\n",
        index.display(),
        x.join("archive").display(),
        a = ours.addr,
    );
    std::fs::write(tmp.path().join("config.yaml"), config).unwrap();
    let (_pywb, pywb) = start_pywb(tmp.path(), "/local/cdx?url=example.com/").expect("start pywb");
    let payloads = warcio_payloads(&index, &x.join("archive"));
    let text = std::fs::read_to_string(&index).unwrap();
    let lines: Vec<(&str, serde_json::Value)> = text
        .lines()
        .map(|l| {
            let mut p = l.splitn(3, ' ');
            let (_, ts, json) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
            (ts, serde_json::from_str(json).unwrap())
        })
        .collect();
    let mut seen: std::collections::HashMap<(&str, &str), usize> = Default::default();
    for (ts, rec) in &lines {
        *seen
            .entry((ts, rec["url"].as_str().unwrap_or("")))
            .or_default() += 1;
    }
    // Redirects are answers to compare, not to follow.
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(std::time::Duration::from_secs(60)))
        .build()
        .into();
    let (mut replayed, mut checked, mut bad) = (0, 0, Vec::new());
    for (ts, rec) in &lines {
        let raw = rec["url"].as_str().unwrap_or("");
        // A POST capture is keyed by its body (`__wb_method=post&...`): a
        // GET of its URL is a fuzzy match among the POSTs, not a replay
        // of this capture.
        if !raw.starts_with("http") || rec.get("method").is_some() {
            continue;
        }
        let url = raw.replace(' ', "%20");
        let Ok(local) = try_get(&agent, &format!("{pywb}/local/{ts}id_/{url}")) else {
            bad.push(format!(
                "{ts} {url}: pywb cannot replay it from the extracted WARCs"
            ));
            continue;
        };
        let served = get(&agent, &format!("{pywb}/w/{ts}id_/{url}"));
        if served.0 != local.0 || served.2 != local.2 {
            bad.push(format!(
                "{ts} {url}: through ukvs serve {} ({} bytes), from the extracted WARCs {} ({} bytes)",
                served.0,
                served.2.len(),
                local.0,
                local.2.len()
            ));
            continue;
        }
        replayed += 1;
        let unique = seen[&(*ts, raw)] == 1;
        let status = rec["status"].as_str().and_then(|s| s.parse::<u16>().ok());
        let key = (
            rec["filename"].as_str().unwrap_or("").to_string(),
            rec["offset"]
                .as_str()
                .and_then(|o| o.parse().ok())
                .unwrap_or(u64::MAX),
        );
        if unique && rec["mime"].as_str() != Some("warc/revisit") {
            if let (Some(want), Some(payload)) = (status, payloads.get(&key)) {
                checked += 1;
                if served.0 != want || &served.2 != payload {
                    bad.push(format!(
                        "{ts} {url}: replayed {} with {} bytes, the record has {want} with {}",
                        served.0,
                        served.2.len(),
                        payload.len()
                    ));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    eprintln!("{replayed} captures replayed alike, {checked} with the record's status and payload");
    assert!(replayed >= 60, "only {replayed} captures replayed");
    assert!(
        checked >= 50,
        "only {checked} statuses and payloads compared"
    );
}

/// `index --verify-digests` on a package py-wacz hashed with MD5, one
/// of its WARCs changed after: that entry is named with both digests,
/// exit 2; the other WARC verifies and both are indexed.
#[test]
fn verify_digests_names_a_changed_warc_of_an_md5_package() {
    let test = "verify_digests_names_a_changed_warc_of_an_md5_package";
    if !util::has_python_module("wacz", test) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let package = tmp.path().join("md5.wacz");
    let warcs = [
        data_dir().join("warc/example.warc"),
        data_dir().join("warc/post-test-more.warc"),
    ];
    let o = Command::new("python3")
        .args(["-m", "wacz", "create", "--hash-type", "md5", "-o"])
        .arg(&package)
        .args(&warcs)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let before = stdout(&ukvs(&["index", s(&package), "--format", "cdxj"]));
    assert_ok(&ukvs(&["index", "--verify-digests", s(&package)]));
    // A byte of a payload (past every header) of example.warc changed.
    let mut bytes = std::fs::read(&package).unwrap();
    let (start, len) = {
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&package).unwrap()).unwrap();
        let f = zip.by_name("archive/example.warc").unwrap();
        (f.data_start() as usize, f.compressed_size() as usize)
    };
    let at = start + len - 10;
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(&package, &bytes).unwrap();
    let o = ukvs(&["index", "--verify-digests", s(&package), "--format", "cdxj"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("entry archive/example.warc: its md5 is")
            && err.contains("datapackage.json says"),
        "{err}"
    );
    assert!(!err.contains("post-test-more.warc"), "{err}");
    assert_eq!(o.stdout, before, "every entry still indexed");
}

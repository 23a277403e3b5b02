//! Nedlib harvest trees made by `scripts/gen_nedlib.py`, walked here and
//! read through `ukvs::nedlib`: every object of the generator's
//! `truth.tsv` is found with its fields, and every damage it made is
//! reported as the kind it is.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ukvs::capture::object::Object as Capture;
use ukvs::nedlib::{self, Error, Mismatch, OrphanKind};

/// One row of `truth.tsv`.
#[derive(Debug)]
struct Truth {
    path: String,
    url: String,
    datetime: String,
    sha1: String,
    mime: String,
    status: String,
    length: u64,
    damage: String,
}

/// What the walk found for one object, by the data file's relative path.
#[derive(Debug, Default)]
struct Found {
    /// url, datetime, digest, mime, status, offset, length
    capture: Option<(String, String, String, String, String, u64, u64)>,
    mismatches: Vec<Mismatch>,
    error: Option<Error>,
    orphan: Option<OrphanKind>,
}

/// Runs the generator into a temp dir; `None` (with a message) when
/// python3 cannot be run.
fn generate(test: &str, args: &[&str]) -> Option<(tempfile::TempDir, Vec<Truth>)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen_nedlib.py");
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(&script)
        .arg("--out")
        .arg(dir.path())
        .args(args)
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "gen_nedlib.py failed: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            eprintln!("SKIPPED {test}: cannot run python3: {e}");
            return None;
        }
    }
    let tsv = std::fs::read_to_string(dir.path().join("truth.tsv")).unwrap();
    let truth = tsv
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 8, "truth line {l:?}");
            Truth {
                path: f[0].into(),
                url: f[1].into(),
                datetime: f[2].into(),
                sha1: f[3].into(),
                mime: f[4].into(),
                status: f[5].into(),
                length: f[6].parse().unwrap(),
                damage: f[7].into(),
            }
        })
        .collect();
    Some((dir, truth))
}

fn names(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    out.sort();
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The access lists' entries: the path listed, and how the entry
/// disagrees with the object's .meta file (empty without one).
type Listed = Vec<(String, Vec<Mismatch>)>;

/// Walks the tree as the engine will: day directories, numbered
/// directories, pairs of files; the access lists at the top. Returns what
/// was found per object and the access-list entries (path, entry check
/// against the .meta file when there is one).
fn walk(root: &Path) -> (BTreeMap<String, Found>, Listed) {
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    let mut metas: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut lists = Vec::new();
    for top in names(root) {
        let path = root.join(&top);
        if nedlib::access_list_number(&top).is_some() {
            let bytes = std::fs::read(&path).unwrap();
            assert!(nedlib::looks_like_access_list(&bytes), "{top}");
            assert!(!nedlib::looks_like_meta(&bytes), "{top}");
            lists.push(bytes);
            continue;
        }
        if !nedlib::is_day_dir(&top) {
            assert_eq!(
                top, "truth.tsv",
                "only days, lists and the truth at the top"
            );
            continue;
        }
        for numbered in names(&path) {
            assert!(nedlib::number_dir(&numbered).is_some(), "{top}/{numbered}");
            let dir: PathBuf = path.join(&numbered);
            let listing = names(&dir);
            let pairing = nedlib::pair(&listing);
            assert!(pairing.others.is_empty(), "{:?}", pairing.others);
            for orphan in &pairing.orphans {
                let data_name = orphan.name.trim_end_matches(".meta");
                let rel = format!("{top}/{numbered}/{data_name}");
                found.entry(rel).or_default().orphan = Some(orphan.kind);
            }
            for p in &pairing.pairs {
                let rel = format!("{top}/{numbered}/{}", p.data);
                let tree = nedlib::parse_path(&rel).expect("a tree path");
                let meta_bytes = std::fs::read(dir.join(p.meta)).unwrap();
                let data = std::fs::read(dir.join(p.data)).unwrap();
                assert!(nedlib::looks_like_meta(&meta_bytes), "{rel}.meta");
                assert!(!nedlib::looks_like_meta(&data), "{rel}");
                let f = found.entry(rel.clone()).or_default();
                match nedlib::parse_meta(&meta_bytes) {
                    Err(e) => f.error = Some(e),
                    Ok(meta) => {
                        f.mismatches = nedlib::check(&meta, &data, p.data);
                        f.mismatches
                            .extend(tree.check_day(&meta.fields.harvest_time));
                        let c = Capture::of_nedlib(&meta, &data);
                        f.capture = Some((
                            text(c.url),
                            c.datetime.map(|d| text(&d)).unwrap_or_default(),
                            c.digest(),
                            c.mime.as_deref().map(text).unwrap_or_default(),
                            c.status.map(|s| s.to_string()).unwrap_or_default(),
                            c.offset,
                            c.length,
                        ));
                        metas.insert(rel, meta_bytes);
                    }
                }
            }
        }
    }
    let mut entries = Vec::new();
    for list in &lists {
        for entry in nedlib::parse_access_list(list) {
            let entry = entry.expect("the harvester's lists are well-formed");
            let rel = entry.path.to_string();
            let checked = match metas.get(&rel) {
                Some(m) => entry.check(&nedlib::parse_meta(m).unwrap()),
                None => Vec::new(),
            };
            entries.push((rel, checked));
        }
    }
    (found, entries)
}

fn check_tree(test: &str, args: &[&str]) -> Option<BTreeMap<String, usize>> {
    let (dir, truth) = generate(test, args)?;
    let (found, entries) = walk(dir.path());
    assert_eq!(found.len(), truth.len(), "one object per truth row");
    let mut kinds = BTreeMap::new();
    for t in &truth {
        let f = found
            .get(&t.path)
            .unwrap_or_else(|| panic!("{}: not found", t.path));
        *kinds.entry(t.damage.clone()).or_insert(0) += 1;
        let expect_capture = || {
            let c = f
                .capture
                .as_ref()
                .unwrap_or_else(|| panic!("{}: no capture ({f:?})", t.path));
            let want = (
                t.url.clone(),
                t.datetime.clone(),
                format!("sha1:{}", t.sha1),
                t.mime.clone(),
                t.status.clone(),
                0,
                t.length,
            );
            assert_eq!(c, &want, "{}", t.path);
        };
        let has = |want: fn(&Mismatch) -> bool| f.mismatches.iter().any(want);
        match t.damage.as_str() {
            "" => {
                expect_capture();
                assert_eq!(f.mismatches, [], "{}", t.path);
            }
            "md5_mismatch" => {
                expect_capture();
                assert!(has(|m| matches!(m, Mismatch::DataMd5 { .. })), "{f:?}");
                assert!(!has(|m| matches!(m, Mismatch::DataLength { .. })), "{f:?}");
            }
            "size_mismatch" => {
                expect_capture();
                assert!(has(|m| matches!(m, Mismatch::DataLength { .. })), "{f:?}");
            }
            "name_mismatch" => {
                expect_capture();
                assert!(has(|m| matches!(m, Mismatch::UrlMd5 { .. })), "{f:?}");
                assert_eq!(f.mismatches.len(), 1, "{f:?}");
            }
            "bad_harvest_time" => {
                assert!(
                    matches!(f.error, Some(Error::BadHarvestTime { .. })),
                    "{}: {f:?}",
                    t.path
                );
                assert!(f.capture.is_none());
            }
            "meta_without_data" => assert_eq!(f.orphan, Some(OrphanKind::MetaWithoutData)),
            "data_without_meta" => assert_eq!(f.orphan, Some(OrphanKind::DataWithoutMeta)),
            other => panic!("unknown damage {other:?}"),
        }
        if t.damage.is_empty() || t.damage.ends_with("_mismatch") {
            assert!(f.error.is_none() && f.orphan.is_none(), "{f:?}");
        }
    }
    // Every object is listed once, and the lists agree with the .meta
    // files (damage came after the harvest, the lists hold what it wrote).
    let mut listed: Vec<&str> = entries.iter().map(|(p, _)| p.as_str()).collect();
    listed.sort_unstable();
    let mut paths: Vec<&str> = truth.iter().map(|t| t.path.as_str()).collect();
    paths.sort_unstable();
    assert_eq!(listed, paths);
    for (rel, checked) in &entries {
        assert_eq!(checked, &[], "{rel}");
    }
    Some(kinds)
}

#[test]
fn generated_tree_objects_match_truth_and_damage_is_found() {
    let test = "generated_tree_objects_match_truth_and_damage_is_found";
    let Some(kinds) = check_tree(test, &["--objects", "400", "--seed", "7", "--damage"]) else {
        return;
    };
    for kind in [
        "meta_without_data",
        "data_without_meta",
        "md5_mismatch",
        "size_mismatch",
        "bad_harvest_time",
        "name_mismatch",
    ] {
        assert!(kinds.get(kind).is_some_and(|&n| n > 0), "{kind}: {kinds:?}");
    }
}

#[test]
fn generated_tree_without_damage_is_all_clean() {
    let test = "generated_tree_without_damage_is_all_clean";
    let Some(kinds) = check_tree(
        test,
        &[
            "--objects",
            "150",
            "--seed",
            "11",
            "--per-dir",
            "40",
            "--days",
            "4",
        ],
    ) else {
        return;
    };
    assert_eq!(kinds.keys().collect::<Vec<_>>(), [""]);
}

//! `ukvs index` over trees of the seed formats: Kulturarw3 objects and
//! Nedlib harvests, written by the repository's generators with ground
//! truth, indexed in every profile, alone and mixed with ARC and WARC.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::util::{self, run};

/// Runs a generator script of `scripts/` into `dir/out`; `None` (with a
/// message) without python3.
pub(crate) fn generate(
    test: &str,
    script: &str,
    dir: &Path,
    args: &[&str],
) -> Option<std::path::PathBuf> {
    let out = dir.join("out");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(script);
    match Command::new("python3")
        .arg(script)
        .arg("--out")
        .arg(&out)
        .args(args)
        .output()
    {
        Ok(o) => assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            eprintln!("SKIPPED {test}: cannot run python3: {e}");
            return None;
        }
    }
    Some(out)
}

/// The truth rows of a generated tree, by column name.
fn truth(tree: &Path) -> Vec<HashMap<String, String>> {
    let text = std::fs::read_to_string(tree.join("truth.tsv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<String> = lines
        .next()
        .unwrap()
        .trim_start_matches('#')
        .split('\t')
        .map(|h| h.trim().to_string())
        .collect();
    lines
        .map(|l| {
            head.iter()
                .cloned()
                .zip(l.split('\t').map(String::from))
                .collect()
        })
        .collect()
}

/// `ukvs index --format cdxj TREE`: exit code, lines by (filename,
/// offset), stderr.
fn index_cdxj(tree: &Path) -> (Option<i32>, HashMap<(String, u64), Value>, String) {
    let o = run(
        &["index", "-q", "--format", "cdxj", tree.to_str().unwrap()],
        b"",
    );
    let mut lines = HashMap::new();
    for l in String::from_utf8(o.stdout).unwrap().lines() {
        let json: Value = serde_json::from_str(l.splitn(3, ' ').nth(2).unwrap()).unwrap();
        let key = (
            json["filename"].as_str().unwrap().to_string(),
            json["offset"].as_str().unwrap().parse().unwrap(),
        );
        let mut json = json;
        json["datetime"] = l.split(' ').nth(1).unwrap().into();
        assert!(lines.insert(key, json).is_none(), "{l}");
    }
    (
        o.status.code(),
        lines,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn kulturarw3_trees_index_every_object_as_the_truth_says() {
    let test = "kulturarw3_trees_index_every_object_as_the_truth_says";
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--objects",
        "300",
        "--seed",
        "11",
        "--concatenated",
        "20",
        "--damage",
    ];
    let Some(tree) = generate(test, "gen_kulturarw3.py", dir.path(), &args) else {
        return;
    };
    let (code, lines, err) = index_cdxj(&tree);
    assert_eq!(code, Some(2), "damage makes the exit code 2");
    let rows = truth(&tree);
    let mut kept = 0;
    for t in &rows {
        let offset: u64 = t["offset"].parse().unwrap();
        let got = lines.get(&(t["path"].clone(), offset));
        match t["damage"].as_str() {
            "truncated" | "missing_close" => {
                assert!(got.is_none(), "{t:?}");
                assert!(err.contains(&format!("offset {offset}")), "{t:?}");
            }
            damage => {
                let g = got.unwrap_or_else(|| panic!("not indexed: {t:?}"));
                assert_eq!(g["url"], t["url"].as_str(), "{t:?}");
                assert_eq!(g["datetime"], t["datetime"].as_str(), "{t:?}");
                assert_eq!(g["digest"], format!("sha1:{}", t["sha1"]), "{t:?}");
                assert_eq!(g["length"], t["length"].as_str(), "{t:?}");
                let mime = g["mime"].as_str().unwrap_or("-");
                assert_eq!(mime, t["mime"], "{t:?}");
                assert_eq!(g["status"].as_str().unwrap_or("-"), t["status"], "{t:?}");
                if damage == "md5_mismatch" {
                    assert!(err.contains("MD5"), "{err}");
                }
                kept += 1;
            }
        }
    }
    assert_eq!(
        lines.len(),
        kept,
        "nothing indexed that the truth does not hold"
    );
    assert!(kept > 200);
    // The ukvs profile keeps the snapshot and validates; cdx11 has every
    // object too.
    let o = run(&["index", "-q", tree.to_str().unwrap()], b"");
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("\"snapshot\":\""),
        "{}",
        &text[..text.len().min(500)]
    );
    // A Header-Info `Location` is the capture's redirect.
    let redirects: Vec<&String> = rows
        .iter()
        .filter(|t| t["damage"].is_empty() && !t["redirect"].is_empty())
        .map(|t| &t["redirect"])
        .collect();
    assert!(!redirects.is_empty(), "the tree has no redirect");
    for r in redirects {
        assert!(text.contains(&format!("\"redirect\":\"{r}\"")), "{r}");
    }
    let data = text.lines().filter(|l| !l.starts_with('!')).count();
    assert_eq!(data, kept);
    let o = run(
        &["index", "-q", "--format", "cdx11", tree.to_str().unwrap()],
        b"",
    );
    assert_eq!(
        String::from_utf8(o.stdout).unwrap().lines().count(),
        kept + 1
    );
}

#[test]
fn nedlib_harvests_index_every_object_and_report_half_objects() {
    let test = "nedlib_harvests_index_every_object_and_report_half_objects";
    let dir = tempfile::tempdir().unwrap();
    let args = ["--objects", "200", "--seed", "5", "--damage"];
    let Some(tree) = generate(test, "gen_nedlib.py", dir.path(), &args) else {
        return;
    };
    let (code, lines, err) = index_cdxj(&tree);
    assert_eq!(code, Some(2));
    let mut kept = 0;
    for t in truth(&tree) {
        let got = lines.get(&(t["path"].clone(), 0));
        match t["damage"].as_str() {
            "meta_without_data" | "data_without_meta" | "bad_harvest_time" => {
                assert!(got.is_none(), "{t:?}");
                let name = t["path"].rsplit('/').next().unwrap().to_string();
                assert!(err.contains(&name), "{t:?} not reported in {err}");
            }
            _ => {
                let g = got.unwrap_or_else(|| panic!("not indexed: {t:?}"));
                assert_eq!(g["url"], t["url"].as_str(), "{t:?}");
                assert_eq!(g["datetime"], t["datetime"].as_str(), "{t:?}");
                assert_eq!(g["digest"], format!("sha1:{}", t["sha1"]), "{t:?}");
                assert_eq!(g["length"], t["length"].as_str(), "{t:?}");
                // The truth writes no value as an empty column.
                let want = |c: &str| if t[c].is_empty() { "-" } else { t[c].as_str() };
                assert_eq!(g["mime"].as_str().unwrap_or("-"), want("mime"), "{t:?}");
                assert_eq!(g["status"].as_str().unwrap_or("-"), want("status"), "{t:?}");
                kept += 1;
            }
        }
    }
    assert_eq!(lines.len(), kept);
    assert!(kept > 100);
}

#[test]
fn a_mixed_tree_indexes_arc_warc_kulturarw3_and_nedlib_together() {
    let test = "a_mixed_tree_indexes_arc_warc_kulturarw3_and_nedlib_together";
    let dir = tempfile::tempdir().unwrap();
    let mixed = dir.path().join("mixed");
    std::fs::create_dir(&mixed).unwrap();
    let Some(k3) = generate(
        test,
        "gen_kulturarw3.py",
        &mixed.join("k"),
        &["--objects", "20", "--seed", "1"],
    ) else {
        return;
    };
    let nd = generate(
        test,
        "gen_nedlib.py",
        &mixed.join("n"),
        &["--objects", "20", "--seed", "1"],
    )
    .unwrap();
    std::fs::remove_file(k3.join("truth.tsv")).unwrap();
    std::fs::remove_file(nd.join("truth.tsv")).unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    for f in std::fs::read_dir(&samples).unwrap().flatten() {
        let name = f.file_name().to_string_lossy().to_string();
        if name.contains(".arc") || name.contains(".warc") {
            std::fs::copy(f.path(), mixed.join(&name)).unwrap();
        }
    }
    let o = run(
        &["index", "-q", "--format", "cdxj", mixed.to_str().unwrap()],
        b"",
    );
    util::assert_ok(&o);
    let text = String::from_utf8(o.stdout).unwrap();
    let by = |prefix: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"filename\": \"{prefix}")))
            .count()
    };
    assert_eq!(by("k/out/archive/"), 20);
    assert_eq!(by("n/out/"), 20);
    assert!(by("example") > 0);
    // Sorted as one index.
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.windows(2).all(|w| w[0] <= w[1]));
}

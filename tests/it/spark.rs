//! `spark/ukvs_spark.py` on `local[2]` against single-machine ukvs, and the
//! wheel that carries the binary to a cluster's nodes.
//!
//! Needs python3 with pyspark (and its pyarrow and pandas) and a Java
//! runtime; `.ci/run` installs the Python packages from
//! `scripts/requirements.txt`. Each test skips with a message when
//! something is missing.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{assert_ok, bin, has_python_module, shared_dir};

const LINES_PER_BLOCK: usize = 40;

/// Whether a Java runtime answers `java -version`; prints a skip message if not.
fn has_java(test: &str) -> bool {
    let ok = Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED {test}: no Java runtime (`java -version` fails); Spark needs one");
    }
    ok
}

/// Writes a corpus with `gen_arc_corpus.py ARGS` into `out`.
fn generate(tools: &Path, out: &Path, args: &[&str]) {
    let o = Command::new("python3")
        .arg(tools.join("gen_arc_corpus.py"))
        .arg("--out")
        .arg(out)
        .args(args)
        .args(["--jobs", "1"])
        .output()
        .expect("run gen_arc_corpus.py");
    assert!(
        o.status.success(),
        "gen_arc_corpus.py failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Runs the Spark job on `local[2]`, loopback only, with the tests' binary
/// on PATH; returns its exit code.
fn spark_job(args: &[&str], inputs: &[&Path]) -> i32 {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("spark/ukvs_spark.py");
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("python3")
        .arg(job)
        .args(["--master", "local[2]"])
        .args(["--lines-per-block", &LINES_PER_BLOCK.to_string()])
        .args(["--conf", "spark.ui.enabled=false"])
        .args(["--conf", "spark.ui.showConsoleProgress=false"])
        .args(args)
        .args(inputs)
        .env("PATH", path)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .env("SOURCE_DATE_EPOCH", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run python3 spark/ukvs_spark.py");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        matches!(o.status.code(), Some(0 | 2)),
        "the Spark job failed: {stderr}"
    );
    o.status.code().unwrap()
}

/// `ukvs ARGS` with SOURCE_DATE_EPOCH=0; its stdout.
fn ukvs(args: &[&str]) -> Vec<u8> {
    let o = Command::new(bin())
        .args(args)
        .env("SOURCE_DATE_EPOCH", "0")
        .output()
        .expect("run ukvs");
    assert_ok(&o);
    o.stdout
}

/// One block of a cluster: its `.idx` fields and its decompressed lines.
struct Block {
    key: Vec<u8>,
    shard: String,
    block_no: u64,
    text: Vec<u8>,
}

/// Every block of the cluster in DIR in `.idx` order, each checked to be
/// exactly one gzip member that starts with the block's key.
fn read_blocks(dir: &Path) -> Vec<Block> {
    let idx = std::fs::read(dir.join("index.idx")).unwrap();
    let loc = std::fs::read_to_string(dir.join("index.loc")).unwrap();
    let files: BTreeMap<&str, Vec<u8>> = loc
        .lines()
        .map(|l| {
            let (shard, file) = l.split_once('\t').unwrap();
            (shard, std::fs::read(dir.join(file)).unwrap())
        })
        .collect();
    let mut out = Vec::new();
    for line in idx.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let f: Vec<&[u8]> = line.split(|&b| b == b'\t').collect();
        assert_eq!(f.len(), 5, "idx line {:?}", String::from_utf8_lossy(line));
        let num = |b: &[u8]| std::str::from_utf8(b).unwrap().parse::<usize>().unwrap();
        let shard = std::str::from_utf8(f[1]).unwrap().to_string();
        let (offset, length) = (num(f[2]), num(f[3]));
        let member = &files[shard.as_str()][offset..offset + length];
        let mut gz = flate2::bufread::GzDecoder::new(member);
        let mut text = Vec::new();
        gz.read_to_end(&mut text).unwrap();
        assert!(
            gz.into_inner().is_empty(),
            "{shard} at {offset}: more than one gzip member in {length} bytes"
        );
        assert!(
            text.starts_with(f[0]),
            "{shard} at {offset}: the block does not start with its key"
        );
        out.push(Block {
            key: f[0].to_vec(),
            shard,
            block_no: num(f[4]) as u64,
            text,
        });
    }
    out
}

/// `index.headers` and the blocks in `.idx` order, as one index file.
fn cluster_as_index(dir: &Path) -> Vec<u8> {
    let mut out = std::fs::read(dir.join("index.headers")).unwrap();
    for b in read_blocks(dir) {
        out.extend_from_slice(&b.text);
        out.push(b'\n');
    }
    out
}

/// Every file under DIR (relative path -> bytes).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    out
}

/// Checks the cluster in DIR against single-machine ukvs on INPUTS.
fn check_against_single_machine(dir: &Path, inputs: &[&Path], tmp: &Path) {
    let index = tmp.join("single.ukvs");
    let o = Command::new(bin())
        .args(["index", "-q", "-o"])
        .arg(&index)
        .args(inputs)
        .output()
        .unwrap();
    // 2: damaged records, reported and skipped.
    assert!(matches!(o.status.code(), Some(0 | 2)), "ukvs index: {o:?}");
    let single = std::fs::read(&index).unwrap();
    let index = index.to_str().unwrap();

    // The blocks in .idx order, below the headers, are `ukvs index`.
    assert!(
        cluster_as_index(dir) == single,
        "the cluster in {} differs from `ukvs index`",
        dir.display()
    );

    // Block numbers count from 1 across the shards; each shard is laid
    // out as `ukvs zipnum build` lays out its lines.
    let blocks = read_blocks(dir);
    let numbers: Vec<u64> = blocks.iter().map(|b| b.block_no).collect();
    assert_eq!(numbers, (1..=blocks.len() as u64).collect::<Vec<_>>());
    let headers = std::fs::read(dir.join("index.headers")).unwrap();
    let mut shards: BTreeMap<&str, Vec<&Block>> = BTreeMap::new();
    for b in &blocks {
        shards.entry(&b.shard).or_default().push(b);
    }
    assert!(shards.len() > 1, "the corpus should fill several shards");
    for (shard, bs) in shards {
        let lines = tmp.join(format!("{shard}.ukvs"));
        let mut text = headers.clone();
        for b in &bs {
            text.extend_from_slice(&b.text);
            text.push(b'\n');
        }
        std::fs::write(&lines, text).unwrap();
        let zn = tmp.join(format!("zipnum-{shard}"));
        ukvs(&[
            "zipnum",
            "build",
            "--lines-per-block",
            &LINES_PER_BLOCK.to_string(),
            "-o",
            zn.to_str().unwrap(),
            lines.to_str().unwrap(),
        ]);
        assert!(
            std::fs::read(zn.join("index-01.cdx.gz")).unwrap()
                == std::fs::read(dir.join(format!("{shard}.cdx.gz"))).unwrap(),
            "{shard} is not laid out as `ukvs zipnum build` of its lines"
        );
        let keys: Vec<Vec<u8>> = read_blocks(&zn).into_iter().map(|b| b.key).collect();
        assert_eq!(keys, bs.iter().map(|b| b.key.clone()).collect::<Vec<_>>());
    }

    // The map: `mementomap generate` of the index, naming the cluster's
    // `.idx` beside it as its source; the statistics: `ukvs stats`.
    let map = ukvs(&[
        "mementomap",
        "generate",
        "-q",
        "--source",
        "index.idx",
        index,
    ]);
    assert_eq!(
        String::from_utf8(std::fs::read(dir.join("mementomap.ukvs")).unwrap()).unwrap(),
        String::from_utf8(map).unwrap()
    );
    let stats = ukvs(&["stats", "--json", "-q", index]);
    assert!(std::fs::read(dir.join("stats.json")).unwrap() == stats);

    // Each kept map part names the shard it summarises, from `parts/`.
    let parts = dir.join("parts");
    let mut named = 0;
    for e in std::fs::read_dir(&parts).unwrap() {
        let p = e.unwrap().path();
        let file = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(n) = file
            .strip_prefix("mementomap-")
            .and_then(|f| f.strip_suffix(".ukvs"))
        else {
            continue;
        };
        let shard = format!("../index-{n}.cdx.gz");
        let map = String::from_utf8(std::fs::read(&p).unwrap()).unwrap();
        let meta = map.lines().find(|l| l.starts_with("!meta ")).unwrap();
        assert!(
            meta.contains(&format!("\"source\":[\"{shard}\"]")),
            "{file}: {meta}"
        );
        assert!(parts.join(&shard).is_file(), "{file} names {shard}");
        named += 1;
    }
    assert!(named > 0, "no map parts in {}", parts.display());
}

#[test]
fn spark_cluster_equals_single_machine_and_batches_merge() {
    const TEST: &str = "spark_cluster_equals_single_machine_and_batches_merge";
    let Some(tools) = shared_dir("tools", TEST) else {
        return;
    };
    if !has_python_module("pyspark", TEST)
        || !has_python_module("pyarrow", TEST)
        || !has_python_module("pandas", TEST)
        || !has_java(TEST)
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // Batch 1: ARC and WARC files in two directories; batch 2: one small
    // gzipped WARC of two hosts, so that some shards receive nothing,
    // with damage (a cut last record, wrong lengths, garbage).
    let (arc, warc, late) = (t.join("arc"), t.join("warc"), t.join("late"));
    generate(
        &tools,
        &arc,
        &[
            "--files",
            "2",
            "--records-per-file",
            "150",
            "--hosts",
            "300",
        ],
    );
    generate(
        &tools,
        &warc,
        &[
            "--warc",
            "--plain",
            "--files",
            "2",
            "--records-per-file",
            "100",
            "--seed",
            "2",
            "--hosts",
            "300",
        ],
    );
    generate(
        &tools,
        &late,
        &[
            "--warc",
            "--files",
            "1",
            "--records-per-file",
            "20",
            "--seed",
            "3",
            "--corrupt",
            "3",
            "--hosts",
            "2",
        ],
    );
    let late_file = std::fs::read_dir(&late)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".warc.gz"))
        .unwrap();

    // Batch 1 with sampled split points.
    let inc = t.join("inc");
    let out = inc.to_str().unwrap();
    assert_eq!(spark_job(&["--shards", "6", "-o", out], &[&arc, &warc]), 0);
    check_against_single_machine(&inc, &[&arc, &warc], t);
    let splits = std::fs::read(inc.join("splits.txt")).unwrap();
    assert_eq!(splits.split(|&b| b == b'\n').count(), 6, "5 split keys");

    // Batch 2 merged into it, its file read by Spark and piped to ukvs.
    let before = tree(&inc);
    // Exit 2: the damage is reported, the good records indexed.
    assert_eq!(spark_job(&["--via-spark", "-o", out], &[&late_file]), 2);
    check_against_single_machine(&inc, &[&arc, &warc, &late_file], t);
    let after = tree(&inc);
    let kept = before
        .iter()
        .filter(|(p, b)| p.to_string_lossy().ends_with(".cdx.gz") && after.get(*p) == Some(b))
        .count();
    assert!(kept > 0, "batch 2 should leave some shards as they were");

    // One run over both batches with the same splits: the same files.
    let full = t.join("full");
    let splits_file = inc.join("splits.txt");
    let args = ["--splits", splits_file.to_str().unwrap()];
    let full_args = [&args[..], &["-o", full.to_str().unwrap()]].concat();
    assert_eq!(spark_job(&full_args, &[&arc, &warc, &late_file]), 2);
    let full_tree = tree(&full);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        full_tree.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &after {
        assert!(
            &full_tree[path] == bytes,
            "{} differs between the batches and one run",
            path.display()
        );
    }
}

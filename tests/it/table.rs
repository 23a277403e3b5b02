//! Capture tables (`ukvs index --table`, `ukvs table`, the Spark job's
//! `--table`): every row equals the index line it comes from, read with
//! pyarrow and with DuckDB (`scripts/table_check.py` computes the row of
//! each line by itself); the schema is Common Crawl's; Common Crawl's
//! example queries answer as a Python computation over the CDXJ index
//! does; conversions of every kind of index give the same rows.
//!
//! Needs python3 with pyarrow, duckdb and tldextract (pywb's and surt's
//! dependency); each test skips with a message when one is missing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::util::{assert_ok, bin, data_dir, has_python_module, run, shared_corpus, shared_dir};

/// Whether the checker's modules are there (a skip message if not).
fn has_checker(test: &str) -> bool {
    has_python_module("pyarrow", test)
        && has_python_module("duckdb", test)
        && has_python_module("tldextract", test)
}

/// `python3 scripts/table_check.py ARGS`, which must pass.
fn check(args: &[&str]) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/table_check.py");
    let o = Command::new("python3")
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/table_check.py");
    assert!(
        o.status.success(),
        "table_check.py {args:?}:\n{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Writes a corpus with `gen_arc_corpus.py ARGS` into `out`; `None` (with
/// a message) without the shared tools.
fn generate(test: &str, out: &Path, args: &[&str]) -> Option<()> {
    let tools = shared_dir("tools", test)?;
    let o = Command::new("python3")
        .arg(tools.join("gen_arc_corpus.py"))
        .arg("--out")
        .arg(out)
        .args(args)
        .args(["--jobs", "1"])
        .output()
        .expect("run gen_arc_corpus.py");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    Some(())
}

/// ARC and WARC files of a generated crawl, in `dir/arc` and `dir/warc`.
fn corpus(test: &str, dir: &Path) -> Option<Vec<PathBuf>> {
    let (arc, warc) = (dir.join("arc"), dir.join("warc"));
    let hosts = ["--hosts", "150"];
    generate(
        test,
        &arc,
        &[&["--files", "2", "--records-per-file", "200"], &hosts[..]].concat(),
    )?;
    generate(
        test,
        &warc,
        &[
            &["--warc", "--files", "2", "--records-per-file", "200"],
            &["--seed", "2"][..],
            &hosts[..],
        ]
        .concat(),
    )?;
    Some(vec![arc, warc])
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `ukvs index INPUTS --format FORMAT -o INDEX --table TABLE --crawl C`.
fn index_with_table(inputs: &[PathBuf], format: &str, index: &Path, table: &Path) {
    let mut args = vec!["index", "-q", "--format", format, "-o", s(index)];
    args.extend(["--table", s(table), "--crawl", "TEST"]);
    args.extend(inputs.iter().map(|p| s(p)));
    assert_ok(&run(&args, b""));
}

#[test]
fn table_rows_equal_their_index_lines_in_every_profile() {
    const TEST: &str = "table_rows_equal_their_index_lines_in_every_profile";
    if !has_checker(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(inputs) = corpus(TEST, dir.path()) else {
        return;
    };
    for format in ["ukvs", "cdxj", "cdx11", "cdx9"] {
        let index = dir.path().join(format!("index.{format}"));
        let table = dir.path().join(format!("{format}.parquet"));
        index_with_table(&inputs, format, &index, &table);
        check(&["rows", s(&index), s(&table), "--crawl", "TEST"]);
        // A directory: the same rows, under crawl=/subset= paths.
        let tdir = dir.path().join(format!("{format}-dir"));
        let index2 = dir.path().join(format!("index2.{format}"));
        index_with_table(&inputs, format, &index2, &tdir);
        assert!(tdir
            .join("crawl=TEST/subset=warc/part-00000.parquet")
            .is_file());
        assert!(tdir
            .join("crawl=TEST/subset=crawldiagnostics/part-00000.parquet")
            .is_file());
        check(&["rows", s(&index2), s(&tdir), "--crawl", "TEST"]);
    }
}

#[test]
fn table_rows_of_real_archives_arc_rev3_and_seed_formats() {
    const TEST: &str = "table_rows_of_real_archives_arc_rev3_and_seed_formats";
    if !has_checker(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = vec![
        data_dir().join("arc/example.arc"),
        data_dir().join("arc/rev3-generated.arc.gz"),
        data_dir().join("arc/rev3-proposal.arc"),
        data_dir().join("kulturarw3"),
        data_dir().join("nedlib/harvest"),
        data_dir().join("warc"),
    ];
    if let Some(corpus) = shared_corpus(TEST) {
        inputs.push(corpus.join("webrecorder__pywb/sample_archive/warcs/iana.warc.gz"));
        inputs.push(corpus.join("webrecorder__pywb/sample_archive/warcs/example.warc.gz"));
    }
    for format in ["ukvs", "cdxj"] {
        let index = dir.path().join(format!("index.{format}"));
        let table = dir.path().join(format!("{format}.parquet"));
        let mut args = vec!["index", "-q", "--all-records", "--format", format];
        args.extend(["-o", s(&index), "--table", s(&table), "--crawl", "TEST"]);
        args.extend(inputs.iter().map(|p| s(p)));
        // Damaged records of the fixtures are reported (exit 2); the
        // table holds what the index holds.
        let o = run(&args, b"");
        assert!(
            matches!(o.status.code(), Some(0 | 2)),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        check(&["rows", s(&index), s(&table), "--crawl", "TEST"]);
    }
}

#[test]
fn table_schema_is_common_crawls() {
    const TEST: &str = "table_schema_is_common_crawls";
    if !has_checker(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let index = dir.path().join("i.ukvs");
    let table = dir.path().join("t.parquet");
    index_with_table(
        &[data_dir().join("arc/example.arc")],
        "ukvs",
        &index,
        &table,
    );
    let schema = data_dir().join("cc-index-table/cc-index-schema-flat.json");
    check(&["schema", s(&table), s(&schema)]);
}

#[test]
fn common_crawls_example_queries_answer_as_the_cdxj_does() {
    const TEST: &str = "common_crawls_example_queries_answer_as_the_cdxj_does";
    if !has_checker(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(inputs) = corpus(TEST, dir.path()) else {
        return;
    };
    let index = dir.path().join("index.cdxj");
    let table = dir.path().join("table");
    index_with_table(&inputs, "cdxj", &index, &table);
    check(&["queries", s(&index), s(&table), "TEST"]);
}

#[test]
fn ukvs_table_converts_every_kind_of_index_to_the_same_rows() {
    const TEST: &str = "ukvs_table_converts_every_kind_of_index_to_the_same_rows";
    if !has_checker(TEST) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(inputs) = corpus(TEST, d) else {
        return;
    };
    for format in ["ukvs", "cdxj", "cdx11"] {
        let index = d.join(format!("index.{format}"));
        let made = d.join(format!("made-{format}.parquet"));
        index_with_table(&inputs, format, &index, &made);
        let conv = d.join(format!("conv-{format}.parquet"));
        assert_ok(&run(
            &["table", "-q", s(&index), "-o", s(&conv), "--crawl", "TEST"],
            b"",
        ));
        check(&["same", s(&conv), s(&made)]);
        // Read from stdin.
        let piped = d.join(format!("piped-{format}.parquet"));
        let bytes = std::fs::read(&index).unwrap();
        assert_ok(&run(
            &["table", "-q", "-", "-o", s(&piped), "--crawl", "TEST"],
            &bytes,
        ));
        check(&["same", s(&piped), s(&made)]);
    }
    let made = d.join("made-ukvs.parquet");
    // A ZipNum cluster of the index.
    let cluster = d.join("cluster");
    let index = d.join("index.ukvs");
    assert_ok(&run(
        &[
            "zipnum",
            "build",
            "--lines-per-block",
            "37",
            "-o",
            s(&cluster),
            s(&index),
        ],
        b"",
    ));
    let conv = d.join("cluster.parquet");
    assert_ok(&run(
        &[
            "table",
            "-q",
            s(&cluster),
            "-o",
            s(&conv),
            "--crawl",
            "TEST",
        ],
        b"",
    ));
    check(&["same", s(&conv), s(&made)]);
    // The index cut in two files, merged by key; and gzip'd.
    let text = std::fs::read(&index).unwrap();
    let (head, lines): (Vec<&[u8]>, Vec<&[u8]>) = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .partition(|l| l[0] == b'!');
    let (mut a, mut b) = (head.join(&b'\n'), head.join(&b'\n'));
    for (i, l) in lines.iter().enumerate() {
        let half = if i % 3 == 0 { &mut a } else { &mut b };
        half.push(b'\n');
        half.extend_from_slice(l);
    }
    let (pa, pb) = (d.join("a.ukvs"), d.join("b.ukvs"));
    std::fs::write(&pa, [a, b"\n".to_vec()].concat()).unwrap();
    std::fs::write(&pb, [b, b"\n".to_vec()].concat()).unwrap();
    let conv = d.join("two.parquet");
    assert_ok(&run(
        &[
            "table",
            "-q",
            s(&pa),
            s(&pb),
            "-o",
            s(&conv),
            "--crawl",
            "TEST",
        ],
        b"",
    ));
    check(&["same", s(&conv), s(&made)]);
    let gz = d.join("index.ukvs.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut enc, &text).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let conv = d.join("gz.parquet");
    assert_ok(&run(
        &["table", "-q", s(&gz), "-o", s(&conv), "--crawl", "TEST"],
        b"",
    ));
    check(&["same", s(&conv), s(&made)]);
}

#[test]
fn ukvs_table_reads_a_live_collection_as_cat_does() {
    const TEST: &str = "ukvs_table_reads_a_live_collection_as_cat_does";
    if !has_checker(TEST) {
        return;
    }
    use crate::live::{agent, post, start, Capture, Rng};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut rng = Rng(0x7ab1e);
    let mut base: Vec<String> = (0..60).map(|_| Capture::random(&mut rng).cdxj()).collect();
    base.sort();
    base.dedup();
    let base_file = d.join("base.cdxj");
    std::fs::write(&base_file, base.join("\n") + "\n").unwrap();
    let data = d.join("data");
    let spec = format!("web={}", base_file.display());
    let live = start(&["--data", s(&data), &spec]);
    let posted: Vec<String> = (0..25).map(|_| Capture::random(&mut rng).cdxj()).collect();
    let (status, answer) = post(
        &agent(),
        &live.url("/web"),
        (posted.join("\n") + "\n").as_bytes(),
    );
    assert!(status < 300, "{status} {answer}");
    live.kill();
    let web = data.join("web");
    let cat = run(&["cat", "--data", s(&web), s(&base_file)], b"");
    assert_ok(&cat);
    let lines = d.join("collection.cdxj");
    std::fs::write(&lines, &cat.stdout).unwrap();
    let n = cat
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && l[0] != b'!')
        .count();
    assert_eq!(n, base.len() + posted.len(), "the POST adds its lines");
    let table = d.join("live.parquet");
    let o = run(
        &["table", "--data", s(&web), s(&base_file), "-o", s(&table)],
        b"",
    );
    assert_ok(&o);
    // Named after the collection.
    check(&["rows", s(&lines), s(&table), "--crawl", "web"]);
}

#[test]
fn table_refuses_unsorted_input_and_reports_lines_without_datetime() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let unsorted = d.join("u.cdxj");
    std::fs::write(
        &unsorted,
        "org,b)/ 20200101000000 {\"url\": \"http://b.org/\"}\n\
         org,a)/ 20200101000000 {\"url\": \"http://a.org/\"}\n",
    )
    .unwrap();
    let out = d.join("u.parquet");
    let o = run(
        &["table", "-", "-o", s(&out)],
        &std::fs::read(&unsorted).unwrap(),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("org,a)/ comes after org,b)/"), "{err}");
    assert!(!out.exists(), "no table from unsorted lines");

    let bad = "org,a)/ - {\"url\": \"http://a.org/\"}\n\
               org,b)/ 20200101000000 {\"url\": \"http://b.org/\", \"status\": \"200\"}\n";
    let out = d.join("b.parquet");
    let o = run(&["table", "-", "-o", s(&out)], bad.as_bytes());
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 1: no row"), "{err}");
    assert!(err.contains("1 rows in 1 files, 1 lines skipped"), "{err}");
    assert!(out.is_file(), "the other lines make the table");

    let o = run(
        &[
            "index",
            "--no-sort",
            "--table",
            s(&out),
            s(&data_dir().join("arc/example.arc")),
        ],
        b"",
    );
    assert_eq!(o.status.code(), Some(2));

    // A table directory is replaced whole on a second run; a directory
    // holding anything else is left alone.
    let tdir = d.join("t");
    let good = "org,b)/ 20200101000000 {\"url\": \"http://b.org/\", \"status\": \"200\"}\n";
    for _ in 0..2 {
        assert_ok(&run(&["table", "-q", "-", "-o", s(&tdir)], good.as_bytes()));
    }
    assert!(tdir
        .join("crawl=t/subset=warc/part-00000.parquet")
        .is_file());
    std::fs::write(tdir.join("notes.txt"), "mine").unwrap();
    let o = run(&["table", "-q", "-", "-o", s(&tdir)], good.as_bytes());
    assert_eq!(o.status.code(), Some(2));
    assert!(tdir.join("notes.txt").is_file());
}

#[test]
fn spark_table_equals_single_machine_table() {
    const TEST: &str = "spark_table_equals_single_machine_table";
    if !has_checker(TEST) || !has_python_module("pyspark", TEST) {
        return;
    }
    let java = Command::new("java")
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !java {
        eprintln!("SKIPPED {TEST}: no Java runtime (`java -version` fails); Spark needs one");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(inputs) = corpus(TEST, d) else {
        return;
    };
    let cluster = d.join("cluster");
    let spark_table = d.join("spark-table");
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("spark/ukvs_spark.py");
    let path = format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("python3")
        .arg(job)
        .args(["--master", "local[2]", "--shards", "3"])
        .args(["--conf", "spark.ui.enabled=false"])
        .args(["--conf", "spark.ui.showConsoleProgress=false"])
        .args([
            "-o",
            s(&cluster),
            "--table",
            s(&spark_table),
            "--crawl",
            "TEST",
        ])
        .args(inputs.iter().map(|p| s(p)))
        .env("PATH", path)
        .env("SPARK_LOCAL_IP", "127.0.0.1")
        .stdin(Stdio::null())
        .output()
        .expect("run python3 spark/ukvs_spark.py");
    assert!(
        o.status.success(),
        "the Spark job failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let index = d.join("index.ukvs");
    let table = d.join("table");
    index_with_table(&inputs, "ukvs", &index, &table);
    check(&["same", s(&spark_table), s(&table)]);
    check(&["rows", s(&index), s(&spark_table), "--crawl", "TEST"]);
    check(&["queries", s(&index), s(&spark_table), "TEST"]);
}

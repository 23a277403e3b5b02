//! The UKVS format engine: spec examples, malformed files, round trips,
//! conversions, and the JSON Schemas in `schemas/`.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{json, Value};
use ukvs::ukvs::{
    classify, format_record, parse_json5, Field, Line, ProblemKind, Record, Schema, Token,
    Validator, Writer,
};

use crate::util;

fn good(name: &str) -> PathBuf {
    util::data_dir().join("ukvs").join(name)
}

fn bad(name: &str) -> PathBuf {
    util::data_dir().join("ukvs-bad").join(name)
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = util::run(args, b"");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ndjson(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("NDJSON line"))
        .collect()
}

#[test]
fn spec_examples_validate() {
    for name in [
        "spec-people.ukvs",
        "spec-mementomap.ukvs",
        "spec-frequency-forms.ukvs",
        "spec-frequency-looseness.ukvs",
        "spec-zero-override.ukvs",
        "spec-datetime-oslj.ukvs",
        "datetime-keys-sorted.ukvs",
        "capture-index.ukvs",
        "mementomap-sample-01.ukvs",
    ] {
        let p = good(name);
        let (code, stdout, stderr) = run(&["validate", p.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {stdout}{stderr}");
        assert!(stdout.contains("0 problems: valid"), "{stdout}");
    }
}

#[test]
fn spec_datetime_key_example_is_not_in_byte_order() {
    // `:` (0x3a) sorts after the digits, so the spec's own listing puts the
    // all-time line first although a byte-order sort puts it last.
    let p = good("spec-datetime-keys.ukvs");
    let p = p.to_str().unwrap();
    let (code, stdout, _) = run(&["validate", p]);
    assert_eq!(code, 2);
    assert!(
        stdout.starts_with(&format!(
            "{p}:4: out of byte order: sorts before line 3 (byte offset {}; sort the file with `ukvs sort`, or `LC_ALL=C sort`)\n",
            std::fs::read_to_string(p).unwrap().lines().take(3).map(|l| l.len() + 1).sum::<usize>()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("NOT sorted, MementoMap, 1 problems"),
        "{stdout}"
    );
}

#[test]
fn spec_summary_counts() {
    let p = good("spec-mementomap.ukvs");
    let (_, stdout, _) = run(&["validate", p.to_str().unwrap()]);
    assert!(
        stdout.contains(
            "10 lines (5 headers, 5 records), 5 keys, 0 duplicate keys, 0 identical lines, sorted, MementoMap, 0 problems: valid"
        ),
        "{stdout}"
    );
    let p = good("capture-index.ukvs");
    let (_, stdout, _) = run(&["validate", p.to_str().unwrap()]);
    assert!(
        stdout.contains("7 lines (3 headers, 4 records), 3 keys, 1 duplicate keys, 1 identical lines, sorted, 0 problems"),
        "{stdout}"
    );
}

#[test]
fn people_example_expands_as_formats_md_says() {
    let p = good("spec-people.ukvs");
    let (code, stdout, stderr) = run(&["cat", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        ndjson(&stdout),
        vec![
            json!({"lname": "Doe", "fname": "Jane", "qualification": "PhD", "profession": "Professor",
                   "home": "https://example.edu/members/jdoe"}),
            json!({"lname": "Doe", "fname": "John", "qualification": "Masters",
                   "profession": "Business Consultant"}),
            json!({"lname": "Roe", "fname": "Richard", "qualification": "PhD", "profession": "Scientist",
                   "dob": "May 7, 1920", "awards": ["Fiction 42", "Mad Scientist"]}),
            json!({"lname": "Shmoe", "fname": "Joe", "qualification": null, "profession": "Assistant"}),
        ]
    );
    // Key order in the output: fields first, in `!fields` order, then the
    // OSLJ members in their own order.
    assert!(stdout.starts_with(
        r#"{"lname":"Doe","fname":"Jane","qualification":"PhD","profession":"Professor","home":"#
    ));
}

#[test]
fn people_example_normalises() {
    let p = good("spec-people.ukvs");
    let (code, stdout, _) = run(&["cat", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout,
        concat!(
            "!fields {\"keys\":[\"lname\",\"fname\"],\"values\":[\"qualification\",\"profession\"]}\n",
            "Doe Jane PhD Professor {\"home\":\"https://example.edu/members/jdoe\"}\n",
            "Doe John Masters \"Business Consultant\"\n",
            "Roe Richard PhD Scientist {\"dob\":\"May 7, 1920\",\"awards\":[\"Fiction 42\",\"Mad Scientist\"]}\n",
            "Shmoe Joe - Assistant\n",
        )
    );
    // Normalising is idempotent and the result validates.
    let dir = tempfile::tempdir().unwrap();
    let once = dir.path().join("once.ukvs");
    std::fs::write(&once, &stdout).unwrap();
    let (_, twice, _) = run(&["cat", once.to_str().unwrap()]);
    assert_eq!(twice, stdout);
    assert_eq!(run(&["validate", once.to_str().unwrap()]).0, 0);
}

#[test]
fn mementomap_examples_expand() {
    let p = good("spec-mementomap.ukvs");
    let (code, stdout, _) = run(&["cat", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    let rows = ndjson(&stdout);
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0], json!({"surt": "*", "frequency": "54321"}));
    assert_eq!(
        rows[4],
        json!({"surt": "uk,co,bbc)/images/*", "frequency": "300"})
    );

    let p = good("spec-datetime-oslj.ukvs");
    let (_, stdout, _) = run(&["cat", "--json", p.to_str().unwrap()]);
    assert_eq!(
        ndjson(&stdout),
        vec![json!({"surt": "com,twitter)/*", "frequency": "100/35",
                    "datetime": {"2014": "20~/10", "2015": "60+/30+"}})]
    );

    let p = good("datetime-keys-sorted.ukvs");
    let (_, stdout, _) = run(&["cat", "--json", p.to_str().unwrap()]);
    assert_eq!(
        ndjson(&stdout)[3],
        json!({"surt": "com,twitter)/*", "datetime": ":", "frequency": "100/35"})
    );

    let p = good("spec-frequency-looseness.ukvs");
    let (_, stdout, _) = run(&["cat", "--json", p.to_str().unwrap()]);
    let freqs: Vec<Value> = ndjson(&stdout)
        .into_iter()
        .map(|r| r["frequency"].clone())
        .collect();
    assert_eq!(
        freqs,
        vec![
            json!("300"),
            json!("400+/100"),
            json!("200-/150~"),
            json!("/50+")
        ]
    );
}

/// Every malformed class, with the line `validate` must name.
#[test]
fn malformed_files_are_rejected_on_the_right_line() {
    let cases: &[(&str, &[&str])] = &[
        (
            "out-of-order.ukvs",
            &[":3: out of byte order: sorts before line 2"],
        ),
        (
            "header-after-data.ukvs",
            &[":3: header `!meta` after the first data line"],
        ),
        (
            "arity.ukvs",
            &[
                ":3: 2 fields where `!fields` declares 3",
                ":4: 4 fields where `!fields` declares 3",
            ],
        ),
        (
            "bad-json.ukvs",
            &[":3: invalid JSON block: at column 7 of the JSON"],
        ),
        ("bad-header-json.ukvs", &[":2: bad header: invalid JSON"]),
        (
            "unterminated-quote.ukvs",
            &[":3: column 3: unterminated quoted value"],
        ),
        (
            "text-after-quote.ukvs",
            &[":2: column 6: text right after a closing quote"],
        ),
        (
            "bad-escape.ukvs",
            &[":2: column 4: unknown escape in quoted value"],
        ),
        (
            "bad-frequency.ukvs",
            &[
                ":4: bad frequency \"3x0\"",
                ":5: bad frequency \"1/2/3\"",
                ":6: bad frequency \"\"",
            ],
        ),
        (
            "duplicate-key.ukvs",
            &[":4: duplicate key (same as line 3)"],
        ),
        (
            "bad-oslj-frequency.ukvs",
            &[":3: bad frequency \"x\"", ":4: bad datetime key \"20y4\""],
        ),
        ("blank-line.ukvs", &[":3: empty line"]),
        ("crlf.ukvs", &[":1: carriage return", ":2: carriage return"]),
        (
            "conflicting-fields.ukvs",
            &[":2: bad header: `!fields`: a second `!fields` that differs from the first"],
        ),
        (
            "empty-keys.ukvs",
            &[":1: bad header: `!fields`: `keys` is empty"],
        ),
        (
            "meta-not-object.ukvs",
            &[":2: bad header: `!meta` must be a JSON object"],
        ),
        (
            "field-oslj-clash.ukvs",
            &[":3: name `offset` appears both as a field and in the JSON block"],
        ),
        (
            "lone-surrogate.ukvs",
            &[":2: invalid JSON block: at column 10 of the JSON: missing unicode trail surrogate"],
        ),
        (
            "bad-utf8-json.ukvs",
            &[":2: invalid JSON block: not UTF-8"],
        ),
        (
            "duplicate-member.ukvs",
            &[
                ":2: invalid JSON block: member `url` appears twice in one object",
                ":3: invalid JSON block: at column 21 of the JSON: member `a` appears twice",
            ],
        ),
        (
            "header-duplicate-member.ukvs",
            &[":1: bad header: invalid JSON: member `type` appears twice in one object"],
        ),
        (
            "header-lone-surrogate.ukvs",
            &[":2: bad header: invalid JSON: at column 9 of the JSON: unexpected unicode trail surrogate"],
        ),
        (
            "json5-numbers.ukvs",
            &[
                ":2: invalid JSON block: at column 10 of the JSON: Infinity has no strict JSON form",
                ":3: invalid JSON block: at column 5 of the JSON: NaN has no strict JSON form",
                ":4: invalid JSON block: at column 5 of the JSON: error parsing number: too large",
            ],
        ),
        (
            "mementomap-no-frequency.ukvs",
            &[":2: bad header: a MementoMap's `!fields` must name a `frequency` value"],
        ),
        (
            "fields-after-data.ukvs",
            &[":2: header `!fields` after the first data line (line 1); ignored"],
        ),
    ];
    for (name, wants) in cases {
        let p = bad(name);
        let p = p.to_str().unwrap();
        let (code, stdout, _) = run(&["validate", p]);
        assert_eq!(code, 2, "{name}: {stdout}");
        let problems: Vec<&str> = stdout.lines().filter(|l| !l.ends_with("INVALID")).collect();
        assert_eq!(problems.len(), wants.len(), "{name}: {stdout}");
        for (got, want) in problems.iter().zip(wants.iter()) {
            assert!(
                got.starts_with(&format!("{p}{want}")),
                "{name}: {got} lacks {want}"
            );
        }
    }
    // Every file in the directory has a case above.
    let listed = std::fs::read_dir(util::data_dir().join("ukvs-bad"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "ukvs")
        })
        .count();
    assert_eq!(listed, cases.len());
}

/// Whatever `cat --json` refuses in a record or header, `validate` reports
/// on the same line: the fixtures of each class, and the JSON problems of
/// every malformed fixture.
#[test]
fn validate_rejects_what_cat_json_rejects_on_the_same_lines() {
    let lines_named = |text: &str, p: &str| -> Vec<u64> {
        let mut v: Vec<u64> = text
            .lines()
            .filter_map(|l| {
                l.strip_prefix(p)?
                    .strip_prefix(':')?
                    .split(':')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        v.dedup();
        v
    };
    for e in std::fs::read_dir(util::data_dir().join("ukvs-bad")).unwrap() {
        let path = e.unwrap().path();
        if !path.extension().is_some_and(|x| x == "ukvs") {
            continue;
        }
        let p = path.to_str().unwrap();
        let (vcode, vout, _) = run(&["validate", "-q", p]);
        let (ccode, _, cerr) = run(&["cat", "--json", p]);
        let by_validate = lines_named(&vout, p);
        let by_cat = lines_named(&cerr, p);
        // Every line cat refuses is one validate reports.
        for l in &by_cat {
            assert!(
                by_validate.contains(l),
                "{p}: cat refuses line {l}, validate does not: {vout}{cerr}"
            );
        }
        if ccode != 0 {
            assert_eq!(vcode, 2, "{p}");
        }
        // And for the classes of this comparison, the same lines exactly.
        let name = path.file_name().unwrap().to_str().unwrap();
        if [
            "field-oslj-clash.ukvs",
            "lone-surrogate.ukvs",
            "bad-utf8-json.ukvs",
            "duplicate-member.ukvs",
            "header-duplicate-member.ukvs",
            "header-lone-surrogate.ukvs",
            "json5-numbers.ukvs",
            "fields-after-data.ukvs",
        ]
        .contains(&name)
        {
            assert_eq!(ccode, 2, "{p}: {cerr}");
            assert_eq!(by_cat, by_validate, "{p}: {vout}{cerr}");
        }
        // No message repeats the line number it is printed after.
        for l in cerr.lines() {
            if let Some(n) = lines_named(l, p).first() {
                assert!(!l.contains(&format!(": line {n}")), "{l}");
            }
        }
    }
}

#[test]
fn mapped_streamed_and_stdin_reads_report_the_same() {
    // The map is the fast path; streaming (`--no-mmap`, stdin) is its
    // naive twin. Same problems, same summary, on every fixture.
    let mut files = Vec::new();
    for dir in ["ukvs", "ukvs-bad"] {
        for e in std::fs::read_dir(util::data_dir().join(dir)).unwrap() {
            files.push(e.unwrap().path());
        }
    }
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("one-byte.ukvs", &b"a"[..]),
        ("no-newline.ukvs", b"b 1\na 2"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        files.push(p);
    }
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "ukvs"))
    {
        let p = f.to_str().unwrap();
        let mapped = util::run(&["validate", p], b"");
        let streamed = util::run(&["validate", "--no-mmap", p], b"");
        assert_eq!(mapped.stdout, streamed.stdout, "{p}");
        assert_eq!(mapped.status.code(), streamed.status.code(), "{p}");
        let stdin = util::run(&["validate", "-"], &std::fs::read(f).unwrap());
        let relabel = String::from_utf8_lossy(&stdin.stdout).replace("-:", &format!("{p}:"));
        assert_eq!(String::from_utf8_lossy(&mapped.stdout), relabel, "{p}");
    }
}

#[test]
fn validate_reads_gzip_and_stdin_and_goes_on_after_a_bad_file() {
    let text = std::fs::read(good("spec-mementomap.ukvs")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("map.ukvs.gz");
    // Two members, as concatenated shards would be.
    let mut bytes = Vec::new();
    let half = text.len() / 2;
    let cut = text[..half].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    for part in [&text[..cut], &text[cut..]] {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut e, part).unwrap();
        bytes.extend(e.finish().unwrap());
    }
    std::fs::write(&gz, &bytes).unwrap();
    let (code, stdout, _) = run(&["validate", gz.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("10 lines (5 headers, 5 records)"),
        "{stdout}"
    );

    let out = util::run(&["validate", "-"], &text);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("-: 10 lines"));

    let missing = dir.path().join("missing.ukvs");
    let ok = good("spec-people.ukvs");
    let (code, stdout, stderr) =
        run(&["validate", missing.to_str().unwrap(), ok.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(stderr.contains("missing.ukvs"), "{stderr}");
    assert!(stdout.contains("spec-people.ukvs: 5 lines"), "{stdout}");
}

#[test]
fn json5_edge_cases_through_cat() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("edge.ukvs");
    std::fs::write(
        &p,
        concat!(
            "!fields {keys: ['k',], values: [\"v\"],}\n",
            "a \"say \\\"hi\\\" \\u00e9\" {nested: {deep: {deeper: [1, 2, {x: 'y'}]}}, 'quoted key': \"\\u263A\", trailing: 1,}\n",
            "b \"-\" {emoji: \"\\ud83d\\ude00\", s: 'it\\'s'}\n",
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = run(&["cat", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        ndjson(&stdout),
        vec![
            json!({"k": "a", "v": "say \"hi\" é", "nested": {"deep": {"deeper": [1, 2, {"x": "y"}]}},
                   "quoted key": "☺", "trailing": 1}),
            json!({"k": "b", "v": "-", "emoji": "😀", "s": "it's"}),
        ]
    );
    let (code, stdout, _) = run(&["cat", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        stdout.lines().nth(1).unwrap(),
        r#"a "say \"hi\" é" {"nested":{"deep":{"deeper":[1,2,{"x":"y"}]}},"quoted key":"☺","trailing":1}"#
    );
}

#[test]
fn unknown_headers_are_kept_and_headers_come_out_in_a_fixed_order() {
    let input = concat!(
        "!meta {type: 'MementoMap'}\n",
        "!x-custom anything at all: not JSON\n",
        "!fields {keys: ['surt'], values: ['frequency']}\n",
        "!context ['https://oduwsdl.github.io/contexts/ukvs']\n",
        "!meta {updated_at: '2026-11-21T00:00:00Z'}\n",
        "com,a)/ 1\n",
    );
    let out = util::run(&["cat", "-"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        concat!(
            "!context [\"https://oduwsdl.github.io/contexts/ukvs\"]\n",
            "!fields {\"keys\":[\"surt\"],\"values\":[\"frequency\"]}\n",
            "!meta {\"type\":\"MementoMap\"}\n",
            "!meta {\"updated_at\":\"2026-11-21T00:00:00Z\"}\n",
            "!x-custom anything at all: not JSON\n",
            "com,a)/ 1\n",
        )
    );
    let v = util::run(&["validate", "-"], input.as_bytes());
    assert_eq!(
        v.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&v.stdout)
    );
}

#[test]
fn index_and_mementomap_outputs_validate_and_match_the_schemas() {
    // The sample index written by `ukvs index` and a MementoMap generated
    // from it: the formats other modules write are the ones checked here.
    let index = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/expected.ukvs");
    if !index.exists() {
        eprintln!("SKIPPED index_and_mementomap_outputs_validate: no samples/expected.ukvs");
        return;
    }
    let (code, stdout, _) = run(&["validate", index.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    let dir = tempfile::tempdir().unwrap();
    let map = dir.path().join("map.ukvs");
    let out = util::run(&["mementomap", "generate", index.to_str().unwrap()], b"");
    util::assert_ok(&out);
    std::fs::write(&map, &out.stdout).unwrap();
    let (code, stdout, _) = run(&["validate", map.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("MementoMap, 0 problems: valid"), "{stdout}");
    assert!(check_file_against_schemas(&map) >= 3);
}

#[test]
fn clash_between_field_and_oslj_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("clash.ukvs");
    std::fs::write(
        &p,
        "!fields {keys: [\"surt\"], values: [\"frequency\"]}\na 1\nb 2 {frequency: 3}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(&["cat", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(stdout.lines().count(), 1, "the good line is still printed");
    assert!(
        stderr.contains(&format!(
            "{}:3: name `frequency` appears both as a field and in the JSON block\n",
            p.display()
        )),
        "{stderr}"
    );
    // validate reports the same line.
    let (code, stdout, _) = run(&["validate", "-q", p.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(
        stdout,
        format!(
            "{}:3: name `frequency` appears both as a field and in the JSON block\n",
            p.display()
        )
    );
}

#[test]
fn cat_converts_classic_cdx_and_cdxj_to_the_same_records() {
    let Some(corpus) = util::shared_corpus("cat_converts_classic_cdx_and_cdxj_to_the_same_records")
    else {
        return;
    };
    let base = corpus.join("webrecorder__pywb/sample_archive");
    let cdx = base.join("cdx/iana.cdx");
    let cdxj = base.join("cdxj/iana.cdxj");
    let (c1, from_cdx, e1) = run(&["cat", cdx.to_str().unwrap()]);
    let (c2, from_cdxj, e2) = run(&["cat", cdxj.to_str().unwrap()]);
    assert_eq!((c1, c2), (0, 0), "{e1}{e2}");
    let records = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with('!'))
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    assert_eq!(records(&from_cdx).len(), 171);
    assert_eq!(records(&from_cdx), records(&from_cdxj));
    assert!(from_cdx.contains("!meta {\"type\":\"CaptureIndex\",\"generator\":\"ukvs 0.1.0\",\"source_format\":\"cdx\",\"cdx_legend\":\"N b a m s k r M S V g\"}\n"));
    assert!(
        records(&from_cdx).contains(&"org,iana)/ 20140126200624 334 sha1:OSSAPWJ23L56IYVRW3GFEAR4MCJMGPTB {\"url\":\"http://www.iana.org/\",\"mime\":\"text/html\",\"status\":200,\"length\":2258,\"filename\":\"iana.warc.gz\"}".to_owned())
    );
    // The converted index validates (byte order included) and its records
    // pass the capture-index schema.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("iana.ukvs");
    assert_eq!(
        run(&["cat", "-o", out.to_str().unwrap(), cdx.to_str().unwrap()]).0,
        0
    );
    let (code, stdout, _) = run(&["validate", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    check_file_against_schemas(&out);

    // Expanded, a CDX line is one object with the capture-index names.
    let (_, json_out, _) = run(&["cat", "--json", cdx.to_str().unwrap()]);
    let first = &ndjson(&json_out)[0];
    assert_eq!(first["surt"], json!("org,iana)/"));
    assert_eq!(first["offset"], json!("334"));
    assert_eq!(first["status"], json!(200));
}

#[test]
fn cat_converts_every_cdx_and_cdxj_of_the_corpus() {
    let Some(corpus) = util::shared_corpus("cat_converts_every_cdx_and_cdxj_of_the_corpus") else {
        return;
    };
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "cdx" || x == "cdxj") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&corpus, &mut files);
    assert!(files.len() >= 40, "{}", files.len());
    let dir = tempfile::tempdir().unwrap();
    let mut sorted_inputs = 0;
    for f in files {
        let name = f.display().to_string();
        let (code, stdout, stderr) = run(&["cat", "--json", &name]);
        assert_eq!(code, 0, "{name}: {stderr}");
        let text = std::fs::read(&f).unwrap();
        let data: Vec<&[u8]> = text
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty() && !l.starts_with(b" CDX") && !l.starts_with(b"!"))
            .collect();
        let rows = ndjson(&stdout);
        assert_eq!(rows.len(), data.len(), "{name}");
        // CDX without its legend line cannot be told apart from headerless
        // UKVS, and is read as such (`key`, `value1`, ...).
        let converted = text.starts_with(b" CDX") || name.ends_with(".cdxj");
        for r in &rows {
            let named = if converted { "surt" } else { "key" };
            assert!(r.get(named).is_some(), "{name}: {r}");
        }
        // A byte-sorted input must give a byte-sorted, valid UKVS file.
        if data.windows(2).all(|w| w[0] <= w[1]) {
            sorted_inputs += 1;
            let out = dir.path().join("out.ukvs");
            let (code, _, stderr) = run(&["cat", "-o", out.to_str().unwrap(), &name]);
            assert_eq!(code, 0, "{name}: {stderr}");
            let (code, stdout, _) = run(&["validate", out.to_str().unwrap()]);
            assert_eq!(code, 0, "{name}: {stdout}");
            check_file_against_schemas(&out);
        }
    }
    assert!(sorted_inputs >= 20, "{sorted_inputs}");
}

#[test]
fn cat_keeps_sorted_cdx_sorted_when_captures_tie() {
    // Same surt and datetime: CDX orders the tie by URL, UKVS by offset,
    // so the group must be re-sorted on the way out.
    let cdx = concat!(
        " CDX N b a m s k r M S V g\n",
        "- 20081119011153 filedesc://x.arc arc/filedesc0.1.0 - MJ4Q - - 10 0 x.arc\n",
        "com,example)/ 20140101000000 http://example.com/ text/html 200 AAAA - - 10 900 x.arc\n",
        "com,example)/ 20140101000000 http://www.example.com/ text/html 200 BBBB - - 10 100 x.arc\n",
        "com,example)/a 20140101000000 http://example.com/a text/html 404 - - - 10 50 x.arc\n",
    );
    let out = util::run(&["cat", "-"], cdx.as_bytes());
    util::assert_ok(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    let records: Vec<&str> = text.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(
        records,
        vec![
            r#"- 20081119011153 0 sha1:MJ4Q {"url":"filedesc://x.arc","mime":"arc/filedesc0.1.0","length":10,"filename":"x.arc"}"#,
            r#"com,example)/ 20140101000000 100 sha1:BBBB {"url":"http://www.example.com/","mime":"text/html","status":200,"length":10,"filename":"x.arc"}"#,
            r#"com,example)/ 20140101000000 900 sha1:AAAA {"url":"http://example.com/","mime":"text/html","status":200,"length":10,"filename":"x.arc"}"#,
            r#"com,example)/a 20140101000000 50 - {"url":"http://example.com/a","mime":"text/html","status":404,"length":10,"filename":"x.arc"}"#,
        ]
    );
    let valid = util::run(&["validate", "-"], text.as_bytes());
    assert_eq!(
        valid.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&valid.stdout)
    );
}

#[test]
fn cat_stdin_and_several_files() {
    let a = std::fs::read(good("spec-frequency-forms.ukvs")).unwrap();
    let out = util::run(&["cat", "-"], &a);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("!fields {\"keys\":[\"surt\"],\"values\":[\"frequency\"]}\n!meta {\"type\":\"MementoMap\"}\ncom,apple)/* 300\n"));

    // Same `!fields`: headers of the first file, records of both.
    let f1 = good("spec-frequency-forms.ukvs");
    let f2 = good("spec-zero-override.ukvs");
    let (code, stdout, _) = run(&["cat", f1.to_str().unwrap(), f2.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(stdout.lines().filter(|l| l.starts_with('!')).count(), 2);
    assert_eq!(stdout.lines().count(), 2 + 7 + 3);

    // Different `!fields`: the second file is refused.
    let f3 = good("spec-people.ukvs");
    let (code, stdout, stderr) = run(&["cat", f1.to_str().unwrap(), f3.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("spec-people.ukvs: skipped: its `!fields` differ"),
        "{stderr}"
    );
    assert_eq!(stdout.lines().count(), 2 + 7);
}

// ---------------------------------------------------------------------
// Round trips.

/// Field values that exercise quoting: spaces, quotes, backslashes,
/// control bytes, leading `{`/`!`/`"`, the literal `-`, empty, non-UTF-8.
fn field_value() -> impl Strategy<Value = Option<Vec<u8>>> {
    let interesting = prop_oneof![
        Just(b"-".to_vec()),
        Just(Vec::new()),
        Just(b"{x}".to_vec()),
        Just(b"!bang".to_vec()),
        Just(b"\"q".to_vec()),
        Just(b"a b".to_vec()),
        Just(b"\\".to_vec()),
        Just(vec![0xff, 0xfe]),
        Just("é ☺".as_bytes().to_vec()),
    ];
    prop_oneof![
        1 => Just(None),
        3 => interesting.prop_map(Some),
        6 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |&b| b != b'\n'), 0..12).prop_map(Some),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[ -~é\"\\\\\u{263a}\u{1f600}\n\t]{0,8}".prop_map(Value::from),
    ]
}

fn json_object() -> impl Strategy<Value = Value> {
    let value = json_leaf().prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z\"' ]{1,5}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    });
    proptest::collection::btree_map("[a-z_\"' ]{1,6}", value, 1..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Writes `v` in JSON5 style; the bits of `style` pick, element by element,
/// between the forms JSON5 allows.
fn write_json5(v: &Value, style: u64, out: &mut String) {
    let pick = |salt: usize| style.rotate_left((salt % 64) as u32) & 1 == 1;
    let string = |s: &str, salt: usize, out: &mut String| {
        let q = if pick(salt) { '\'' } else { '"' };
        out.push(q);
        for (i, c) in s.chars().enumerate() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                c if c == q => {
                    out.push('\\');
                    out.push(c);
                }
                // Some non-ASCII characters as `\u` escapes (a surrogate
                // pair above the BMP).
                c if !c.is_ascii() && pick(salt + i + 7) => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push(q);
    };
    match v {
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                let ident = k.chars().all(|c| c.is_ascii_lowercase() || c == '_') && !k.is_empty();
                if ident && pick(i + 3) {
                    out.push_str(k);
                } else {
                    string(k, i + 5, out);
                }
                out.push_str(if pick(i + 11) { ": " } else { ":" });
                write_json5(x, style.rotate_left(7 + i as u32), out);
                if i + 1 < m.len() || pick(i + 13) {
                    out.push(',');
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                write_json5(x, style.rotate_left(3 + i as u32), out);
                if i + 1 < a.len() || pick(i + 17) {
                    out.push(',');
                }
            }
            out.push(']');
        }
        Value::String(s) => string(s, 19, out),
        other => out.push_str(&other.to_string()),
    }
}

/// An OSLJ made of pieces that exercise every JSON class `validate` must
/// judge as expansion does: member names equal to field names (also as
/// `\u` escapes), repeated names at any depth, lone surrogates, bytes that
/// are not UTF-8, JSON5 forms with `Infinity`/`NaN`, numbers beyond 64 bits.
fn tricky_oslj() -> impl Strategy<Value = Vec<u8>> {
    let name = prop_oneof![
        Just(&b"a"[..]),
        Just(&b"b"[..]),
        Just(&b"key"[..]),
        Just(&b"value1"[..]),
        Just(&b"value2"[..]),
        Just(&b"surt"[..]),
        Just(&b"x"[..]),
        Just(&b"\\u0061"[..]),
        Just(&b"\\u0078"[..]),
    ];
    let value = prop_oneof![
        Just(&b"1"[..]),
        Just(&b"null"[..]),
        Just(&b"\"s\""[..]),
        Just(&b"\"\\ud800\""[..]),
        Just(&b"\"\\udc00x\""[..]),
        Just(&b"\"\\ud83d\\ude00\""[..]),
        Just("\"é\"".as_bytes()),
        Just(&b"\"\xff\""[..]),
        Just(&b"Infinity"[..]),
        Just(&b"-Infinity"[..]),
        Just(&b"NaN"[..]),
        Just(&b"1e400"[..]),
        Just(&b"123456789012345678901234567890"[..]),
        Just(&b"{\"a\":1,\"a\":2}"[..]),
        Just(&b"{\"a\":{\"a\":1}}"[..]),
        Just(&b"[{\"k\":1},{\"k\":2},{\"k\":1,\"j\":1}]"[..]),
        Just(&b"[{\"k\":1,\"k\":1}]"[..]),
    ];
    (
        proptest::collection::vec((name, value, any::<bool>()), 0..4),
        any::<bool>(),
    )
        .prop_map(|(members, trailing)| {
            let mut out = b"{".to_vec();
            for (i, (n, v, bare)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                // A bare (JSON5) name where it is an identifier.
                if *bare && n.iter().all(u8::is_ascii_alphanumeric) {
                    out.extend_from_slice(n);
                } else {
                    out.push(b'"');
                    out.extend_from_slice(n);
                    out.push(b'"');
                }
                out.push(b':');
                out.extend_from_slice(v);
            }
            if trailing && !members.is_empty() {
                out.push(b',');
            }
            out.push(b'}');
            out
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// `validate` reports a problem on every line expansion refuses, and
    /// a JSON or clash problem only on lines expansion refuses.
    #[test]
    fn validate_judges_json_as_expansion_does(
        fields in proptest::collection::vec(prop_oneof![Just("a"), Just("-"), Just("\"b c\"")], 1..4),
        oslj in tricky_oslj(),
        declared in any::<bool>(),
    ) {
        let mut line = fields.join(" ").into_bytes();
        line.push(b' ');
        line.extend_from_slice(&oslj);
        let mut v = Validator::new();
        let schema = if declared {
            let header: &[u8] = br#"!fields {"keys":["surt"],"values":["a","b"]}"#;
            prop_assert!(v.line(header).is_empty());
            Schema::new(["surt"], ["a", "b"])
        } else {
            Schema::undeclared()
        };
        let problems = v.line(&line).to_vec();
        let Line::Data(record) = classify(&line) else {
            return Err(TestCaseError::fail("not a data line"));
        };
        let expanded = ukvs::ukvs::expand(&record, &schema, 2);
        let text = String::from_utf8_lossy(&line);
        if let Err(e) = &expanded {
            prop_assert!(!problems.is_empty(), "{}: expand says {}, validate nothing", text, e);
        }
        let json_problem = problems.iter().any(|p| {
            matches!(p.kind, ProblemKind::Json { .. } | ProblemKind::Clash { .. })
        });
        if json_problem {
            prop_assert!(expanded.is_err(), "{}: validate says {:?}, expand nothing", text, problems);
        }
        // What expands is what `cat` writes back, numbers digit for digit.
        if let Ok(obj) = expanded {
            if oslj.windows(30).any(|w| w == b"123456789012345678901234567890") {
                let back = serde_json::to_string(&obj).unwrap();
                prop_assert!(back.contains("123456789012345678901234567890"), "{}", back);
            }
        }
    }

    /// write -> read -> write gives identical bytes, and reading gives back
    /// the values written.
    #[test]
    fn records_round_trip(
        fields in proptest::collection::vec(field_value(), 1..6),
        oslj in proptest::option::of(json_object()),
    ) {
        let refs: Vec<Option<&[u8]>> = fields.iter().map(|f| f.as_deref()).collect();
        let mut line = Vec::new();
        format_record(&mut line, &refs, oslj.as_ref());
        prop_assert!(!line.contains(&b'\n'));
        let Line::Data(record) = classify(&line) else {
            return Err(TestCaseError::fail(format!("not a data line: {line:?}")));
        };
        let mut read_fields = Vec::new();
        let mut read_oslj = None;
        for t in record.tokens() {
            match t {
                Ok(Token::Field(f)) => read_fields.push(f.value().map(|v| v.into_owned())),
                Ok(Token::Json(j)) => read_oslj = Some(parse_json5(j).unwrap()),
                Err(e) => return Err(TestCaseError::fail(format!("{e:?} in {line:?}"))),
            }
        }
        prop_assert_eq!(&read_fields, &fields);
        prop_assert_eq!(&read_oslj, &oslj);
        let refs2: Vec<Option<&[u8]>> = read_fields.iter().map(|f| f.as_deref()).collect();
        let mut again = Vec::new();
        format_record(&mut again, &refs2, read_oslj.as_ref());
        prop_assert_eq!(again, line);
    }

    /// Sorted records written through the checked writer validate with no
    /// problem; any out-of-order pair is refused by the writer and flagged
    /// by the validator on the same line.
    #[test]
    fn writer_output_validates(
        mut rows in proptest::collection::vec((proptest::collection::vec(any::<u8>(), 1..6), field_value()), 1..20),
        shuffle in any::<bool>(),
    ) {
        let mut lines: Vec<Vec<u8>> = rows.drain(..).map(|(k, v)| {
            let mut l = Vec::new();
            // Keys are plain tokens here: no spaces, newlines or leading
            // quote/brace/bang, so key order = line order.
            let k: Vec<u8> = k.into_iter().map(|b| if b <= b' ' || b == b'"' || b == b'{' || b == b'!' || b == b'\\' || b == 0x7f { b'k' } else { b }).collect();
            format_record(&mut l, &[Some(&k), v.as_deref()], None);
            l
        }).collect();
        if !shuffle {
            lines.sort();
        }
        let mut w = Writer::new(Vec::new());
        w.header("fields", &json!({"keys": ["k"], "values": ["v"]})).unwrap();
        let mut refused_at = None;
        for (i, l) in lines.iter().enumerate() {
            if let Err(e) = w.write_line(l) {
                let named_line = matches!(e, ukvs::ukvs::Error::OutOfOrder { line, .. } if line == i as u64 + 2);
                prop_assert!(named_line, "{}", e);
                refused_at = Some(i);
                break;
            }
        }
        let out = w.finish().unwrap();
        let mut v = Validator::new();
        let mut problems = Vec::new();
        for l in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            problems.extend(v.line(l).iter().cloned());
        }
        prop_assert!(problems.is_empty(), "{problems:?}");
        if let Some(i) = refused_at {
            // The validator fed the full sequence flags the same line.
            let mut v = Validator::new();
            v.line(b"!fields {\"keys\":[\"k\"],\"values\":[\"v\"]}");
            let mut first = None;
            for l in &lines {
                if let Some(p) = v.line(l).first() {
                    first.get_or_insert(p.line);
                }
            }
            prop_assert_eq!(first, Some(i as u64 + 2));
        }
    }

    /// Any JSON object written in JSON5 style (unquoted identifier keys,
    /// single-quoted strings, `\u` escapes, trailing commas) reads back
    /// as the same value, and is written back as compact strict JSON.
    #[test]
    fn json5_forms_read_back(v in json_object(), style in any::<u64>()) {
        let mut text = String::new();
        write_json5(&v, style, &mut text);
        let back = parse_json5(text.as_bytes()).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&back, &v, "{}", text);
        prop_assert_eq!(ukvs::ukvs::to_compact(&back), serde_json::to_string(&v).unwrap());
    }

    /// The tokenizer never panics and never reads past the line.
    #[test]
    fn tokenizer_total(line in proptest::collection::vec(any::<u8>(), 0..64)) {
        let r = Record::new(&line);
        for t in r.tokens() {
            if let Ok(Token::Field(Field::Plain(b) | Field::Quoted(b))) = t {
                prop_assert!(b.len() <= line.len());
            }
        }
        let mut v = Validator::new();
        let _ = v.line(&line);
        let _ = ukvs::ukvs::expand(&r, &Schema::undeclared(), 1);
    }
}

// ---------------------------------------------------------------------
// JSON Schemas.

fn schema(name: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["$schema"],
        json!("https://json-schema.org/draft/2020-12/schema"),
        "{name}"
    );
    jsonschema::draft202012::new(&v).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn assert_valid(v: &jsonschema::Validator, instance: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{what}: {instance} -> {errors:?}");
}

/// Checks the headers and OSLJ blocks of one valid UKVS file against the
/// schemas: `!fields`, `!meta`, `!id`, `!context` always; OSLJ blocks of
/// capture indexes and MementoMaps by their own schema.
fn check_file_against_schemas(path: &Path) -> usize {
    let fields_s = schema("fields.schema.json");
    let meta_s = schema("meta.schema.json");
    let id_s = schema("id.schema.json");
    let context_s = schema("context.schema.json");
    let capture_s = schema("capture-oslj.schema.json");
    let map_s = schema("mementomap-oslj.schema.json");
    let text = std::fs::read(path).unwrap();
    let what = path.display().to_string();
    let mut headers = ukvs::ukvs::Headers::default();
    let mut checked = 0;
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        match classify(line) {
            Line::Header(h) => {
                let v = h.json().unwrap_or_else(|e| panic!("{what}:{}: {e}", i + 1));
                let s = match h.name {
                    b"fields" => &fields_s,
                    b"meta" => &meta_s,
                    b"id" => &id_s,
                    b"context" => &context_s,
                    _ => continue,
                };
                assert_valid(s, &v, &format!("{what}:{}", i + 1));
                headers.add(&h, i as u64 + 1).unwrap();
                checked += 1;
            }
            Line::Data(r) => {
                let Some(Ok(Token::Json(j))) = r.tokens().last() else {
                    continue;
                };
                let v = parse_json5(j).unwrap();
                let s = if headers.is_mementomap() {
                    &map_s
                } else if headers.meta_type() == Some("CaptureIndex")
                    || headers
                        .fields
                        .as_ref()
                        .is_some_and(|f| f.keys == ["surt", "datetime"])
                {
                    &capture_s
                } else {
                    continue;
                };
                assert_valid(s, &v, &format!("{what}:{}", i + 1));
                checked += 1;
            }
            Line::Blank => {}
        }
    }
    checked
}

fn ukvs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            // Malformed fixtures live in `*-bad` directories.
            if !p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with("-bad"))
            {
                ukvs_files(&p, out);
            }
        } else if p.extension().is_some_and(|x| x == "ukvs") {
            out.push(p);
        }
    }
}

#[test]
fn every_sample_and_fixture_matches_the_schemas() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    ukvs_files(&root.join("samples"), &mut files);
    ukvs_files(&root.join("tests").join("data"), &mut files);
    assert!(files.len() >= 9, "{files:?}");
    let mut checked = 0;
    for f in &files {
        checked += check_file_against_schemas(f);
    }
    assert!(checked >= 25, "only {checked} header/OSLJ checks");
}

#[test]
fn schemas_reject_what_they_should() {
    let capture = schema("capture-oslj.schema.json");
    assert!(capture.is_valid(&json!({"url": "http://a/", "status": 200, "length": 5})));
    assert!(!capture.is_valid(&json!({"url": "http://a/", "status": "200"})));
    assert!(!capture.is_valid(&json!({"status": 200, "length": -1})));
    assert!(!capture.is_valid(&json!({"datetime_raw": 5})));
    let map = schema("mementomap-oslj.schema.json");
    assert!(map.is_valid(&json!({"datetime": {"2014": "20~/10", ":2009": "/", "201603:": "0/20"}})));
    assert!(!map.is_valid(&json!({"datetime": {"2014": "20x"}})));
    assert!(!map.is_valid(&json!({"datetime": {"20y4": "1"}})));
    let fields = schema("fields.schema.json");
    assert!(fields.is_valid(&json!({"keys": ["surt"], "values": ["frequency"]})));
    assert!(!fields.is_valid(&json!({"keys": [], "values": []})));
    assert!(!fields.is_valid(&json!({"values": ["a"]})));
    let meta = schema("meta.schema.json");
    assert!(meta.is_valid(
        &json!({"type": "MementoMap", "name": "x", "updated_at": "2018-09-03T13:27:52Z"})
    ));
    assert!(!meta.is_valid(&json!({"type": 3})));
    assert!(!meta.is_valid(&json!([1])));
    // The context document is JSON-LD with an @context object that defines
    // every term our headers and OSLJ use.
    let ctx: Value = serde_json::from_str(
        &std::fs::read_to_string(root_path("schemas/context.jsonld")).unwrap(),
    )
    .unwrap();
    let terms = ctx["@context"].as_object().unwrap();
    for term in [
        "surt",
        "datetime",
        "offset",
        "digest",
        "url",
        "mime",
        "status",
        "length",
        "filename",
        "redirect",
        "ip",
        "record_type",
        "datetime_raw",
        "frequency",
        "keys",
        "values",
        "type",
        "generator",
        "name",
        "updated_at",
        "uri",
        "CaptureIndex",
        "MementoMap",
        "source_format",
        "cdx_legend",
        "robotflags",
    ] {
        assert!(terms.contains_key(term), "context lacks {term}");
    }
}

fn root_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn cat_reads_cdxj_that_starts_with_a_meta_line() {
    let fixture = util::data_dir().join("cdxj/cdxj-indexer-compressed.cdxj");
    let want = concat!(
        "!context [\"https://oduwsdl.github.io/contexts/ukvs\"]\n",
        "!fields {\"keys\":[\"surt\",\"datetime\"],\"values\":[\"offset\",\"digest\"]}\n",
        "!meta {\"type\":\"CaptureIndex\",\"generator\":\"ukvs 0.1.0\",\"source_format\":\"cdxj\",",
        "\"source_meta\":[{\"format\":\"cdxj-gzip-1.0\",\"filename\":\"data.cdxj.gz\"}]}\n",
        "com,example)/ 20170306040206 0 - {\"length\":191}\n",
        "com,example)/ 20170306040348 191 - {\"length\":189}\n",
        "org,commoncrawl)/ 20170722005011 380 - {\"length\":190}\n",
        "org,commoncrawl)/ 20170722005011 570 - {\"length\":20}\n",
    );
    let (code, stdout, stderr) = run(&["cat", fixture.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout, want);
    let (code, stdout, stderr) = run(&["cat", "--from", "cdxj", fixture.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (0, want), "{stderr}");
    // The result validates and its headers pass the schemas.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("idx.ukvs");
    std::fs::write(&out, want).unwrap();
    let (code, stdout, _) = run(&["validate", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{stdout}");
    assert!(check_file_against_schemas(&out) >= 7);
    // Expanded, the records carry the capture-index names.
    let (_, json_out, _) = run(&["cat", "--json", fixture.to_str().unwrap()]);
    assert_eq!(
        ndjson(&json_out)[1],
        json!({"surt": "com,example)/", "datetime": "20170306040348", "offset": "191",
               "digest": null, "length": 189})
    );
    // Another `!` line in a CDXJ file is reported, not taken for data.
    let odd = dir.path().join("odd.cdxj");
    let text = std::fs::read_to_string(&fixture).unwrap();
    std::fs::write(&odd, text.replacen("\ncom,", "\n!other x\ncom,", 1)).unwrap();
    let (code, stdout, stderr) = run(&["cat", odd.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        format!(
            "{}:2: `!other` in a CDXJ file is not a `!meta <n> {{...}}` line; skipped\n",
            odd.display()
        )
    );
    assert_eq!(stdout, want);

    // Made again by cdxj-indexer itself, when it is installed.
    let test = "cat_reads_cdxj_that_starts_with_a_meta_line";
    let Some(corpus) = util::shared_corpus(test) else {
        return;
    };
    if !util::has_python_module("cdxj_indexer", test) {
        return;
    }
    let data = corpus.join("webrecorder__cdxj-indexer/test/data");
    let indexer = std::process::Command::new("python3")
        .current_dir(dir.path())
        .args([
            "-m",
            "cdxj_indexer.main",
            "-c",
            "data.cdxj.gz",
            "-l",
            "1",
            "-o",
            "made.cdxj",
        ])
        .arg(data.join("example.warc.gz"))
        .arg(data.join("cc.warc.gz"))
        .output()
        .unwrap();
    assert!(
        indexer.status.success(),
        "cdxj-indexer failed: {}",
        String::from_utf8_lossy(&indexer.stderr)
    );
    let made = dir.path().join("made.cdxj");
    assert_eq!(std::fs::read_to_string(&made).unwrap(), text);
    let (code, stdout, stderr) = run(&["cat", made.to_str().unwrap()]);
    assert_eq!((code, stdout.as_str()), (0, want), "{stderr}");
}

#[test]
fn cat_refuses_an_unusable_cdx_legend_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    for (legend, why) in [
        (" CDX N b a m s a g", "letter `a` (url) appears twice"),
        (" CDX N b a m s k bb", "`bb` is not one letter"),
        (
            " CDX m a s k",
            "no key column: neither N (massaged url), A (canonized url) nor a URL (a) first",
        ),
        (" CDX N a m s k", "no date column: no b"),
    ] {
        let p = dir.path().join("bad.cdx");
        std::fs::write(&p, format!("{legend}\ncom,a)/ 20140101000000 x y z w\n")).unwrap();
        let p = p.to_str().unwrap();
        let (code, stdout, stderr) = run(&["cat", p]);
        assert_eq!(code, 2, "{legend}");
        assert_eq!(stdout, "", "{legend}");
        assert_eq!(
            stderr,
            format!(
                "{p}:1: cannot convert: bad CDX legend: {why}\n{p}: skipped: its CDX legend cannot be used\n"
            )
        );
    }
    // The next file is still read.
    let good = dir.path().join("good.cdx");
    std::fs::write(&good, " CDX N b a\ncom,a)/ 20140101000000 http://a/\n").unwrap();
    let bad = dir.path().join("bad.cdx");
    let (code, stdout, _) = run(&["cat", bad.to_str().unwrap(), good.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(
        stdout.ends_with("com,a)/ 20140101000000 - - {\"url\":\"http://a/\"}\n"),
        "{stdout}"
    );
}

#[test]
fn cat_keeps_big_numbers_and_reads_null_as_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let ukvs = dir.path().join("big.ukvs");
    std::fs::write(
        &ukvs,
        "!fields {keys: ['k'], values: ['v']}\na x {\"n\":123456789012345678901234567890,\"m\":-18446744073709551617,\"f\":-0.10}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(&["cat", ukvs.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        stdout.lines().nth(1).unwrap(),
        r#"a x {"n":123456789012345678901234567890,"m":-18446744073709551617,"f":-0.10}"#
    );
    let (_, json_out, _) = run(&["cat", "--json", ukvs.to_str().unwrap()]);
    assert_eq!(
        json_out,
        "{\"k\":\"a\",\"v\":\"x\",\"n\":123456789012345678901234567890,\"m\":-18446744073709551617,\"f\":-0.10}\n"
    );

    let cdxj = dir.path().join("big.cdxj");
    std::fs::write(
        &cdxj,
        concat!(
            "com,a)/ 20140101000000 {\"offset\": 123456789012345678901234567890, \"digest\": null, \"length\": \"99999999999999999999999\", \"status\": null}\n",
            "com,b)/ 20140101000000 {\"offset\": null, \"digest\": \"-\", \"mime\": \"text/html\"}\n",
            "com,c)/ 20140101000000 {offset: Infinity}\n",
        ),
    )
    .unwrap();
    let (code, stdout, stderr) = run(&["cat", cdxj.to_str().unwrap()]);
    assert_eq!(code, 2);
    let records: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('!')).collect();
    assert_eq!(
        records,
        [
            r#"com,a)/ 20140101000000 123456789012345678901234567890 - {"length":99999999999999999999999}"#,
            r#"com,b)/ 20140101000000 - - {"mime":"text/html"}"#,
        ]
    );
    assert_eq!(
        stderr,
        format!(
            "{}:3: invalid JSON: at column 10 of the JSON: Infinity has no strict JSON form (write it as a string or leave it out)\n",
            cdxj.display()
        )
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A whole file (headers of every kind, records of a random schema,
    /// OSLJ blocks) written by the writer reads back through the header
    /// block and the tokenizer, is written again to identical bytes, and
    /// validates without a problem.
    #[test]
    fn whole_files_round_trip(
        context in proptest::option::of(Just(json!(["https://oduwsdl.github.io/contexts/ukvs"]))),
        id in proptest::option::of("[a-z:/.]{1,20}".prop_map(|u| json!({"uri": u}))),
        metas in proptest::collection::vec(json_object(), 0..3),
        (nkeys, nvalues) in (1usize..3, 0usize..3),
        rows in proptest::collection::vec(
            (proptest::collection::vec(field_value(), 5), proptest::option::of(json_object())),
            0..12,
        ),
        other in proptest::option::of("[a-z0-9 {}:]{0,12}"),
    ) {
        let keys: Vec<String> = (0..nkeys).map(|i| format!("k{i}")).collect();
        let values: Vec<String> = (0..nvalues).map(|i| format!("v{i}")).collect();
        let mut w = Writer::new(Vec::new());
        if let Some(c) = &context {
            w.header("context", c).unwrap();
        }
        if let Some(i) = &id {
            w.header("id", i).unwrap();
        }
        w.header("fields", &json!({"keys": keys, "values": values})).unwrap();
        for m in &metas {
            w.header("meta", m).unwrap();
        }
        if let Some(o) = &other {
            // Readers trim the spaces around a header value.
            let mut line = b"!x-other".to_vec();
            if !o.trim().is_empty() {
                line.push(b' ');
                line.extend_from_slice(o.trim().as_bytes());
            }
            w.raw_header(&line).unwrap();
        }
        // Records in byte order, as a sorted index has them.
        let mut lines: Vec<Vec<u8>> = rows
            .iter()
            .map(|(fields, oslj)| {
                let refs: Vec<Option<&[u8]>> =
                    fields[..nkeys + nvalues].iter().map(|f| f.as_deref()).collect();
                let mut l = Vec::new();
                format_record(&mut l, &refs, oslj.as_ref());
                l
            })
            .collect();
        lines.sort();
        for l in &lines {
            w.write_line(l).unwrap();
        }
        let first = w.finish().unwrap();

        // Read: the header block, then every record through the tokenizer.
        let (headers, at) = ukvs::ukvs::Headers::read_block(&first).unwrap();
        prop_assert_eq!(headers.schema(), Schema::new(keys.clone(), values.clone()));
        let mut again = Writer::new(Vec::new());
        for h in headers.lines() {
            again.raw_header(&h).unwrap();
        }
        for line in first[at..].split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let Line::Data(r) = classify(line) else {
                return Err(TestCaseError::fail("not a data line"));
            };
            let mut fields = Vec::new();
            let mut oslj = None;
            for t in r.tokens() {
                match t.unwrap() {
                    Token::Field(f) => fields.push(f.value().map(|v| v.into_owned())),
                    Token::Json(j) => oslj = Some(parse_json5(j).unwrap()),
                }
            }
            prop_assert_eq!(fields.len(), nkeys + nvalues);
            let refs: Vec<Option<&[u8]>> = fields.iter().map(|f| f.as_deref()).collect();
            again.write_record(&refs, oslj.as_ref()).unwrap();
        }
        let second = again.finish().unwrap();
        prop_assert_eq!(
            String::from_utf8_lossy(&second),
            String::from_utf8_lossy(&first)
        );
        prop_assert_eq!(second, first.clone());

        let mut v = Validator::new();
        let mut problems = Vec::new();
        for l in first.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            problems.extend(v.line(l).iter().map(|p| p.to_string()));
        }
        prop_assert!(problems.is_empty(), "{:?}\n{}", problems, String::from_utf8_lossy(&first));
    }
}

/// The JSON Schemas and `validate` agree on the fixtures: a `!fields` or
/// `!meta` value the schema refuses is a problem `validate` reports on that
/// line, and the MementoMap breakdowns `validate` refuses are refused by
/// the MementoMap OSLJ schema.
#[test]
fn schemas_and_validate_agree_on_the_fixtures() {
    let fields_s = schema("fields.schema.json");
    let meta_s = schema("meta.schema.json");
    let map_s = schema("mementomap-oslj.schema.json");
    let mut files = Vec::new();
    for dir in ["ukvs", "ukvs-bad"] {
        for e in std::fs::read_dir(util::data_dir().join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "ukvs") {
                files.push(p);
            }
        }
    }
    let mut refused_headers = 0;
    let mut refused_oslj = 0;
    for f in &files {
        let text = std::fs::read(f).unwrap();
        let mut v = Validator::new();
        let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        if text.ends_with(b"\n") {
            lines.pop();
        }
        for (i, &line) in lines.iter().enumerate() {
            let problems: Vec<String> = v.line(line).iter().map(|p| p.to_string()).collect();
            let what = format!("{}:{}", f.display(), i + 1);
            match classify(line) {
                Line::Header(h) => {
                    let s = match h.name {
                        b"fields" => &fields_s,
                        b"meta" => &meta_s,
                        _ => continue,
                    };
                    let Ok(value) = h.json() else { continue };
                    if !s.is_valid(&value) {
                        refused_headers += 1;
                        assert!(
                            !problems.is_empty(),
                            "{what}: schema refuses {value}, validate does not"
                        );
                    }
                }
                Line::Data(r) => {
                    let flags_oslj = problems
                        .iter()
                        .any(|p| p.contains("bad frequency") || p.contains("bad datetime key"));
                    let Some(Ok(Token::Json(j))) = r.tokens().last() else {
                        continue;
                    };
                    let Ok(value) = parse_json5(j) else { continue };
                    if v.headers().is_mementomap() && flags_oslj {
                        refused_oslj += 1;
                        assert!(
                            !map_s.is_valid(&value),
                            "{what}: validate refuses {value}, the schema does not"
                        );
                    }
                }
                Line::Blank => {}
            }
        }
    }
    assert!(refused_headers >= 2, "{refused_headers}");
    assert!(refused_oslj >= 2, "{refused_oslj}");
}

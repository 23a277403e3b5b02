//! ARC files as real archives have them: NetarchiveSuite metadata ARCs
//! (records of length 0, a second filedesc), a filedesc whose declared
//! length runs into the next header, and ARCs gzipped as one stream, read
//! through `ukvs index`, mapped and streamed.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::index::{cdxj_indexer_run, lines, show, stdout_of};
use crate::util;

const METADATA_ARC: &str = "netarchivesuite__netarchivesuite/harvester/harvester-test/tests/dk/netarkivet/harvester/indexserver/data/originals/arcfiles/30-metadata-4.arc";
const FYENSDK_ARC: &str = "netarchivesuite__netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/fyensdk.arc";

/// Base32 SHA-1 of no bytes.
const SHA1_OF_NOTHING: &str = "3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ";

/// A record found by walking a well-formed plain ARC: header line, declared
/// length, one LF after the block.
struct Walked {
    offset: u64,
    /// Header line without its LF.
    line: String,
    declared: u64,
}

/// The records of a well-formed plain ARC (every block followed by one LF,
/// or by the end of the file), the naive way.
fn walk(data: &[u8]) -> Vec<Walked> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let nl = at + data[at..].iter().position(|&b| b == b'\n').unwrap();
        let line = String::from_utf8_lossy(&data[at..nl]).into_owned();
        let declared: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        out.push(Walked {
            offset: at as u64,
            line,
            declared,
        });
        at = nl + 1 + declared as usize;
        while data.get(at) == Some(&b'\n') {
            at += 1;
        }
    }
    out
}

/// `ukvs index -q ARGS... FILE`: (lines sorted, stderr, exit code).
fn index(args: &[&str], file: &Path) -> (Vec<Vec<u8>>, String, i32) {
    let mut all = vec!["index", "-q"];
    all.extend_from_slice(args);
    all.push(file.to_str().unwrap());
    let (out, err, code) = stdout_of(&all);
    (lines(&out), err, code)
}

/// The same, mapped and read (`--no-mmap`), which must agree.
fn index_both(args: &[&str], file: &Path) -> (Vec<Vec<u8>>, String, i32) {
    let mapped = index(args, file);
    let mut read_args = args.to_vec();
    read_args.push("--no-mmap");
    let read = index(&read_args, file);
    assert_eq!(
        (&mapped.0, mapped.2),
        (&read.0, read.2),
        "{}: mapped and read differ",
        file.display()
    );
    mapped
}

/// Field `i` of a space-separated line.
fn field(line: &[u8], i: usize) -> String {
    String::from_utf8_lossy(line)
        .split(' ')
        .nth(i)
        .unwrap_or("")
        .to_string()
}

/// NetarchiveSuite's metadata ARC declares length 0 for empty logs:
/// CDX-Writer gives such a record no content type (`unk`), no status, the
/// SHA-1 of nothing, and the offset and length of its header line.
#[test]
fn cdx11_records_of_length_zero_in_a_metadata_arc() {
    let Some(corpus) = util::shared_corpus("cdx11_records_of_length_zero_in_a_metadata_arc") else {
        return;
    };
    let path = corpus.join(METADATA_ARC);
    let data = std::fs::read(&path).unwrap();
    let walked = walk(&data);
    assert_eq!(walked.len(), 30);
    let (out, err, code) = index_both(&["--format", "cdx11", "--all-records"], &path);
    assert_eq!(code, 0, "{err}");
    let mut zero = 0;
    for w in &walked {
        // The line of this record: its offset (V) is unique in the file.
        let found: Vec<_> = out
            .iter()
            .filter(|l| field(l, 9) == w.offset.to_string())
            .collect();
        assert_eq!(found.len(), 1, "offset {}: {}", w.offset, show(&out));
        let l = found[0];
        let length = w.line.len() as u64 + 1 + w.declared;
        assert_eq!(field(l, 8), length.to_string(), "S of {}", w.line);
        let header_mime = w.line.rsplit(' ').nth(1).unwrap();
        let m = field(l, 3);
        if w.line.starts_with("filedesc:") {
            assert_eq!(m, "warc/filedesc");
        } else if w.declared == 0 {
            zero += 1;
            assert_eq!(header_mime, "text/plain");
            assert_eq!(
                [m, field(l, 4), field(l, 5), field(l, 6), field(l, 7)],
                ["unk", "-", SHA1_OF_NOTHING, "-", "-"],
                "{}",
                w.line
            );
        } else {
            assert_eq!(m, header_mime, "{}", w.line);
        }
    }
    assert_eq!(zero, 3, "empty logs of the metadata ARC");
    // The default record set keeps them (they are no DNS records) and
    // leaves out the two filedesc records.
    let (default, _, _) = index(&["--format", "cdx11"], &path);
    assert_eq!(default.len(), out.len() - 2);
    assert_eq!(
        default.iter().filter(|l| field(l, 3) == "unk").count(),
        zero
    );
}

/// A copy of `data` whose first (filedesc) record declares `over` bytes
/// more than reach the next header line, so that its block ends `over`
/// bytes into that line; the header line keeps its length.
fn filedesc_running_over(data: &[u8], over: u64) -> Vec<u8> {
    let walked = walk(data);
    let fd = &walked[0];
    let block_start = fd.line.len() as u64 + 1;
    let to_next = walked[1].offset - block_start;
    let declared = to_next + over;
    assert_eq!(
        declared.to_string().len(),
        fd.declared.to_string().len(),
        "the header line must keep its length"
    );
    let head = fd.line.rsplit_once(' ').unwrap().0;
    let mut out = format!("{head} {declared}\n").into_bytes();
    out.extend_from_slice(&data[block_start as usize..]);
    out
}

/// A filedesc whose declared length ends one to four bytes into the next
/// header (`h`, `ht`, `htt`, `http` of `http://`; `f`... of the second
/// filedesc of a metadata ARC) gives the records of the original file,
/// never one with a clipped URL (`ttp://`), and a warning naming the
/// file and the offset; plain, gzipped as one stream, mapped and read.
#[test]
fn filedesc_length_running_into_the_next_header() {
    let Some(corpus) = util::shared_corpus("filedesc_length_running_into_the_next_header") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    for rel in [FYENSDK_ARC, METADATA_ARC] {
        let orig = corpus.join(rel);
        let name = orig.file_name().unwrap().to_str().unwrap().to_string();
        let data = std::fs::read(&orig).unwrap();
        for format in ["cdx11", "cdxj"] {
            let args = ["--format", format, "--all-records"];
            let (want, err, code) = index(&args, &orig);
            assert_eq!(code, 0, "{err}");
            for over in 1..=4 {
                let bad = filedesc_running_over(&data, over);
                let path = dir.path().join(&name);
                std::fs::write(&path, &bad).unwrap();
                let (got, err, code) = index_both(&args, &path);
                assert_eq!(code, 2, "{name} +{over}: {err}");
                assert!(
                    err.contains(&format!("{name}: offset 0: record declares")),
                    "{name} +{over}: {err}"
                );
                assert_eq!(got, want, "{name} +{over}\n{err}");
                // Gzipped as one stream: the same records and offsets,
                // in the decompressed data.
                let gz = dir.path().join(format!("{name}.gz"));
                std::fs::write(&gz, gzip_one_stream(&bad)).unwrap();
                let (got, err, code) = index_both(&args, &gz);
                assert_eq!(code, 2, "{err}");
                assert!(err.contains("offset 0: record declares"), "{err}");
                assert_eq!(renamed(&got, &format!("{name}.gz"), &name), want);
            }
        }
    }
}

/// `data` gzipped as one stream (`gzip file.arc`).
fn gzip_one_stream(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// Lines with the file name `from` written `to`, sorted again.
fn renamed(ls: &[Vec<u8>], from: &str, to: &str) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = ls
        .iter()
        .map(|l| String::from_utf8_lossy(l).replace(from, to).into_bytes())
        .collect();
    v.sort();
    v
}

/// Real ARCs gzipped as one stream: every record is indexed as from the
/// decompressed file (offsets and lengths in the decompressed data), the
/// file is reported once, and the run exits 2. cdxj-indexer stops on such
/// a file with an error and no line; on the decompressed file it writes
/// our lines.
#[test]
fn single_stream_arc_is_read_and_reported() {
    let Some(corpus) = util::shared_corpus("single_stream_arc_is_read_and_reported") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let live = util::has_python_module("cdxj_indexer", "single_stream_arc_is_read_and_reported");
    for rel in [FYENSDK_ARC, METADATA_ARC] {
        let orig = corpus.join(rel);
        let name = orig.file_name().unwrap().to_str().unwrap().to_string();
        let plain = dir.path().join(&name);
        std::fs::copy(&orig, &plain).unwrap();
        let gz = dir.path().join(format!("{name}.gz"));
        std::fs::write(&gz, gzip_one_stream(&std::fs::read(&orig).unwrap())).unwrap();
        for args in [&["--format", "cdxj"][..], &["--format", "cdx11"], &[]] {
            let (want, err, code) = index(args, &plain);
            assert_eq!(code, 0, "{err}");
            let (got, err, code) = index_both(args, &gz);
            assert_eq!(code, 2, "{err}");
            assert!(
                err.contains(&format!(
                    "{name}.gz: offset 0: the file is compressed as a single gzip stream"
                )),
                "{err}"
            );
            assert_eq!(
                err.lines().filter(|l| l.contains(": offset ")).count(),
                1,
                "{err}"
            );
            // `ukvs` lines carry `!meta` header lines naming no file.
            let data = |ls: Vec<Vec<u8>>| -> Vec<Vec<u8>> {
                ls.into_iter().filter(|l| !l.starts_with(b"!")).collect()
            };
            assert_eq!(
                data(renamed(&got, &format!("{name}.gz"), &name)),
                data(want),
                "{name} {args:?}"
            );
        }
        if live {
            let (ours, _, _) = index(&["--format", "cdxj"], &gz);
            // cdxj-indexer loses a record of the metadata ARC after its
            // filedesc of length 0 (index.rs lists the difference).
            if rel == FYENSDK_ARC {
                let (theirs_plain, ok) = cdxj_indexer_run(&[plain.as_path()]);
                assert!(ok);
                assert_eq!(
                    renamed(&ours, &format!("{name}.gz"), &name),
                    lines(&theirs_plain)
                );
            }
            let (theirs_gz, ok) = cdxj_indexer_run(&[gz.as_path()]);
            assert!(!ok && theirs_gz.is_empty(), "cdxj-indexer read {name}.gz");
        }
    }
}

/// A one-stream file whose first member ends with more members after it
/// is one bad member, not a stream: the members after it are indexed at
/// their own offsets.
#[test]
fn a_first_member_of_two_records_before_per_record_members() {
    let Some(corpus) =
        util::shared_corpus("a_first_member_of_two_records_before_per_record_members")
    else {
        return;
    };
    let orig: PathBuf = corpus.join(FYENSDK_ARC);
    let data = std::fs::read(&orig).unwrap();
    let walked = walk(&data);
    // The filedesc and the first record in one member, then one member
    // per record.
    let mut gz = gzip_one_stream(&data[..walked[2].offset as usize]);
    let first = gz.len() as u64;
    let mut starts = Vec::new();
    for (i, w) in walked.iter().enumerate().skip(2) {
        let end = walked.get(i + 1).map_or(data.len(), |n| n.offset as usize);
        starts.push(gz.len() as u64);
        gz.extend(gzip_one_stream(&data[w.offset as usize..end]));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fyensdk.arc.gz");
    std::fs::write(&path, &gz).unwrap();
    let (got, err, code) = index_both(&["--format", "cdx11", "--all-records"], &path);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!(
            "offset 0: gzip member of {first} bytes holds more than one ARC record"
        )),
        "{err}"
    );
    let mut offsets: Vec<u64> = got
        .iter()
        .skip(1)
        .map(|l| field(l, 9).parse().unwrap())
        .collect();
    offsets.sort();
    assert_eq!(offsets, starts);
}

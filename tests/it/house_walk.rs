//! The index walk over a directory that mixes ARC, WARC, Kulturarw3 and
//! Nedlib files with an orphan, files that are no archive and files that
//! cannot be read: what it reports (lines, messages and their order,
//! counts, exit status) is the same as when the files are named one by
//! one, however they are read (mapped or not, the walk's handles or the
//! file opened by its worker), and each file is opened once.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::seed_index::generate;
use crate::util;

/// A generated tree and what the walk should make of it.
struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// The files to index, in the walk's order (depth first, by name).
    inputs: Vec<PathBuf>,
    /// Files the walk reads that no name tells: each is opened once.
    sniffed: Vec<PathBuf>,
    /// The `.meta` file whose data file is gone.
    orphan: PathBuf,
}

/// Regular files under `dir`, depth first and by name at each level.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            files(&e.path(), out);
        } else if t.is_file() {
            out.push(e.path());
        }
    }
}

/// ARC and WARC samples, a Kulturarw3 tree (some files holding several
/// objects) and a file of it over the size that is mapped, a Nedlib
/// harvest with one data file removed, a text file, a file nobody may
/// read (root still may) and a link to nothing.
fn mixed_tree(test: &str) -> Option<Tree> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mixed");
    let k3_args = ["--objects", "25", "--seed", "5", "--concatenated", "3"];
    let k3 = generate(test, "gen_kulturarw3.py", &root.join("k"), &k3_args)?;
    let nd_args = ["--objects", "25", "--seed", "5"];
    let nd = generate(test, "gen_nedlib.py", &root.join("n"), &nd_args).unwrap();
    std::fs::remove_file(k3.join("truth.tsv")).unwrap();
    std::fs::remove_file(nd.join("truth.tsv")).unwrap();
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    for name in [
        "example.arc",
        "example.arc.gz",
        "example.warc.gz",
        "small_BNF.arc",
    ] {
        std::fs::copy(samples.join(name), root.join(name)).unwrap();
    }
    // Damaged archives: their errors come in the file order.
    let data = util::data_dir();
    std::fs::copy(
        data.join("warc/example-trunc.warc"),
        root.join("trunc.warc"),
    )
    .unwrap();
    std::fs::copy(data.join("arc/bad.arc"), root.join("bad.arc")).unwrap();
    let mut k3_files = Vec::new();
    files(&k3, &mut k3_files);
    // Several copies of one object in one file, mapped when indexed.
    let one = std::fs::read(&k3_files[0]).unwrap();
    let mut big = Vec::new();
    while big.len() < 300 << 10 {
        big.extend_from_slice(&one);
    }
    std::fs::create_dir(root.join("big")).unwrap();
    let big_path = root.join("big").join(k3_files[0].file_name().unwrap());
    std::fs::write(&big_path, big).unwrap();
    // An object cut short.
    let cut = root.join("big").join(k3_files[1].file_name().unwrap());
    std::fs::write(&cut, &one[..one.len() * 2 / 3]).unwrap();
    let mut nd_files = Vec::new();
    files(&nd, &mut nd_files);
    let orphan = nd_files
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "meta"))
        .unwrap()
        .clone();
    std::fs::remove_file(orphan.with_extension("")).unwrap();
    std::fs::write(root.join("notes.txt"), "not an archive\n").unwrap();
    let locked = root.join("locked");
    std::fs::write(&locked, "not an archive either\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    std::os::unix::fs::symlink(root.join("nowhere"), root.join("dangling")).unwrap();

    let mut all = Vec::new();
    files(&root, &mut all);
    let is_archive = |p: &Path| {
        let n = p.file_name().unwrap().to_string_lossy();
        [".arc", ".arc.gz", ".warc", ".warc.gz"]
            .iter()
            .any(|x| n.ends_with(x))
    };
    let is_meta = |p: &Path| p.extension().is_some_and(|e| e == "meta");
    let inputs = all
        .iter()
        .filter(|p| {
            is_archive(p)
                || p.starts_with(&k3)
                || p.starts_with(root.join("big"))
                || (is_meta(p) && p.with_extension("").exists())
        })
        .cloned()
        .collect();
    let sniffed = all
        .iter()
        // Not the Nedlib data files: they are read with their `.meta`.
        .filter(|p| !is_archive(p) && (is_meta(p) || !p.starts_with(&nd)) && **p != locked)
        .cloned()
        .collect();
    Some(Tree {
        _dir: dir,
        root,
        inputs,
        sniffed,
        orphan,
    })
}

/// `ukvs ARGS` with `stdin`, run by `sh` after `ulimit -n FDS` when given.
fn ukvs(args: &[&str], stdin: &[u8], fds: Option<u32>) -> Output {
    match fds {
        None => util::run(args, stdin),
        Some(n) => {
            let mut child = Command::new("sh")
                .arg("-c")
                .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                .arg(util::bin())
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            use std::io::Write;
            child.stdin.take().unwrap().write_all(stdin).unwrap();
            child.wait_with_output().unwrap()
        }
    }
}

/// The numbers of the summary line (`N files, N records indexed, ...`).
fn summary(line: &str) -> Vec<u64> {
    let rest = line.strip_prefix("ukvs index: ").expect(line);
    rest.split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect()
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

#[test]
fn a_walked_directory_reports_what_its_files_named_one_by_one_report() {
    let test = "a_walked_directory_reports_what_its_files_named_one_by_one_report";
    let Some(tree) = mixed_tree(test) else {
        return;
    };
    let root = tree.root.to_str().unwrap();
    let walked = ukvs(&["index", "-j", "1", root], b"", None);
    assert_eq!(walked.status.code(), Some(2), "{}", text(&walked.stderr));
    let err: Vec<&str> = text(&walked.stderr).lines().collect();

    // The orphan is told before any file is indexed, as the only input
    // error; the summary comes last.
    assert_eq!(err.iter().filter(|l| l.contains("without its")).count(), 1);
    assert!(err[0].starts_with(&format!("ukvs index: {}: ", tree.orphan.display())));
    assert!(
        err[0].contains(".meta file without its data file"),
        "{}",
        err[0]
    );
    let (last, per_file) = err.split_last().unwrap();
    let counts = summary(last);
    assert_eq!(counts[0], tree.inputs.len() as u64, "{last}");
    // Files that are no archive, or cannot be read, are passed over.
    let walked_text = text(&walked.stderr);
    for quiet in ["notes.txt", "locked", "dangling"] {
        assert!(!walked_text.contains(quiet), "{walked_text}");
    }

    // The same files named on stdin, their lines named from the same
    // root: the same lines, the same messages in the same order, the
    // same counts but for the orphan.
    let list: String = tree
        .inputs
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    let listed = ukvs(
        &["index", "-j", "1", "--dir-root", root, "-"],
        list.as_bytes(),
        None,
    );
    assert_eq!(listed.status.code(), Some(2), "{}", text(&listed.stderr));
    assert!(per_file.len() > 3, "{}", text(&walked.stderr));
    assert!(!walked.stdout.is_empty());
    assert_eq!(text(&listed.stdout), text(&walked.stdout));
    let listed_err: Vec<&str> = text(&listed.stderr).lines().collect();
    let (listed_last, listed_per_file) = listed_err.split_last().unwrap();
    assert_eq!(listed_per_file, &per_file[1..]);
    let mut expected = counts.clone();
    *expected.last_mut().unwrap() -= 1;
    assert_eq!(summary(listed_last), expected, "{listed_last}");
    let records_lines = text(&walked.stdout)
        .lines()
        .filter(|l| !l.starts_with('!'))
        .count() as u64;
    assert_eq!(counts[1], records_lines, "{last}");

    // Read without maps, or with the walk out of handles to hand over
    // (its workers open the files again): the same bytes.
    for (args, fds) in [
        (vec!["index", "-j", "1", "--no-mmap", root], None),
        (vec!["index", "-j", "1", root], Some(40)),
        (vec!["index", "-j", "1", "--no-mmap", root], Some(40)),
        (vec!["index", "-j", "1", "--no-sort", root], None),
    ] {
        let o = ukvs(&args, b"", fds);
        assert_eq!(o.status.code(), Some(2), "{args:?} {fds:?}");
        assert_eq!(text(&o.stderr), text(&walked.stderr), "{args:?} {fds:?}");
        if args.contains(&"--no-sort") {
            // The same lines in the walk's file order.
            let records = |b: &[u8]| {
                let mut l: Vec<String> = text(b)
                    .lines()
                    .filter(|l| !l.starts_with('!'))
                    .map(str::to_string)
                    .collect();
                l.sort_unstable();
                l
            };
            assert!(records(&o.stdout) == records(&walked.stdout), "{args:?}");
        } else {
            assert_eq!(text(&o.stdout), text(&walked.stdout), "{args:?} {fds:?}");
        }
    }
    // Several workers: the same lines, the same messages in some order.
    let o = ukvs(&["index", "-j", "3", root], b"", None);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stdout), text(&walked.stdout));
    let mut a: Vec<&str> = text(&o.stderr).lines().collect();
    let mut b = err.clone();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
}

#[test]
fn each_file_the_walk_reads_is_opened_once() {
    let test = "each_file_the_walk_reads_is_opened_once";
    let Some(tree) = mixed_tree(test) else {
        return;
    };
    let trace = tree.root.parent().unwrap().join("trace");
    let run = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat", "-o"])
        .arg(&trace)
        .arg(util::bin())
        .args(["index", "-q", "-j", "2", "-o", "/dev/null"])
        .arg(&tree.root)
        .output();
    let o = match run {
        Ok(o) if trace.exists() => o,
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            eprintln!("SKIPPED {test}: strace cannot trace here: {why}");
            return;
        }
        Err(e) => {
            eprintln!("SKIPPED {test}: no strace: {e}");
            return;
        }
    };
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let mut opens: BTreeMap<PathBuf, usize> = BTreeMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let Some(at) = line.find("openat(") else {
            continue;
        };
        let mut quoted = line[at..].split('"');
        if let Some(path) = quoted.nth(1) {
            *opens.entry(PathBuf::from(path)).or_default() += 1;
        }
    }
    // Every archive, Kulturarw3 file, Nedlib `.meta` and data file, the
    // text file: opened once, by the walk (or the package check) or by
    // the worker it handed the file to.
    let data: Vec<PathBuf> = tree
        .inputs
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "meta"))
        .map(|p| p.with_extension(""))
        .collect();
    assert!(tree.sniffed.len() > 25 && data.len() > 10);
    let archives = tree.inputs.iter().filter(|p| !tree.sniffed.contains(p));
    assert_eq!(archives.clone().count(), 6);
    for path in tree.sniffed.iter().chain(&data).chain(archives) {
        assert_eq!(opens.get(path), Some(&1), "{}", path.display());
    }
}

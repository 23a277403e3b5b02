//! Output files: temp file + rename for regular files, written through for
//! FIFOs and devices, mode from the umask, nothing left behind on error.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::util;

/// Three sorted CDXJ lines and the same lines shuffled.
const SORTED: &[u8] =
    b"com,a)/ 20140101000000 {}\ncom,b)/ 20140101000000 {}\ncom,c)/ 20140101000000 {}\n";
const SHUFFLED: &[u8] =
    b"com,c)/ 20140101000000 {}\ncom,a)/ 20140101000000 {}\ncom,b)/ 20140101000000 {}\n";

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// Names of leftover temporary files in `dir`.
fn temp_files(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".ukvs-tmp-") || n.starts_with(".tmp"))
        .collect()
}

/// Runs `ukvs ARGS` and kills it with SIGKILL after `wait` microseconds;
/// says whether it was still running then.
fn kill_after(args: &[String], wait: u64) -> bool {
    let mut child = Command::new(util::bin())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_micros(wait));
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    running
}

/// Makes a FIFO with the `mkfifo` command; `None` (and a skip message)
/// where there is none.
fn mkfifo(path: &Path, test: &str) -> Option<()> {
    match Command::new("mkfifo").arg(path).status() {
        Ok(s) if s.success() => Some(()),
        _ => {
            eprintln!("SKIPPED {test}: the `mkfifo` command is not available");
            None
        }
    }
}

#[test]
fn output_to_a_fifo_is_written_through_not_replaced() {
    let test = "output_to_a_fifo_is_written_through_not_replaced";
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "in.cdxj", SHUFFLED);
    let fifo = dir.path().join("fifo");
    if mkfifo(&fifo, test).is_none() {
        return;
    }
    let sorted_input = write(dir.path(), "sorted.cdxj", SORTED);
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/expected.ukvs");
    for args in [
        vec!["sort", input.to_str().unwrap()],
        vec!["merge", sorted_input.to_str().unwrap()],
        vec!["cat", sample.to_str().unwrap()],
    ] {
        let want = util::run(&args, b"");
        assert!(want.status.success(), "{args:?}");
        // Opening a FIFO for reading blocks until a writer opens it.
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let mut full = args.clone();
        full.extend(["-o", fifo.to_str().unwrap()]);
        let o = util::run(&full, b"");
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got = reader.join().unwrap();
        assert_eq!(got, want.stdout, "{args:?}");
        assert!(!got.is_empty(), "{args:?}");
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "{args:?} replaced the FIFO");
        assert!(temp_files(dir.path()).is_empty(), "{args:?}");
    }
}

#[test]
fn output_to_a_device_is_written_through_not_replaced() {
    let test = "output_to_a_device_is_written_through_not_replaced";
    if !Path::new("/dev/null").exists() {
        eprintln!("SKIPPED {test}: /dev/null is absent");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "in.cdxj", SORTED);
    // A link to /dev/null stands for the device: were it replaced by a
    // rename, the link (not /dev/null) would be what is lost.
    let null = dir.path().join("null");
    std::os::unix::fs::symlink("/dev/null", &null).unwrap();
    for verb in ["merge", "sort"] {
        let o = util::run(
            &[verb, input.to_str().unwrap(), "-o", null.to_str().unwrap()],
            b"",
        );
        assert!(
            o.status.success(),
            "{verb}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let meta = std::fs::symlink_metadata(&null).unwrap();
        assert!(meta.file_type().is_symlink(), "{verb} replaced the link");
        assert!(
            std::fs::metadata(&null)
                .unwrap()
                .file_type()
                .is_char_device(),
            "{verb}: the link no longer leads to a device"
        );
        assert!(temp_files(dir.path()).is_empty(), "{verb}");
    }
}

#[test]
fn output_through_a_link_replaces_the_linked_file_and_keeps_the_link() {
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "in.cdxj", SHUFFLED);
    let real = write(dir.path(), "real.cdxj", b"old\n");
    let link = dir.path().join("link.cdxj");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = util::run(
        &[
            "sort",
            input.to_str().unwrap(),
            "-o",
            link.to_str().unwrap(),
        ],
        b"",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read(&real).unwrap(), SORTED);
}

#[test]
fn new_output_files_get_their_mode_from_the_umask() {
    let test = "new_output_files_get_their_mode_from_the_umask";
    let dir = tempfile::tempdir().unwrap();
    let input = write(dir.path(), "in.cdxj", SHUFFLED);
    let bin = util::bin();
    for (umask, mode) in [("022", 0o644), ("027", 0o640), ("002", 0o664)] {
        for verb in ["sort", "cat"] {
            let out = dir.path().join(format!("out-{verb}-{umask}.cdxj"));
            // The shell sets the umask for the child it execs.
            let status = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "umask {umask} && exec \"$0\" {verb} \"$1\" -o \"$2\""
                ))
                .arg(&bin)
                .arg(&input)
                .arg(&out)
                .status();
            let Ok(status) = status else {
                eprintln!("SKIPPED {test}: no `sh` to set a umask");
                return;
            };
            assert!(status.success(), "{verb} with umask {umask}");
            let got = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
            assert_eq!(got, mode, "{verb} with umask {umask}: {got:o}");
        }
    }
}

#[test]
fn a_failed_run_leaves_no_temporary_file_and_keeps_the_old_output() {
    let dir = tempfile::tempdir().unwrap();
    let unsorted = write(dir.path(), "unsorted.cdxj", SHUFFLED);
    let out = write(dir.path(), "out.cdxj", b"previous\n");
    let cluster = dir.path().join("cluster");
    for args in [
        vec![
            "merge",
            unsorted.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        vec![
            "zipnum",
            "build",
            unsorted.to_str().unwrap(),
            "-o",
            cluster.to_str().unwrap(),
        ],
    ] {
        let o = util::run(&args, b"");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("out of order"), "{args:?}: {err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"previous\n");
        assert!(temp_files(dir.path()).is_empty(), "{args:?}");
        if cluster.exists() {
            let left: Vec<_> = std::fs::read_dir(&cluster)
                .unwrap()
                .filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .collect();
            assert!(left.is_empty(), "{args:?} left {left:?}");
        }
    }
}

/// A UKVS capture index with `n` captures of one URL, headers from
/// `samples/expected.ukvs`: megabytes of output for a single lookup.
fn many_captures(dir: &Path, n: usize) -> PathBuf {
    let sample = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("samples/expected.ukvs"),
    )
    .unwrap();
    let mut text: String = sample
        .lines()
        .filter(|l| l.starts_with("!context") || l.starts_with("!fields"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        text.contains("!fields"),
        "samples/expected.ukvs has no !fields"
    );
    for i in 0..n {
        text.push_str(&format!(
            "com,example)/ 20140127171200 {i:09} B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A\n"
        ));
    }
    write(dir, "many.ukvs", text.as_bytes())
}

#[test]
fn a_reader_that_goes_away_ends_the_run_quietly() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let idx = many_captures(dir.path(), 200_000);
    let idx = idx.to_str().unwrap();
    for args in [
        vec!["lookup", idx, "--key", "com,example)/"],
        vec!["lookup", idx, "--key", "com,example)/", "--output", "json"],
        vec!["cat", idx],
        vec!["cat", "--json", idx],
        vec!["sort", idx],
        vec!["merge", idx, idx],
    ] {
        let mut child = Command::new(util::bin())
            .args(&args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Read one line, then close the pipe as `head -1` does.
        let mut first = String::new();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut first).unwrap();
        assert!(!first.is_empty(), "{args:?} wrote nothing");
        drop(stdout);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// The bytes of an output with the time a MementoMap was written (its
/// `updated_at`) blanked out: two runs differ in nothing else.
fn untimed(bytes: &[u8]) -> Vec<u8> {
    let key = b"\"updated_at\":\"";
    let mut out = bytes.to_vec();
    if let Some(i) = out.windows(key.len()).position(|w| w == key) {
        let start = i + key.len();
        let end = out[start..]
            .iter()
            .position(|&b| b == b'"')
            .map_or(out.len(), |k| start + k);
        out.drain(start..end);
    }
    out
}

/// Kills each writing command with SIGKILL at moments spread over its run,
/// many times: the destination is always absent-or-old or the whole new
/// file, and the temporary files the killed processes leave behind are
/// removed by the next run into the same directory.
#[test]
fn sigkill_never_leaves_a_partial_output_and_the_next_run_cleans_up() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Inputs that take a noticeable time: a WARC of many copies of a real
    // one, and 12 MB of shuffled CDXJ lines (two halves for merge).
    let warc = std::fs::read(util::data_dir().join("warc/example.warc.gz")).unwrap();
    let big_warc = write(d, "big.warc.gz", &warc.repeat(3000));
    let mut seed = 0x9e37_79b9_u64;
    let mut next = || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        seed >> 33
    };
    let mut lines: Vec<String> = (0..150_000)
        .map(|i| {
            format!(
                "com,h{})/p/{} 2014{:010} {{}}\n",
                next() % 5000,
                i,
                next() % 10_000_000_000
            )
        })
        .collect();
    let shuffled = write(d, "in.cdxj", lines.concat().as_bytes());
    lines.sort();
    let (a, b): (Vec<_>, Vec<_>) = lines.iter().enumerate().partition(|(i, _)| i % 2 == 0);
    let half =
        |v: Vec<(usize, &String)>| v.into_iter().map(|(_, l)| l.as_str()).collect::<String>();
    let a = write(d, "a.cdxj", half(a).as_bytes());
    let b = write(d, "b.cdxj", half(b).as_bytes());
    let out_dir = d.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let dest = out_dir.join("dest");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    // MementoMaps of the two halves, for compact and merge.
    let map = |input: &Path, name: &str| {
        let m = d.join(name);
        let o = Command::new(util::bin())
            .args(["mementomap", "generate", "-q", &s(input), "-o", &s(&m)])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        m
    };
    let (map_a, map_b) = (map(&a, "a.map"), map(&b, "b.map"));
    let mm = |args: &[&str]| -> Vec<String> {
        let mut v = vec!["mementomap".to_string()];
        v.extend(args.iter().map(|a| a.to_string()));
        v.extend(["-o".to_string(), s(&dest)]);
        v
    };
    let sorted_all = write(d, "all.cdxj", lines.concat().as_bytes());
    let jobs: Vec<Vec<String>> = vec![
        vec![
            "index".into(),
            "-q".into(),
            s(&big_warc),
            "-o".into(),
            s(&dest),
        ],
        vec![
            "sort".into(),
            "--mem".into(),
            "2M".into(),
            s(&shuffled),
            "-o".into(),
            s(&dest),
        ],
        vec!["merge".into(), s(&a), s(&b), "-o".into(), s(&dest)],
        mm(&["generate", "-q", &s(&sorted_all)]),
        mm(&["compact", "-q", &s(&map_a)]),
        mm(&["merge", "-q", &s(&map_a), &s(&map_b)]),
    ];
    for job in &jobs {
        std::fs::write(&dest, b"old\n").unwrap();
        // The whole new output, and how long it takes.
        let t = std::time::Instant::now();
        let full = Command::new(util::bin()).args(job).output().unwrap();
        assert!(
            full.status.success(),
            "{job:?}: {}",
            String::from_utf8_lossy(&full.stderr)
        );
        let took = t.elapsed().as_micros() as u64;
        let new = std::fs::read(&dest).unwrap();
        assert!(new.len() > 1000);
        let mut killed = 0;
        for round in 0..16u64 {
            std::fs::write(&dest, b"old\n").unwrap();
            // From the start to a little past the usual end.
            let wait = took * (round * 7 % 17) / 14;
            killed += u32::from(kill_after(job, wait));
            let got = std::fs::read(&dest).unwrap_or_default();
            assert!(
                got == b"old\n" || untimed(&got) == untimed(&new),
                "{job:?}: a partial destination ({} bytes) after a kill at {wait} us",
                got.len()
            );
        }
        assert!(
            killed >= 4,
            "{job:?}: only {killed} runs were killed while running"
        );
        // A finished run removes what the killed ones left.
        let ok = Command::new(util::bin()).args(job).output().unwrap();
        assert!(ok.status.success());
        assert_eq!(untimed(&std::fs::read(&dest).unwrap()), untimed(&new));
        assert_eq!(temp_files(&out_dir), Vec::<String>::new(), "{job:?}");
    }
    // A ZipNum cluster is a directory: after a kill it is the old cluster
    // or the new one, whole.
    let cluster = out_dir.join("cluster");
    let files = |dir: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        (name, std::fs::read(e.path()).unwrap())
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let build = |input: &Path| {
        vec![
            "zipnum".to_string(),
            "build".into(),
            "--lines-per-block".into(),
            "50".into(),
            "--shards".into(),
            "3".into(),
            s(input),
            "-o".into(),
            s(&cluster),
        ]
    };
    let run_ok = |args: &[String]| {
        let o = Command::new(util::bin()).args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run_ok(&build(&sorted_all));
    let new_cluster = files(&cluster);
    run_ok(&build(&a));
    let old_cluster = files(&cluster);
    assert_ne!(old_cluster, new_cluster);
    let t = std::time::Instant::now();
    run_ok(&build(&sorted_all));
    let took = t.elapsed().as_micros() as u64;
    let mut killed = 0;
    for round in 0..16u64 {
        run_ok(&build(&a));
        let wait = took * (round * 7 % 17) / 14;
        killed += u32::from(kill_after(&build(&sorted_all), wait));
        let got = files(&cluster);
        assert!(
            got.is_empty() || got == old_cluster || got == new_cluster,
            "a mixed cluster after a kill at {wait} us: {:?}",
            got.iter().map(|(n, b)| (n, b.len())).collect::<Vec<_>>()
        );
    }
    assert!(
        killed >= 4,
        "zipnum build: only {killed} runs were killed while running"
    );
    run_ok(&build(&sorted_all));
    assert_eq!(files(&cluster), new_cluster);
    assert_eq!(temp_files(&out_dir), Vec::<String>::new(), "zipnum build");
    // A directory holding other files is not replaced.
    std::fs::write(cluster.join("notes.txt"), b"mine").unwrap();
    let o = Command::new(util::bin()).args(build(&a)).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("notes.txt"));
    assert!(cluster.join("notes.txt").exists());
    // A temporary file of a live process is left alone.
    let live = out_dir.join(format!(".ukvs-tmp-{}-keep", std::process::id()));
    std::fs::write(&live, b"x").unwrap();
    let ok = Command::new(util::bin()).args(&jobs[2]).output().unwrap();
    assert!(ok.status.success());
    assert!(live.exists());
}

/// Under a file-size limit (writes fail with EFBIG, as on a full disk),
/// writing commands exit 2 with a message that names the destination,
/// keep the old file and leave no temporary file. The limit is set by
/// Python (which also keeps SIGXFSZ ignored, so that writes fail instead
/// of the process being killed).
#[test]
fn a_full_disk_is_reported_by_name_and_keeps_the_old_file() {
    let test = "a_full_disk_is_reported_by_name_and_keeps_the_old_file";
    if !util::has_python_module("resource", test) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let lines: String = (0..20_000)
        .map(|i| format!("com,h{})/p/{i} 20140101000000 {{}}\n", i % 97))
        .collect();
    let input = write(d, "in.cdxj", lines.as_bytes());
    let mut sorted: Vec<&str> = lines.lines().collect();
    sorted.sort_unstable();
    let sorted = write(d, "sorted.cdxj", (sorted.join("\n") + "\n").as_bytes());
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    let dest = out.join("dest");
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let map = d.join("map");
    let o = util::run(
        &["mementomap", "generate", "-q", &s(&sorted), "-o", &s(&map)],
        b"",
    );
    assert!(o.status.success());
    let cluster = out.join("cluster");
    let working = format!(
        "cannot write a working file in {} (--tmp-dir): ",
        out.display()
    );
    let jobs: [(Vec<String>, String); 5] = [
        (
            vec!["sort".to_string(), s(&input), "-o".into(), s(&dest)],
            format!("cannot write {}: ", dest.display()),
        ),
        (
            vec!["merge".to_string(), s(&sorted), "-o".into(), s(&dest)],
            format!("cannot write {}: ", dest.display()),
        ),
        // A small map's parts are held in memory: the output is the first
        // file it writes.
        (
            vec![
                "mementomap".into(),
                "generate".into(),
                s(&sorted),
                "-o".into(),
                s(&dest),
            ],
            format!("cannot write {}: ", dest.display()),
        ),
        // The map's working files sit beside the output.
        (
            vec![
                "mementomap".into(),
                "compact".into(),
                s(&map),
                "-o".into(),
                s(&dest),
            ],
            working,
        ),
        (
            vec![
                "zipnum".into(),
                "build".into(),
                s(&sorted),
                "-o".into(),
                s(&cluster),
            ],
            format!(
                "cannot write {}: ",
                cluster.join("index-01.cdx.gz").display()
            ),
        ),
    ];
    for (job, said) in jobs {
        std::fs::write(&dest, b"old\n").unwrap();
        let script = "import resource, subprocess, sys\n\
             lim = lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))\n\
             r = subprocess.run(sys.argv[1:], restore_signals=False, preexec_fn=lim)\n\
             sys.exit(r.returncode if r.returncode >= 0 else 100 - r.returncode)";
        let o = Command::new("python3")
            .arg("-c")
            .arg(script)
            .arg(util::bin())
            .args(&job)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{job:?}: {err}");
        assert!(err.contains(&said), "{job:?}: {err}");
        assert!(!err.contains(".ukvs-tmp"), "{job:?}: {err}");
        assert_eq!(std::fs::read(&dest).unwrap(), b"old\n", "{job:?}");
        assert!(!cluster.exists(), "{job:?}");
        assert_eq!(temp_files(&out), Vec::<String>::new(), "{job:?}");
    }
}

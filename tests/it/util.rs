//! Shared harness: run the `ukvs` binary, find fixtures and the shared corpus.
#![allow(dead_code)]

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Path of the `ukvs` binary built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_ukvs"))
}

/// Directory of the repository's own fixtures (`tests/data`).
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
}

/// The shared corpus beside the repository (`../shared/corpus`), or `None`
/// with a message naming the test that skips because it is absent.
pub fn shared_corpus(test: &str) -> Option<PathBuf> {
    shared_dir("corpus", test)
}

/// A directory under `../shared`, or `None` with a skip message.
pub fn shared_dir(name: &str, test: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("shared")
        .join(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "SKIPPED {test}: {} is absent (it sits beside the repository in CI)",
            dir.display()
        );
        None
    }
}

/// Runs `ukvs ARGS` with `stdin` as standard input and returns its output.
pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ukvs");
    let mut input = child.stdin.take().expect("stdin");
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let out = child.wait_with_output().expect("wait for ukvs");
    writer.join().expect("stdin writer");
    out
}

/// Asserts that a run exited with 0, showing its stderr when it did not.
pub fn assert_ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Whether `python3 -c "import MODULE"` works; prints a skip message if not.
pub fn has_python_module(module: &str, test: &str) -> bool {
    let ok = Command::new("python3")
        .args(["-c", &format!("import {module}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("SKIPPED {test}: python3 module `{module}` is not installed (pip install -r scripts/requirements.txt)");
    }
    ok
}

/// Runs a Python script that prints `FILE OFFSET HEX` a record (the
/// payloads warcio reads), and gives each record's bytes by file and
/// offset as the script printed them.
pub fn warcio_payload_lines(
    script: &str,
    args: &[&std::ffi::OsStr],
) -> Vec<(String, String, Vec<u8>)> {
    let o = std::process::Command::new("python3")
        .args(["-c", script])
        .args(args)
        .output()
        .expect("run warcio");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|line| {
            let mut p = line.split(' ');
            let (f, off, hexed) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap_or(""));
            let bytes = (0..hexed.len() / 2)
                .map(|i| u8::from_str_radix(&hexed[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            (f.to_string(), off.to_string(), bytes)
        })
        .collect()
}

/// A port free on loopback now (another process could take it before use).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Ends the server when the test ends, however it ends.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Installs pywb when Python is there but pywb is not (the test's set-up).
pub fn ensure_pywb(test: &str) -> bool {
    let python = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !python {
        eprintln!("SKIPPED {test}: python3 is not installed");
        return false;
    }
    if !has_python_module("pywb", test) {
        let _ = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "pywb"])
            .status();
        if !has_python_module("pywb", test) {
            eprintln!("SKIPPED {test}: pywb could not be installed (pip install pywb)");
            return false;
        }
    }
    true
}

/// A small deterministic generator (xorshift), so that generated inputs
/// are the same on every run.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

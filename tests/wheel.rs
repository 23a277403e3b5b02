//! The Python wheel of `ukvs` (maturin, `bindings = "bin"`): built from
//! the tests' own target directory, installed into a fresh venv, and its
//! `ukvs --version` run.
//!
//! A test binary of its own: cargo runs test binaries one after another,
//! so the build maturin starts (which may link `ukvs` again when its
//! fingerprint differs) never replaces the binary under the integration
//! tests while they run it.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_ukvs");

#[test]
fn spark_wheel_installs_and_runs() {
    const TEST: &str = "spark_wheel_installs_and_runs";
    let maturin = Command::new("maturin")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !maturin {
        eprintln!(
            "SKIPPED {TEST}: maturin is not installed (pip install -r scripts/requirements.txt)"
        );
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // The tests' own target directory and profile: cargo finds the binary
    // built and does not compile it again.
    let profile_dir = Path::new(BIN).parent().unwrap().to_path_buf();
    let target_dir = profile_dir.parent().unwrap();
    let mut build = Command::new("maturin");
    build
        .args(["build", "--quiet", "-o"])
        .arg(tmp.path().join("wheels"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("CARGO_TARGET_DIR", target_dir);
    if profile_dir.ends_with("release") {
        build.arg("--release");
    }
    let o = build.output().expect("run maturin");
    assert!(
        o.status.success(),
        "maturin build failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let wheel = std::fs::read_dir(tmp.path().join("wheels"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "whl"))
        .expect("a wheel");

    let venv = tmp.path().join("venv");
    let o = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "python3 -m venv: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(venv.join("bin/python"))
        .args(["-m", "pip", "install", "--quiet", "--no-index"])
        .arg(&wheel)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "pip install: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(venv.join("bin/ukvs"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = Command::new(BIN).arg("--version").output().unwrap();
    assert_eq!(o.stdout, ours.stdout);
}

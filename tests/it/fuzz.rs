//! Replays what the fuzz targets found (`tests/data/fuzz/TARGET/*`, put
//! there minimised by `scripts/fuzz.sh`) through the very functions the
//! targets run, and the repository's fixtures through them too: none may
//! panic.

use std::path::Path;

#[path = "../../fuzz/src/lib.rs"]
mod harness;

use crate::util;

/// Every file under `dir` (recursively).
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

type Target = fn(&[u8]);

const TARGETS: [(&str, Target, &str); 17] = [
    ("warc_stream", harness::warc_stream, "warc"),
    ("arc_stream", harness::arc_stream, "arc"),
    ("surt", harness::surt, "surt"),
    ("ukvs_lines", harness::ukvs_lines, "ukvs"),
    ("cdx_convert", harness::cdx_convert, "cdxj"),
    ("mementomap_lines", harness::mementomap_lines, "ukvs"),
    ("zipnum_idx", harness::zipnum_idx, "ukvs"),
    ("pywb_lines", harness::pywb_lines, "cdxj"),
    (
        "kulturarw3_objects",
        harness::kulturarw3_objects,
        "kulturarw3",
    ),
    ("nedlib_meta", harness::nedlib_meta, "nedlib"),
    ("stats_lines", harness::stats_lines, "cdxj"),
    ("generate_lines", harness::generate_lines, "cdxj"),
    ("post_body", harness::post_body, "cdx"),
    ("digest_spellings", harness::digest_spellings, "cdxj"),
    ("outback_query", harness::outback_query, "outbackcdx"),
    ("wayback_params", harness::wayback_params, "wayback"),
    ("wacz_package", harness::wacz_package, "wacz"),
];

#[test]
fn fuzz_findings_and_fixtures_replay_without_panic() {
    let data = util::data_dir();
    let mut replayed = 0;
    for (name, target, fixtures) in TARGETS {
        for f in files(&data.join("fuzz").join(name)) {
            target(&std::fs::read(&f).unwrap());
            replayed += 1;
        }
        for f in files(&data.join(fixtures)) {
            let bytes = std::fs::read(&f).unwrap();
            if bytes.len() <= 1 << 20 {
                target(&bytes);
                replayed += 1;
            }
        }
    }
    assert!(replayed > 50, "only {replayed} inputs replayed");
}

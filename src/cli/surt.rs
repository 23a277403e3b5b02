//! Print the SURT keys of URLs.

use std::process::ExitCode;

/// Print the SURT key of each URL given, or of each line of stdin.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// URLs; read one per line from stdin when none are given.
    urls: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = ukvs::surt::Options::default();
    for url in &args.urls {
        let (key, _) = ukvs::surt::key(url.as_bytes(), &opts);
        println!("{}", String::from_utf8_lossy(&key));
    }
    Ok(ExitCode::SUCCESS)
}

//! `ukvs surt`: print the SURT keys of URLs.

use std::ffi::OsString;
use std::io::{self, BufRead, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Context;
use ukvs::surt::{key_into, Options};

/// Print the SURT key of each URL given, or of each line of stdin.
///
/// Keys are byte-identical to Python `surt` 0.3.1 (what pywb and
/// cdxj-indexer use); the flags select the reference's other options. One
/// output line per input line, in order. Where the reference raises (bad
/// port, blank line, ...), the key is the URL unchanged, as cdxj-indexer
/// does, and a warning names the line. Input is read as bytes: URLs need
/// not be UTF-8. A trailing CR of a CRLF line is dropped; a LF inside an
/// argument kept unchanged is written `%0A`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Do not warn about URLs kept unchanged.
    #[arg(long, short)]
    quiet: bool,
    /// URLs; read one per line from stdin when none are given.
    urls: Vec<OsString>,
}

/// The SURT profile flags, shared by every command that makes keys.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ProfileArgs {
    /// Prefix keys with the scheme: `http://(com,example)/`.
    #[arg(long)]
    with_scheme: bool,
    /// Put a comma after the host: `com,example,)/`.
    #[arg(long)]
    trailing_comma: bool,
    /// Keep dotted-quad IPv4 hosts in normal order (`192.168.1.254)/`).
    #[arg(long)]
    no_reverse_ipaddr: bool,
    /// Keep a leading `www`/`www2`/... label instead of stripping it.
    #[arg(long)]
    keep_www: bool,
}

impl ProfileArgs {
    /// The options these flags select.
    pub fn options(&self) -> Options {
        Options {
            with_scheme: self.with_scheme,
            trailing_comma: self.trailing_comma,
            reverse_ipaddr: !self.no_reverse_ipaddr,
            host_massage: !self.keep_www,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = args.profile.options();
    let stdout = io::stdout();
    let mut wtr = BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut out = Vec::with_capacity(256);
    let mut kept = 0u64;
    let mut emit =
        |url: &[u8], place: &dyn Fn() -> String, wtr: &mut BufWriter<_>| -> io::Result<()> {
            out.clear();
            if let Err(err) = key_into(url, &opts, &mut out) {
                kept += 1;
                if !args.quiet {
                    ukvs::report!("ukvs surt: {}: {err}; key is the URL unchanged", place());
                }
                echo_url(url, &mut out);
            }
            out.push(b'\n');
            wtr.write_all(&out)
        };

    if args.urls.is_empty() {
        let stdin = io::stdin();
        let mut rdr = stdin.lock();
        let mut line = Vec::with_capacity(256);
        let mut n = 0u64;
        loop {
            line.clear();
            let read = rdr.read_until(b'\n', &mut line).context("reading stdin")?;
            if read == 0 {
                break;
            }
            n += 1;
            if line.last() == Some(&b'\n') {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
            }
            emit(&line, &|| format!("stdin line {n}"), &mut wtr).context("writing keys")?;
        }
    } else {
        for (i, url) in args.urls.iter().enumerate() {
            let bytes = os_bytes(url);
            emit(&bytes, &|| format!("argument {}", i + 1), &mut wtr).context("writing keys")?;
        }
    }
    wtr.flush().context("writing keys")?;
    if kept > 0 && !args.quiet {
        ukvs::report!("ukvs surt: {kept} URL(s) kept unchanged because the reference rejects them");
    }
    Ok(ExitCode::SUCCESS)
}

/// Appends `url` as its own key (the reference rejected it). A line feed
/// inside it (possible only in an argument) is written `%0A`, so that every
/// input still gives exactly one output line.
fn echo_url(url: &[u8], out: &mut Vec<u8>) {
    for &b in url {
        if b == b'\n' {
            out.extend_from_slice(b"%0A");
        } else {
            out.push(b);
        }
    }
}

/// The raw bytes of a command-line argument (any bytes on Unix).
fn os_bytes(s: &OsString) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        s.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        s.to_string_lossy().into_owned().into_bytes()
    }
}

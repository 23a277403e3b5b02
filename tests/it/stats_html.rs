//! The HTML holdings report: a page built from the samples' index opens in
//! headless Chromium, shows the capture count and draws its charts; odd
//! reports (empty, one month, hostile names) still give a sound page.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use ukvs::stats::html::write_html;
use ukvs::stats::{is_header, Layout, Report, Scan};

use crate::util::{assert_ok, run};

/// Chromium is killed past this, so a hung browser cannot stall the suite.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);

// What a screenshot of the samples' page must show. Measured on it with
// Chromium 156: 698 colours, 1.49 % blue, 18.2 % not white; with its
// charts taken out: 222 colours, 0.00 % blue, 2.6 % not white (text,
// whose anti-aliasing gives grey shades only).
/// Distinct colours: the colour scale and anti-aliased shapes add many.
const MIN_COLOURS: usize = 400;
/// Share of blue pixels (cells, bars, the time line), which the page
/// holds nowhere but in its charts.
const MIN_BLUE: f64 = 0.005;
/// Share of pixels not (nearly) white: the heat map's grid and bars cover
/// far more of the page than text does.
const MIN_INK: f64 = 0.08;

fn report_of(lines: &[&[u8]]) -> Report {
    let mut scan = Scan::new(0);
    let layout = lines
        .iter()
        .find(|l| !is_header(l))
        .map(|l| Layout::guess(l))
        .unwrap_or(Layout::Json);
    for line in lines {
        scan.line(&layout, line).expect("a capture line");
    }
    scan.finish()
}

fn page(r: &Report, title: &str) -> String {
    let mut out = Vec::new();
    write_html(r, title, &mut out).expect("write_html");
    String::from_utf8(out).expect("UTF-8 page")
}

/// What every page must be: whole, offline and free of script.
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "a script in the page");
    assert!(!lower.contains("<link"), "a link element in the page");
    assert!(!html.contains("NaN"), "NaN in the page");
    let urls = lower.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(
        !urls.contains("http://") && !urls.contains("https://"),
        "a URL in the page"
    );
}

/// The element with `id`, from its start tag up to its end tag.
fn element<'d>(dom: &'d str, id: &str) -> &'d str {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in the DOM"));
    let start = dom[..at].rfind('<').unwrap();
    let end = at + dom[at..].find("</").unwrap();
    &dom[start..end]
}

fn browser() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
        .find(|p| p.is_file())
}

/// Runs the browser headless on `url` with `args`, standard output to
/// `stdout`, and a profile of its own in `dir`.
fn headless(browser: &Path, dir: &Path, args: &[&str], url: &str, stdout: File) -> ExitStatus {
    use std::os::unix::process::CommandExt;
    let stderr = File::create(dir.join("chromium.log")).unwrap();
    let mut child = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        // Its own process group, so that a timeout ends its helpers too.
        .process_group(0)
        .spawn()
        .expect("start chromium");
    let deadline = Instant::now() + BROWSER_TIMEOUT;
    loop {
        if let Some(status) = child.try_wait().expect("wait for chromium") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .stderr(Stdio::null())
                .status();
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium still running after {BROWSER_TIMEOUT:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// (distinct colours, share of blue pixels, share of non-white pixels).
fn measure(png_path: &Path) -> (usize, f64, f64) {
    let file = std::io::BufReader::new(File::open(png_path).expect("screenshot"));
    let mut decoder = png::Decoder::new(file);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("PNG size")];
    let info = reader.next_frame(&mut buf).expect("PNG pixels");
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "colour screenshot, got {:?}",
        info.color_type
    );
    let mut colours = std::collections::HashSet::new();
    let (mut blue, mut ink, mut all) = (0u64, 0u64, 0u64);
    for px in buf[..info.buffer_size()].chunks_exact(channels) {
        let (r, g, b) = (px[0] as i32, px[1] as i32, px[2] as i32);
        colours.insert((r, g, b));
        all += 1;
        if r.min(g).min(b) < 248 {
            ink += 1;
        }
        if b - r > 40 {
            blue += 1;
        }
    }
    let all = all.max(1) as f64;
    (colours.len(), blue as f64 / all, ink as f64 / all)
}

#[test]
fn page_of_samples_renders_in_chromium() {
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("samples");
    let o = run(
        &["index", "--format", "cdxj", samples.to_str().unwrap()],
        b"",
    );
    assert_ok(&o);
    let lines: Vec<&[u8]> = o
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let captures = lines.iter().filter(|l| !is_header(l)).count() as u64;
    let r = report_of(&lines);
    assert!(captures > 0);
    assert_eq!(r.captures, captures);
    let html = page(&r, "Samples <& \"holdings\">");
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), 4, "four charts");

    let Some(browser) = browser() else {
        eprintln!("skipped: chromium not installed");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.html");
    std::fs::write(&path, &html).unwrap();
    let url = format!("file://{}", path.display());

    let dom_path = dir.path().join("dom.html");
    let status = headless(
        &browser,
        dir.path(),
        &["--dump-dom"],
        &url,
        File::create(&dom_path).unwrap(),
    );
    let dom = std::fs::read_to_string(&dom_path).unwrap();
    assert!(
        status.success() && !dom.is_empty(),
        "chromium --dump-dom failed: {status}"
    );
    let cell = element(&dom, "captures");
    assert!(
        cell.contains(&format!("data-value=\"{captures}\""))
            && cell.ends_with(&format!(">{captures}")),
        "the capture count is not in the DOM: {cell}"
    );
    assert_eq!(dom.matches("<svg").count(), 4, "four charts in the DOM");
    assert!(dom.contains("<title>Samples &lt;&amp; \"holdings\"&gt;</title>"));

    let shot = dir.path().join("shot.png");
    let arg = format!("--screenshot={}", shot.display());
    let args = [arg.as_str(), "--window-size=1200,2000", "--hide-scrollbars"];
    let status = headless(
        &browser,
        dir.path(),
        &args,
        &url,
        File::create(dir.path().join("shot.out")).unwrap(),
    );
    assert!(status.success(), "chromium --screenshot failed: {status}");
    let (colours, blue, ink) = measure(&shot);
    eprintln!(
        "screenshot: {colours} colours, {:.2} % blue, {:.2} % not white",
        blue * 100.0,
        ink * 100.0
    );
    assert!(colours >= MIN_COLOURS, "{colours} colours: charts missing?");
    assert!(
        blue >= MIN_BLUE,
        "{:.2} % blue pixels: charts missing?",
        blue * 100.0
    );
    assert!(
        ink >= MIN_INK,
        "{:.2} % non-white pixels: page blank?",
        ink * 100.0
    );
}

#[test]
fn empty_report_gives_a_page_without_charts() {
    let r = report_of(&[]);
    let html = page(&r, "Empty");
    assert_self_contained(&html);
    let cell = element(&html, "captures");
    assert!(
        cell.contains("data-value=\"0\"") && cell.ends_with(">0"),
        "{cell}"
    );
    assert!(!html.contains("<svg"));
    assert!(html.contains("No data."));
}

#[test]
fn one_month_and_hostile_names() {
    let lines: [&[u8]; 3] = [
        br#"com,ex<a>&b)/ 20200115000000 {"mime": "<script>x</script>", "length": "1234567"}"#,
        br#"com,ex<a>&b)/ 20200116000000 {"mime": "text/html", "status": "'404'"}"#,
        br#"org,example)/?q=1 20200117000000 {"mime": "text/html", "status": "200"}"#,
    ];
    let r = report_of(&lines);
    assert_eq!(r.months.len(), 1);
    let html = page(&r, "One month");
    assert_self_contained(&html);
    assert_eq!(html.matches("<svg").count(), 4);
    assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"));
    assert!(html.contains("ex&lt;a&gt;&amp;b.com"));
    assert!(html.contains("&#39;404&#39;"));
    assert!(html.contains("1,234,567 (1.2 MiB)"));
}

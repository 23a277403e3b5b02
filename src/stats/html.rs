//! The holdings report as one self-contained HTML page: a table of totals
//! (captures, URLs, hosts, domains, bytes, revisits, time span), four
//! charts drawn as inline SVG (captures by year × month, mime × status,
//! top hosts, captures over time) and tables of mime types, statuses, top
//! hosts, top domains and TLDs.
//!
//! The page loads nothing: styles are inline, charts are SVG in the page,
//! there is no script, so it opens offline and can be mailed or archived
//! as one file. Every name from the report is escaped, since hosts and
//! mime types come from crawled data.

use std::collections::BTreeMap;
use std::error::Error;
use std::io::{self, Write};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::render::{group, human_bytes};
use super::{by_count, Report};

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Drawn = Result<(), Box<dyn Error>>;
type Label<'a> = Text<'a, (i32, i32), String>;

const FONT: &str = "sans-serif";
/// Plotters writes SVG font sizes as this / 1.24: about 13 px.
const FONT_SIZE: f64 = 16.0;
/// Rough advance of one label character at that size, to size label areas.
const CHAR_W: i32 = 8;
const ROW_H: i32 = 24;
const LABEL_MAX: usize = 40;
const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const BAR: RGBColor = RGBColor(0x31, 0x6b, 0xb0);
const EMPTY: RGBColor = RGBColor(0xee, 0xee, 0xee);
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);

const STYLE: &str = "body{font:15px/1.4 system-ui,sans-serif;color:#222;margin:2em auto;\
max-width:1100px;padding:0 1em}h1{font-size:1.6em}h2{font-size:1.15em;margin:1.6em 0 .5em}\
table{border-collapse:collapse}th,td{padding:.2em .7em;border-bottom:1px solid #ddd;\
text-align:left}td.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}\
.tables{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:0 2em}\
svg{max-width:100%;height:auto}.note{color:#666;font-size:.9em}td.name{word-break:break-all}";

/// Writes the report as an HTML page titled `title`.
pub fn write_html(r: &Report, title: &str, out: &mut dyn Write) -> io::Result<()> {
    let title = esc(title);
    let head = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
        <meta name=\"viewport\" content=\"width=device-width\">";
    writeln!(
        out,
        "{head}\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>"
    )?;
    writeln!(out, "<body>\n<h1>{title}</h1>")?;
    summary(r, out)?;

    let (years, cells, undated) = calendar(r);
    let year_labels: Vec<String> = years.iter().map(u32::to_string).collect();
    let month_labels: Vec<String> = MONTHS.iter().map(|m| m.to_string()).collect();
    let heat = heat_map(&year_labels, &month_labels, 64, &|y, m| {
        cells.get(&(years[y], m as u32 + 1)).copied().unwrap_or(0)
    })?;
    let note = match undated {
        0 => String::new(),
        n => format!(" {} captures without a date are not shown.", group(n)),
    };
    let note = format!("Darker cells hold more captures (log scale), grey cells none.{note}");
    chart(out, "Captures by year and month", heat, &note)?;

    // Every month from the first to the last, so that gaps show as zero.
    let months: Vec<(String, Option<u64>)> = years
        .iter()
        .flat_map(|&y| (1..=12).map(move |m| (y, m)))
        .map(|(y, m)| (format!("{y}-{m:02}"), cells.get(&(y, m)).copied()))
        .collect();
    let from = months.iter().position(|m| m.1.is_some()).unwrap_or(0);
    let to = months
        .iter()
        .rposition(|m| m.1.is_some())
        .map_or(from, |i| i + 1);
    let series: Vec<(String, u64)> = months[from..to]
        .iter()
        .map(|(k, n)| (k.clone(), n.unwrap_or(0)))
        .collect();
    let line = timeline(&series)?;
    chart(out, "Captures over time", line, "Captures per month.")?;

    let mimes = top_keys(&r.mime, 10);
    let statuses = top_keys(&r.status, 8);
    let heat = heat_map(&mimes, &statuses, 72, &|m, s| {
        r.mimestatus
            .get(&mimes[m])
            .and_then(|by| by.get(&statuses[s]))
            .copied()
            .unwrap_or(0)
    })?;
    let note = "The 10 most captured MIME types and 8 most frequent statuses (log scale).";
    chart(out, "MIME types × status codes", heat, note)?;

    let hosts: Vec<(String, u64)> = r.tophosts.iter().take(15).cloned().collect();
    let note = "Captures of the 15 largest hosts.";
    chart(out, "Top hosts", bars(&hosts)?, note)?;

    writeln!(out, "<div class=\"tables\">")?;
    let (mime, status) = (by_count(r.mime.clone()), by_count(r.status.clone()));
    let tables = [
        ("MIME types", "MIME type", &mime),
        ("Status codes", "Status", &status),
        ("Top hosts", "Host", &r.tophosts),
        ("Top registered domains", "Domain", &r.topdomains),
        ("Top-level domains", "TLD", &r.tlds),
    ];
    for (title, what, rows) in tables {
        table(out, title, what, rows, r.captures)?;
    }
    writeln!(out, "</div>\n</body>\n</html>")
}

fn summary(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<table class=\"summary\">")?;
    for (id, name, n) in [
        ("captures", "Captures", r.captures),
        ("urls", "URLs", r.urls),
        ("hosts", "Hosts", r.hosts),
        ("domains", "Registered domains", r.domains),
    ] {
        writeln!(
            out,
            "<tr><th>{name}</th><td id=\"{id}\" class=\"n\" data-value=\"{n}\">{}</td></tr>",
            group(n)
        )?;
    }
    let share = |n: u64| {
        format!(
            "{} ({:.1} %)",
            group(n),
            n as f64 * 100.0 / r.captures.max(1) as f64
        )
    };
    let mut rows = vec![
        (
            "Bytes",
            format!("{} ({})", group(r.bytes), human_bytes(r.bytes)),
        ),
        ("Revisits", share(r.revisits)),
        ("With a query", share(r.with_query)),
        ("First capture", datetime(r.first.as_deref())),
        ("Last capture", datetime(r.last.as_deref())),
    ];
    if r.urls > 0 {
        rows.push((
            "Captures per URL",
            format!("{:.2}", r.captures as f64 / r.urls as f64),
        ));
    }
    if !r.inexact.is_empty() {
        rows.push(("Not exact (merged shards)", esc(&r.inexact.join(", "))));
    }
    for (name, v) in rows {
        writeln!(out, "<tr><th>{name}</th><td class=\"n\">{v}</td></tr>")?;
    }
    writeln!(out, "</table>")
}

/// Writes a chart section; `svg` is empty when there was nothing to draw.
fn chart(out: &mut dyn Write, title: &str, svg: String, note: &str) -> io::Result<()> {
    writeln!(out, "<section>\n<h2>{title}</h2>")?;
    match svg.is_empty() {
        true => writeln!(out, "<p class=\"note\">No data.</p>")?,
        false => writeln!(
            out,
            "<figure>\n{svg}<figcaption class=\"note\">{note}</figcaption>\n</figure>"
        )?,
    }
    writeln!(out, "</section>")
}

fn table(
    out: &mut dyn Write,
    title: &str,
    what: &str,
    rows: &[(String, u64)],
    of: u64,
) -> io::Result<()> {
    const ROWS: usize = 50;
    writeln!(out, "<section>\n<h2>{title}</h2>")?;
    if rows.is_empty() {
        return writeln!(out, "<p class=\"note\">No data.</p>\n</section>");
    }
    writeln!(
        out,
        "<table>\n<tr><th>{what}</th><th>Captures</th><th>Share</th></tr>"
    )?;
    for (k, n) in rows.iter().take(ROWS) {
        let pct = *n as f64 * 100.0 / of.max(1) as f64;
        let (k, n) = (esc(k), group(*n));
        writeln!(
            out,
            "<tr><td class=\"name\">{k}</td><td class=\"n\">{n}</td>\
             <td class=\"n\">{pct:.1} %</td></tr>"
        )?;
    }
    if rows.len() > ROWS {
        writeln!(
            out,
            "<tr><td class=\"note\" colspan=\"3\">and {} more</td></tr>",
            group((rows.len() - ROWS) as u64)
        )?;
    }
    writeln!(out, "</table>\n</section>")
}

/// The years to show (every year from the first to the last, or only
/// those with captures when a stray date would stretch the span to
/// centuries), captures by (year, month), and captures without a month.
fn calendar(r: &Report) -> (Vec<u32>, BTreeMap<(u32, u32), u64>, u64) {
    let mut cells = BTreeMap::new();
    let mut undated = 0;
    for (k, &n) in &r.months {
        let ym = (k.len() == 6 && k.bytes().all(|b| b.is_ascii_digit()))
            .then(|| (k[..4].parse().unwrap_or(0), k[4..].parse().unwrap_or(0)))
            .filter(|(_, m)| (1..=12).contains(m));
        match ym {
            Some(ym) => *cells.entry(ym).or_insert(0) += n,
            None => undated += n,
        }
    }
    let mut years: Vec<u32> = cells.keys().map(|&(y, _)| y).collect();
    years.dedup();
    if let (Some(&a), Some(&b)) = (years.first(), years.last()) {
        if b - a < 100 {
            years = (a..=b).collect();
        }
    }
    (years, cells, undated)
}

fn top_keys(m: &BTreeMap<String, u64>, n: usize) -> Vec<String> {
    by_count(m.clone())
        .into_iter()
        .take(n)
        .map(|(k, _)| k)
        .collect()
}

/// Draws on a fresh SVG canvas and returns the `<svg>` element.
fn svg(w: i32, h: i32, draw: impl FnOnce(&Area) -> Drawn) -> io::Result<String> {
    let mut buf = String::new();
    let drawn = {
        let root = SVGBackend::with_string(&mut buf, (w as u32, h as u32)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(Box::from)
            .and_then(|_| draw(&root))
            .and_then(|_| root.present().map_err(Box::from))
    };
    drawn.map_err(|e| io::Error::other(format!("drawing a chart: {e}")))?;
    Ok(buf)
}

fn text<'a>(s: &str, at: (i32, i32), h: HPos, color: &'a RGBColor) -> Label<'a> {
    let style = TextStyle::from((FONT, FONT_SIZE).into_font())
        .color(color)
        .pos(Pos::new(h, VPos::Center));
    Text::new(label(s), at, style)
}

/// Long names cut to a width a chart can spare.
fn label(s: &str) -> String {
    match s.chars().count() > LABEL_MAX {
        true => s.chars().take(LABEL_MAX - 1).chain(['…']).collect(),
        false => s.to_string(),
    }
}

fn label_width(labels: &[String]) -> i32 {
    let chars = labels
        .iter()
        .map(|l| label(l).chars().count())
        .max()
        .unwrap_or(0);
    chars as i32 * CHAR_W + 16
}

/// A grid of rows × columns coloured by count; "" when there are no rows
/// or columns. Counts span orders of magnitude (a crawl month against a
/// quiet one), so the colour follows the logarithm.
fn heat_map(
    rows: &[String],
    cols: &[String],
    cell_w: i32,
    value: &dyn Fn(usize, usize) -> u64,
) -> io::Result<String> {
    if rows.is_empty() || cols.is_empty() {
        return Ok(String::new());
    }
    let max = (0..rows.len())
        .flat_map(|r| (0..cols.len()).map(move |c| (r, c)))
        .map(|(r, c)| value(r, c))
        .max()
        .unwrap_or(0);
    let left = label_width(rows);
    let top = ROW_H + 4;
    let w = left + cols.len() as i32 * cell_w + 8;
    let h = top + rows.len() as i32 * ROW_H + 8;
    svg(w, h, |root| {
        for (c, name) in cols.iter().enumerate() {
            let x = left + c as i32 * cell_w + cell_w / 2;
            root.draw(&text(name, (x, top / 2), HPos::Center, &INK))?;
        }
        for (r, name) in rows.iter().enumerate() {
            let y = top + r as i32 * ROW_H;
            root.draw(&text(name, (left - 8, y + ROW_H / 2), HPos::Right, &INK))?;
            for c in 0..cols.len() {
                let n = value(r, c);
                let x = left + c as i32 * cell_w;
                let t = match (n, max) {
                    (0, _) | (_, 0) => 0.0,
                    _ => ((n as f64).ln_1p() / (max as f64).ln_1p()).clamp(0.0, 1.0),
                };
                let fill = if n == 0 { EMPTY } else { shade(t) };
                let cell = Rectangle::new(
                    [(x + 1, y + 1), (x + cell_w - 1, y + ROW_H - 1)],
                    fill.filled(),
                );
                root.draw(&cell)?;
                let count = group(n);
                if n > 0 && count.len() as i32 * CHAR_W < cell_w - 4 {
                    let ink = if t > 0.55 { &WHITE } else { &INK };
                    root.draw(&text(
                        &count,
                        (x + cell_w / 2, y + ROW_H / 2),
                        HPos::Center,
                        ink,
                    ))?;
                }
            }
        }
        Ok(())
    })
}

/// Pale to deep blue as `t` goes from 0 to 1; the pale end is still
/// clearly darker than an empty cell.
fn shade(t: f64) -> RGBColor {
    let (lo, hi) = ((0xcf, 0xe1, 0xf2), (0x08, 0x30, 0x6b));
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
    RGBColor(mix(lo.0, hi.0), mix(lo.1, hi.1), mix(lo.2, hi.2))
}

/// Horizontal bars, one per name, longest first; "" without names.
fn bars(rows: &[(String, u64)]) -> io::Result<String> {
    if rows.is_empty() {
        return Ok(String::new());
    }
    let names: Vec<String> = rows.iter().map(|(k, _)| k.clone()).collect();
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    let left = label_width(&names);
    let span = 560;
    let h = rows.len() as i32 * ROW_H + 8;
    svg(left + span + 100, h, |root| {
        for (i, (name, n)) in rows.iter().enumerate() {
            let y = 4 + i as i32 * ROW_H;
            let len = ((*n as f64 / max as f64) * span as f64).round() as i32;
            root.draw(&text(name, (left - 8, y + ROW_H / 2), HPos::Right, &INK))?;
            root.draw(&Rectangle::new(
                [(left, y + 3), (left + len.max(1), y + ROW_H - 3)],
                BAR.filled(),
            ))?;
            root.draw(&text(
                &group(*n),
                (left + len + 6, y + ROW_H / 2),
                HPos::Left,
                &INK,
            ))?;
        }
        Ok(())
    })
}

/// Captures per month as a filled line; "" without months.
fn timeline(series: &[(String, u64)]) -> io::Result<String> {
    if series.is_empty() {
        return Ok(String::new());
    }
    // Half a month of room each side keeps a single month off the frame
    // and the x range from being empty.
    let x_max = series.len() as f64 - 0.5;
    let y_max = series.iter().map(|s| s.1).max().unwrap_or(0).max(1) as f64 * 1.1;
    let x_label = |x: &f64| match whole(*x).and_then(|i| series.get(i as usize)) {
        Some((month, _)) => month.clone(),
        None => String::new(),
    };
    let y_label = |y: &f64| whole(*y).map(group).unwrap_or_default();
    svg(1000, 300, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(12)
            .x_label_area_size(28)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5..x_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(series.len().min(10))
            .y_labels(6)
            .max_light_lines(0)
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .label_style((FONT, FONT_SIZE))
            .draw()?;
        let points: Vec<(f64, f64)> = series
            .iter()
            .enumerate()
            .map(|(i, s)| (i as f64, s.1 as f64))
            .collect();
        let mut area = vec![(0.0, 0.0)];
        area.extend(&points);
        area.push((points.len() as f64 - 1.0, 0.0));
        chart.draw_series([Polygon::new(area, BAR.mix(0.25).filled())])?;
        chart.draw_series(LineSeries::new(points.iter().copied(), BAR.stroke_width(2)))?;
        // Over years a lone crawl month is a hairline spike: a dot marks
        // each month with captures, unless they are so many that the line
        // shows them anyway.
        let dots = points.iter().filter(|p| p.1 > 0.0);
        if dots.clone().count() <= 120 {
            chart.draw_series(dots.map(|&p| Circle::new(p, 3, BAR.filled())))?;
        }
        Ok(())
    })
}

/// An axis value that is a whole number; axes label only those, as
/// fractions of a month or a capture mean nothing.
fn whole(v: f64) -> Option<u64> {
    let i = v.round();
    ((v - i).abs() < 1e-6 && i >= 0.0).then_some(i as u64)
}

/// `19970417175710` -> `1997-04-17 17:57:10`; other text as it is.
fn datetime(dt: Option<&str>) -> String {
    let Some(dt) = dt else { return "-".into() };
    if dt.len() != 14 || !dt.bytes().all(|b| b.is_ascii_digit()) {
        return esc(dt);
    }
    let [y, mo, d, h, mi, s] = [0, 4, 6, 8, 10, 12].map(|i| &dt[i..(i + 2).max(4)]);
    format!("{y}-{mo}-{d} {h}:{mi}:{s}")
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

//! The text report (for a terminal) and the CSV form of a [`Report`].

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::{by_count, Report};

/// Bars of the text report are at most this wide.
const BAR: usize = 30;

/// Writes the report for reading in a terminal: totals, then each
/// distribution as aligned rows with a share and a bar.
pub fn write_text(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    let share = |n: u64, of: u64| match of {
        0 => 0.0,
        of => n as f64 * 100.0 / of as f64,
    };
    writeln!(out, "Captures        {:>16}", group(r.captures))?;
    writeln!(out, "URLs            {:>16}", group(r.urls))?;
    writeln!(out, "Hosts           {:>16}", group(r.hosts))?;
    writeln!(out, "Domains         {:>16}", group(r.domains))?;
    writeln!(
        out,
        "Bytes           {:>16}  ({})",
        group(r.bytes),
        human_bytes(r.bytes)
    )?;
    writeln!(
        out,
        "Revisits        {:>16}  ({:.1} %)",
        group(r.revisits),
        share(r.revisits, r.captures)
    )?;
    writeln!(
        out,
        "With a query    {:>16}  ({:.1} %)",
        group(r.with_query),
        share(r.with_query, r.captures)
    )?;
    writeln!(
        out,
        "First capture   {:>16}",
        r.first.as_deref().unwrap_or("-")
    )?;
    writeln!(
        out,
        "Last capture    {:>16}",
        r.last.as_deref().unwrap_or("-")
    )?;
    if r.urls > 0 {
        writeln!(
            out,
            "Captures per URL{:>16.2}",
            r.captures as f64 / r.urls as f64
        )?;
    }
    if !r.inexact.is_empty() {
        writeln!(out, "Not exact       {}", r.inexact.join(", "))?;
    }
    let years: Vec<(String, u64)> = r.years.iter().map(|(k, &n)| (k.clone(), n)).collect();
    table(out, "Captures by year", &years, r.captures)?;
    let mime = first(&by_count(r.mime.clone()), 20);
    let status = first(&by_count(r.status.clone()), 20);
    table(out, "MIME types", &mime, r.captures)?;
    table(out, "Status codes", &status, r.captures)?;
    table(out, "Top hosts", &r.tophosts, r.captures)?;
    table(out, "Top registered domains", &r.topdomains, r.captures)?;
    table(out, "Top-level domains", &first(&r.tlds, 20), r.captures)?;
    table(out, "Captures per URL (URLs)", &r.captures_per_url, r.urls)?;
    let mut depth: BTreeMap<u64, u64> = BTreeMap::new();
    for (p, qs) in &r.pathquery {
        let d = p.trim_start_matches('P').parse().unwrap_or(0);
        *depth.entry(d).or_insert(0) += qs.values().sum::<u64>();
    }
    let depth: Vec<(String, u64)> = depth.into_iter().map(|(d, n)| (d.to_string(), n)).collect();
    table(out, "Path depth", &depth, r.captures)?;
    Ok(())
}

fn first(v: &[(String, u64)], n: usize) -> Vec<(String, u64)> {
    v.iter().take(n).cloned().collect()
}

fn table(out: &mut dyn Write, title: &str, rows: &[(String, u64)], of: u64) -> io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    writeln!(out, "\n{title}")?;
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .min(48);
    let max = rows.iter().map(|r| r.1).max().unwrap_or(0).max(1);
    for (k, n) in rows {
        let name: String = k.chars().take(48).collect();
        let pct = if of == 0 {
            0.0
        } else {
            *n as f64 * 100.0 / of as f64
        };
        let bar = "#".repeat(((*n as f64 / max as f64) * BAR as f64).round() as usize);
        writeln!(
            out,
            "  {name:<width$}  {:>14}  {pct:5.1} %  {bar}",
            group(*n)
        )?;
    }
    Ok(())
}

/// 1234567 -> `1,234,567`.
pub(crate) fn group(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units, one decimal.
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    match u {
        0 => format!("{n} B"),
        _ => format!("{v:.1} {}", UNITS[u]),
    }
}

/// Writes the report as CSV rows `figure,key,value` (RFC 4180 quoting):
/// totals have an empty key, distributions one row per entry, nested
/// ones (`mimestatus`, `pathquery`) a key `outer inner`.
pub fn write_csv(r: &Report, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "figure,key,value")?;
    let totals = [
        ("captures", r.captures),
        ("urls", r.urls),
        ("hosts", r.hosts),
        ("domains", r.domains),
        ("bytes", r.bytes),
        ("revisits", r.revisits),
        ("with_query", r.with_query),
    ];
    for (name, n) in totals {
        writeln!(out, "{name},,{n}")?;
    }
    for (name, v) in [("first", &r.first), ("last", &r.last)] {
        writeln!(out, "{name},,{}", csv(v.as_deref().unwrap_or("")))?;
    }
    let maps: [(&str, &BTreeMap<String, u64>); 4] = [
        ("years", &r.years),
        ("months", &r.months),
        ("mime", &r.mime),
        ("status", &r.status),
    ];
    for (name, m) in maps {
        for (k, n) in m {
            writeln!(out, "{name},{},{n}", csv(k))?;
        }
    }
    for (name, m) in [("mimestatus", &r.mimestatus), ("pathquery", &r.pathquery)] {
        for (a, inner) in m {
            for (b, n) in inner {
                writeln!(out, "{name},{},{n}", csv(&format!("{a} {b}")))?;
            }
        }
    }
    let lists: [(&str, &[(String, u64)]); 4] = [
        ("captures_per_url", &r.captures_per_url),
        ("tlds", &r.tlds),
        ("tophosts", &r.tophosts),
        ("topdomains", &r.topdomains),
    ];
    for (name, v) in lists {
        for (k, n) in v {
            writeln!(out, "{name},{},{n}", csv(k))?;
        }
    }
    Ok(())
}

/// A CSV field, quoted when it holds a comma, quote or line break.
fn csv(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

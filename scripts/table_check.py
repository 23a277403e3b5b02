#!/usr/bin/env python3
"""Checks a capture table (`ukvs table`, `ukvs index --table`) against the
index it was made from, with pyarrow and with DuckDB.

    table_check.py rows INDEX TABLE [--crawl NAME] [--subset NAME]
        every row equals the index line it comes from, in order: the
        expected row is computed here from the line alone (URL split with
        urllib, host domains with tldextract's bundled Public Suffix
        List, fetch_time from the datetime), then compared with the rows
        pyarrow reads and the rows DuckDB reads.
    table_check.py schema TABLE SCHEMA_JSON
        the table's first columns are Common Crawl's (names and types of
        cc-index-schema-flat.json, Spark types as Parquet stores them).
    table_check.py queries CDXJ TABLE_DIR CRAWL
        Common Crawl's example queries (src/sql/examples/cc-index/ of
        cc-index-table, adapted to DuckDB) over the table give the
        answers computed here from the CDXJ index.
    table_check.py same TABLE_A TABLE_B
        two tables hold the same rows in the same order (files read in
        path order), partition columns included.

Prints what differs and exits 1; prints `ok ...` and exits 0 otherwise.
"""

import datetime
import json
import os
import sys
from urllib.parse import urlsplit

CDX_NAMES = {
    7: ["url", "mime", "status", "digest", "redirect", "offset", "filename"],
    8: ["url", "mime", "status", "digest", "redirect", "robotflags", "offset", "filename"],
    9: ["url", "mime", "status", "digest", "redirect", "robotflags", "length", "offset",
        "filename"],
}
CDX_LETTERS = {"a": "url", "m": "mime", "s": "status", "k": "digest", "r": "redirect",
               "M": "robotflags", "S": "length", "V": "offset", "g": "filename"}


def extractor(private):
    import tldextract
    # The list bundled with the package: no network.
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None,
                                 include_psl_private_domains=private)


def lines_of(index):
    """(names, data lines) of an index file: headers name CDX columns."""
    names = ["offset", "digest"]
    out = []
    with open(index, "rb") as f:
        for raw in f:
            line = raw.rstrip(b"\n").decode("utf-8", "replace")
            if not line or line[0] in "! ":
                if line.startswith(" CDX"):
                    names = [CDX_LETTERS.get(c, c) for c in line.split()[3:]]
                elif line.startswith("!fields"):
                    names = json.loads(line.split(" ", 1)[1])["values"]
                continue
            out.append(line)
    return names, out


def members(line, names):
    head, sep, js = line.partition(" {")
    parts = head.split(" ")
    values = parts[2:]
    if not sep and len(values) != len(names) and len(values) in CDX_NAMES:
        names = CDX_NAMES[len(values)]
    m = {}
    for n, v in zip(names, values):
        if v != "-":
            m[n] = v
    if sep:
        for k, v in json.loads("{" + js).items():
            m.setdefault(k, v)
    return parts[0], parts[1], m


def host_columns(host, icann, private):
    cols = {"url_host_name": host}
    ip = host.startswith("[") or all(p.isdigit() for p in host.split(".") if p) and host
    labels = [] if ip or not host else host.rstrip(".").split(".")[::-1]
    for i, name in enumerate(["tld", "2nd_last_part", "3rd_last_part", "4th_last_part",
                              "5th_last_part"]):
        cols["url_host_" + name] = labels[i] if i < len(labels) else None
    cols["url_host_name_reversed"] = ".".join(labels) if labels else None
    for prefix, ext in (("registry", icann), ("private", private)):
        suffix = domain = None
        if labels:
            r = ext(host)
            if r.suffix:
                suffix = r.suffix
                domain = f"{r.domain}.{r.suffix}" if r.domain else None
        key = "registered_domain" if prefix == "registry" else "private_domain"
        cols[f"url_host_{prefix}_suffix"] = suffix
        cols[f"url_host_{key}"] = domain
    return cols


def fetch_time(dt):
    """A 14-digit datetime as an instant; parts out of range clamped (a
    minute 88 is 59), as ukvs reads every datetime."""
    import calendar
    y, mo, d, h, mi, se = (int(dt[0:4]), int(dt[4:6]), int(dt[6:8]), int(dt[8:10]),
                           int(dt[10:12]), int(dt[12:14]))
    y = min(max(y, 1900), 2999)
    mo = min(max(mo, 1), 12)
    d = min(max(d, 1), calendar.monthrange(y, mo)[1])
    return datetime.datetime(y, mo, d, min(h, 23), min(mi, 59), min(se, 59),
                             tzinfo=datetime.timezone.utc)


def expected_row(line, names, crawl, subset, icann, private):
    key, dt, m = members(line, names)
    url = m.get("url") or ""
    s = urlsplit(url)
    host = (s.hostname or "") if s.netloc else (s.path if s.scheme == "dns" else "")
    port = s.port if s.netloc else None
    status = m.get("status")
    status = int(status) if status is not None and str(status).isdigit() else -1
    path = s.path if s.netloc else ("" if s.scheme == "dns" else s.path)
    mime = m.get("mime")
    digest = m.get("digest")
    if digest and digest.startswith("sha1:"):
        digest = digest[5:]
    if subset is None:
        if path == "/robots.txt":
            subset = "robotstxt"
        elif 200 <= status < 300 or mime == "warc/revisit":
            subset = "warc"
        else:
            subset = "crawldiagnostics"
    row = {
        "url_surtkey": key,
        "url": url,
        "url_protocol": s.scheme,
        "url_port": port,
        "url_path": path,
        "url_query": s.query if "?" in url.split("#")[0] else None,
        "fetch_time": fetch_time(dt),
        "fetch_status": status,
        "fetch_redirect": m.get("redirect"),
        "content_digest": digest,
        "content_mime_type": mime,
        "content_mime_detected": m.get("mime-detected"),
        "content_charset": m.get("charset"),
        "content_languages": m.get("languages"),
        "content_truncated": m.get("truncated"),
        "warc_filename": m.get("filename", ""),
        "warc_record_offset": int(m["offset"]) if "offset" in m else None,
        "warc_record_length": int(m["length"]) if "length" in m else None,
        "warc_segment": None,
        "crawl": crawl,
        "subset": subset,
        "record_type": m.get("record_type"),
        "revisit_refers_to_uri": m.get("refers_to_uri"),
        "fetch_ip": m.get("ip"),
        "fetch_time_raw": m.get("datetime_raw"),
        "content_payload_digest": m.get("payload_digest"),
    }
    row.update(host_columns(host.lower(), icann, private))
    extra = {k: v for k, v in m.items() if k not in OWN_COLUMNS}
    row["extra_fields"] = extra or None
    return row


# Members with a column of their own (the others are in extra_fields).
OWN_COLUMNS = {
    "url", "status", "redirect", "digest", "mime", "mime-detected", "charset", "languages",
    "truncated", "filename", "offset", "length", "record_type", "refers_to_uri",
    "refers_to_date", "refers_to", "profile", "payload_digest", "ip", "datetime_raw",
    "serial", "describes", "replaces", "urlkey", "timestamp",
}


def read_rows_arrow(table):
    import pyarrow.dataset as ds
    if os.path.isdir(table):
        files = sorted(os.path.join(r, f) for r, _, fs in os.walk(table) for f in fs
                       if f.endswith(".parquet"))
        rows = []
        for f in files:
            part = dict(p.split("=", 1) for p in os.path.relpath(os.path.dirname(f), table)
                        .split(os.sep))
            for r in ds.dataset(f, format="parquet").to_table().to_pylist():
                r.update(part)
                rows.append(r)
        return rows
    return ds.dataset(table, format="parquet").to_table().to_pylist()


def duckdb_source(table):
    if os.path.isdir(table):
        return f"read_parquet('{table}/**/*.parquet', hive_partitioning = true)"
    return f"read_parquet('{table}')"


def read_rows_duckdb(table):
    import duckdb
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    # Insertion order is kept: rows in file order, files in path order.
    rel = con.sql(f"SELECT * FROM {duckdb_source(table)}")
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def by_path(rows):
    """DuckDB reads a directory's files in its own order: sort rows of a
    directory by (crawl, subset) stably, as pyarrow's path order gives."""
    return sorted(rows, key=lambda r: (r["crawl"], r["subset"]))


def cmd_rows(index, table, crawl, subset):
    icann, private = extractor(False), extractor(True)
    names, lines = lines_of(index)
    expected = [expected_row(l, names, crawl, subset, icann, private) for l in lines]
    bad = 0
    for reader in ("pyarrow", "duckdb"):
        rows = read_rows_arrow(table) if reader == "pyarrow" else read_rows_duckdb(table)
        exp = expected
        if os.path.isdir(table):
            rows, exp = by_path(rows), by_path(expected)
        if len(rows) != len(exp):
            print(f"{reader}: {len(rows)} rows, the index has {len(exp)} lines")
            bad += 1
            continue
        for i, (got, want) in enumerate(zip(rows, exp)):
            for k, v in want.items():
                g = got.get(k)
                if k == "extra_fields" and g is not None:
                    g = json.loads(g)
                if isinstance(g, datetime.datetime) and g.tzinfo is None:
                    g = g.replace(tzinfo=datetime.timezone.utc)
                if g != v:
                    bad += 1
                    if bad <= 20:
                        print(f"{reader}: row {i} ({want['url_surtkey']}): {k} is {g!r}, "
                              f"the line says {v!r}")
    if bad:
        return 1
    print(f"ok {len(expected)} rows equal their lines (pyarrow, duckdb)")
    return 0


SPARK_TYPES = {"string": "string", "integer": "int32", "short": "int16",
               "timestamp": "timestamp[us, tz=UTC]", "long": "int64"}


def cmd_schema(table, schema_json):
    import pyarrow.parquet as pq
    import duckdb
    got = pq.read_schema(table)
    want = json.load(open(schema_json))["fields"]
    bad = 0
    for i, f in enumerate(want):
        g = got.field(i)
        if g.name != f["name"] or str(g.type) != SPARK_TYPES[f["type"]]:
            print(f"column {i}: {g.name} {g.type}, Common Crawl's is {f['name']} {f['type']}")
            bad += 1
    duck = duckdb.sql(f"DESCRIBE SELECT * FROM read_parquet('{table}')").fetchall()
    duck_types = {"string": "VARCHAR", "integer": "INTEGER", "short": "SMALLINT",
                  "timestamp": "TIMESTAMP WITH TIME ZONE"}
    for i, f in enumerate(want):
        if duck[i][0] != f["name"] or duck[i][1] != duck_types[f["type"]]:
            print(f"duckdb column {i}: {duck[i][0]} {duck[i][1]}, Common Crawl's is "
                  f"{f['name']} {f['type']}")
            bad += 1
    if bad:
        return 1
    print(f"ok the first {len(want)} columns are Common Crawl's")
    return 0


# Common Crawl's example queries (cc-index-table, src/sql/examples/cc-index/,
# Apache-2.0), with `"ccindex"."ccindex"` the table and the crawl ours;
# host_length_distrib's Presto `cardinality(split(...))` is DuckDB's
# `len(string_split(...))`.
QUERIES = {
    "count-by-partition": """
SELECT COUNT(*) as n_captures,
       crawl,
       subset
FROM ccindex
GROUP BY crawl, subset""",
    "count-fetch-status": """
SELECT COUNT(*) as count,
       fetch_status
FROM ccindex
WHERE crawl = '{crawl}'
  AND subset = 'crawldiagnostics'
GROUP BY  fetch_status
ORDER BY  count DESC""",
    "count-by-tld-page-host-domain": """
SELECT COUNT(*) AS n_pages,
       url_host_tld AS tld,
       COUNT(DISTINCT url_host_name) AS n_hosts,
       COUNT(DISTINCT url_host_registered_domain) AS n_domains
FROM ccindex
WHERE crawl = '{crawl}'
  AND subset = 'warc'
GROUP BY  url_host_tld
ORDER BY  n_pages DESC""",
    "average-warc-record-length-by-mime-type": """
SELECT COUNT(*) as n_pages,
       COUNT(*) * 100.0 / SUM(COUNT(*)) OVER() as perc_pages,
       AVG(warc_record_length) as avg_warc_record_length,
       SUM(warc_record_length) as sum_warc_record_length,
       SUM(warc_record_length) * 100.0 / SUM(SUM(warc_record_length)) OVER() as perc_warc_storage,
       content_mime_type
FROM ccindex
WHERE crawl = '{crawl}'
  AND subset = 'warc'
GROUP BY content_mime_type
ORDER BY n_pages DESC""",
    "get-records-of-domain": """
SELECT url,
       warc_filename,
       warc_record_offset,
       warc_record_length
FROM ccindex
WHERE crawl = '{crawl}'
  AND subset = 'warc'
  AND url_host_registered_domain = '{domain}'
LIMIT 1000""",
    "host_length_distrib": """
WITH t AS (SELECT url_host_name AS host_name,
                  len(string_split(url_host_name, '.')) AS host_name_length
           FROM ccindex
           WHERE crawl = '{crawl}'
             AND subset = 'warc')
SELECT COUNT(*) AS n_pages,
       COUNT(DISTINCT host_name) AS uniq_hosts,
       host_name_length
FROM t
GROUP BY  host_name_length
ORDER BY  host_name_length ASC""",
}


def python_answers(cdxj, crawl):
    """The queries' answers from the CDXJ lines, by plain Python."""
    from collections import Counter, defaultdict
    icann = extractor(False)
    caps = []
    names, lines = lines_of(cdxj)
    for line in lines:
        key, dt, m = members(line, names)
        url = m.get("url", "")
        host = (urlsplit(url).hostname or "").lower()
        status = int(m["status"]) if str(m.get("status", "")).isdigit() else -1
        path = urlsplit(url).path
        mime = m.get("mime")
        subset = ("robotstxt" if path == "/robots.txt" else
                  "warc" if 200 <= status < 300 or mime == "warc/revisit" else "crawldiagnostics")
        r = icann(host)
        domain = f"{r.domain}.{r.suffix}" if r.domain and r.suffix else None
        caps.append(dict(url=url, host=host, status=status, subset=subset, mime=mime,
                         tld=host.split(".")[-1] if host else None, domain=domain,
                         filename=m.get("filename"), offset=int(m["offset"]),
                         length=int(m["length"])))
    warc = [c for c in caps if c["subset"] == "warc"]
    a = {}
    a["count-by-partition"] = sorted(
        (n, crawl, s) for s, n in Counter(c["subset"] for c in caps).items())
    a["count-fetch-status"] = sorted(
        (n, s) for s, n in Counter(c["status"] for c in caps
                                   if c["subset"] == "crawldiagnostics").items())
    by_tld = defaultdict(list)
    for c in warc:
        by_tld[c["tld"]].append(c)
    a["count-by-tld-page-host-domain"] = sorted(
        (len(cs), t, len({c["host"] for c in cs}), len({c["domain"] for c in cs} - {None}))
        for t, cs in by_tld.items())
    by_mime = defaultdict(list)
    for c in warc:
        by_mime[c["mime"]].append(c["length"])
    total_n, total_len = len(warc), sum(c["length"] for c in warc)
    a["average-warc-record-length-by-mime-type"] = sorted(
        (len(ls), round(len(ls) * 100.0 / total_n, 6), round(sum(ls) / len(ls), 6), sum(ls),
         round(sum(ls) * 100.0 / total_len, 6), m) for m, ls in by_mime.items())
    domain = Counter(c["domain"] for c in warc if c["domain"]).most_common(1)[0][0]
    a["get-records-of-domain"] = sorted(
        (c["url"], c["filename"], c["offset"], c["length"]) for c in warc
        if c["domain"] == domain)
    by_len = defaultdict(list)
    for c in warc:
        by_len[len(c["host"].split("."))].append(c["host"])
    a["host_length_distrib"] = sorted(
        (len(hs), len(set(hs)), n) for n, hs in by_len.items())
    return a, domain


def cmd_queries(cdxj, table, crawl):
    import duckdb
    want, domain = python_answers(cdxj, crawl)
    con = duckdb.connect()
    con.execute(f"CREATE VIEW ccindex AS SELECT * FROM {duckdb_source(table)}")
    bad = 0
    for name, sql in QUERIES.items():
        got = con.sql(sql.format(crawl=crawl, domain=domain)).fetchall()
        got = sorted(tuple(round(v, 6) if isinstance(v, float) else v for v in r)
                     for r in got)
        if got != want[name]:
            print(f"{name}: DuckDB over the table gives {got[:5]}..., "
                  f"the CDXJ gives {want[name][:5]}...")
            bad += 1
        elif not got:
            print(f"{name}: no rows (the corpus should exercise it)")
            bad += 1
    if bad:
        return 1
    print(f"ok {len(QUERIES)} queries answer as the CDXJ does")
    return 0


def cmd_same(a, b):
    ra, rb = read_rows_arrow(a), read_rows_arrow(b)
    if ra == rb:
        print(f"ok {len(ra)} rows the same")
        return 0
    print(f"{len(ra)} rows and {len(rb)} rows")
    for i, (x, y) in enumerate(zip(ra, rb)):
        if x != y:
            print(f"row {i} differs: {x} / {y}")
            break
    return 1


def main(argv):
    cmd, rest = argv[1], argv[2:]
    opts = {}
    while len(rest) >= 2 and rest[-2].startswith("--"):
        opts[rest[-2][2:]] = rest[-1]
        rest = rest[:-2]
    if cmd == "rows":
        return cmd_rows(rest[0], rest[1], opts.get("crawl"), opts.get("subset"))
    if cmd == "schema":
        return cmd_schema(*rest)
    if cmd == "queries":
        return cmd_queries(*rest)
    if cmd == "same":
        return cmd_same(*rest)
    raise SystemExit(f"unknown command {cmd}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))

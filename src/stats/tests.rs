use super::*;

fn scan(lines: &[&str]) -> Report {
    let layout = Layout::guess(lines[0].as_bytes());
    let mut s = Scan::new(10);
    for l in lines {
        s.line(&layout, l.as_bytes()).unwrap();
    }
    s.finish()
}

#[test]
fn hosts_are_written_the_usual_way() {
    assert_eq!(dotted_host(b"com,example,www"), "www.example.com");
    assert_eq!(dotted_host(b"com,example:8080"), "example.com:8080");
    assert_eq!(dotted_host(b"http://(com,example,"), "example.com");
    assert_eq!(dotted_host(b"192.168.1.1"), "192.168.1.1");
    assert_eq!(dotted_host(b"dns:www.example.com"), "dns:www.example.com");
    assert_eq!(registered_domain("www.example.co.uk"), "example.co.uk");
    assert_eq!(registered_domain("a.b.example.com:8080"), "example.com");
    assert_eq!(registered_domain("192.168.1.1"), "192.168.1.1");
    assert_eq!(tld("www.example.co.uk"), "uk");
    assert_eq!(tld("10.0.0.1:80"), "-");
}

#[test]
fn path_and_query_depth_count_as_cdxsummary_does() {
    assert_eq!(path_query_depth(b"com,example)/"), (0, 0));
    assert_eq!(path_query_depth(b"com,example)/a/b/"), (2, 0));
    assert_eq!(path_query_depth(b"com,example)/a//b?x=1&y=2"), (3, 2));
    assert_eq!(path_query_depth(b"dns:example.com"), (0, 0));
}

#[test]
fn a_key_has_a_query_when_it_holds_a_question_mark() {
    assert_eq!(depths(b"com,example)/a/b"), (2, 0, false));
    assert_eq!(depths(b"com,example)/a?x=1"), (1, 1, true));
    // An empty query, a `?` before the `)`, a key without `)`.
    assert_eq!(depths(b"com,example)/a?"), (1, 0, true));
    assert_eq!(depths(b"com,ex?ample)/a"), (1, 0, true));
    assert_eq!(depths(b"dns:example.com?"), (0, 0, true));
    assert_eq!(depths(b"dns:example.com"), (0, 0, false));
}

#[test]
fn json_members_are_read_without_parsing_the_block() {
    let j = br#"{"url": "http://x/?\"mime\": 1\\", "mime": "text/html", "status": 200, "length": "55"}"#;
    assert_eq!(
        json_members(j),
        [Some(&b"text/html"[..]), Some(&b"200"[..]), Some(&b"55"[..])]
    );
    let nested = br#"{"a": {"mime": "x"}, "mime": "y"}"#;
    assert_eq!(json_members(nested)[0], Some(&b"x"[..]));
    assert_eq!(
        json_members(br#"{"mime": null, "status":"-"}"#),
        [None, Some(&b"-"[..]), None]
    );
    assert_eq!(
        json_members(br#"{"mime": "a\"b", "x": "mime"}"#),
        [None, None, None]
    );
    assert_eq!(
        json_members(br#"{"url": "unterminated"#),
        [None, None, None]
    );
}

#[test]
fn a_sorted_cdxj_gives_runs_of_urls_and_hosts() {
    let r = scan(&[
        r#"com,example)/ 20200101000000 {"url": "http://example.com/", "mime": "text/html", "status": "200", "length": "10"}"#,
        r#"com,example)/ 20210101000000 {"url": "http://example.com/", "mime": "warc/revisit", "status": "-", "length": "5"}"#,
        r#"com,example)/a?b=1 20210201000000 {"url": "http://example.com/a?b=1", "mime": "text/html", "status": "404", "length": "7"}"#,
        r#"com,example,www)/ 20210201000000 {"url": "http://www.example.com/", "mime": "image/png", "status": "200"}"#,
        r#"uk,co,example)/ 19990101000000 {"url": "http://example.co.uk/"}"#,
    ]);
    assert_eq!((r.captures, r.urls, r.hosts, r.domains), (5, 4, 3, 2));
    assert_eq!((r.bytes, r.revisits, r.with_query), (22, 1, 1));
    assert_eq!(r.first.as_deref(), Some("19990101000000"));
    assert_eq!(r.last.as_deref(), Some("20210201000000"));
    assert_eq!(r.years["2021"], 3);
    assert_eq!(r.months["202102"], 2);
    assert_eq!(r.mime["-"], 1);
    assert_eq!(r.status["-"], 2);
    assert_eq!(r.mimestatus["text/html"]["404"], 1);
    assert_eq!(r.tophosts[0], ("example.com".to_string(), 3));
    assert_eq!(r.topdomains[0], ("example.com".to_string(), 4));
    assert_eq!(r.tlds, vec![("com".to_string(), 4), ("uk".to_string(), 1)]);
    assert_eq!(r.captures_per_url[0], ("1".to_string(), 3));
    assert_eq!(r.captures_per_url[1], ("2".to_string(), 1));
    assert_eq!(r.pathquery["P1"]["Q1"], 1);
}

#[test]
fn cdx11_columns_follow_the_legend() {
    let legend = Layout::from_legend(b" CDX N b a m s k r M S V g").unwrap();
    let mut s = Scan::new(0);
    assert!(!s.line(&legend, b" CDX N b a m s k r M S V g").unwrap());
    s.line(&legend, b"com,example)/ 20040724100457 http://example.com/ text/html 200 AAAA - - 1656 3043 x.arc.gz").unwrap();
    assert!(s.line(&legend, b"com,example)/ 2004").is_err());
    let r = s.finish();
    assert_eq!((r.captures, r.bytes), (1, 1656));
    assert_eq!(r.mimestatus["text/html"]["200"], 1);
}

#[test]
fn keys_out_of_order_are_noticed() {
    let mut k = KeyRuns::new(0);
    k.add(b"com,b)/");
    k.add(b"com,a)/");
    assert_eq!(k.out_of_order(), Some(&b"com,a)/"[..]));
}

#[test]
fn parts_cut_between_hosts_add_up_to_the_whole() {
    let lines: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"com,h{:03})/p{} 2020{:02}01000000 {{"mime": "text/html", "status": "200", "length": "{i}"}}"#,
                i / 7,
                i % 3,
                1 + i % 12
            )
        })
        .collect();
    let layout = Layout::Json;
    let mut whole = Scan::new(5);
    for l in &lines {
        whole.line(&layout, l.as_bytes()).unwrap();
    }
    // Cuts at host boundaries (multiples of 7) and one inside a host.
    for cut in [0, 70, 133, 199] {
        let mut a = Scan::new(5);
        let mut b = Scan::new(5);
        for (i, l) in lines.iter().enumerate() {
            let s = if i < cut { &mut a } else { &mut b };
            s.line(&layout, l.as_bytes()).unwrap();
        }
        a.absorb(b);
        assert_eq!(a.finish(), whole.clone().finish(), "cut at {cut}");
    }
}

#[test]
fn merging_ordered_shards_is_exact_and_says_what_is_not() {
    let lines: Vec<String> = (0..100)
        .map(|i| {
            format!(
                r#"com,h{:02})/p{} 20200101000000 {{"length": "1"}}"#,
                i / 9,
                i % 4
            )
        })
        .collect();
    let whole = {
        let mut s = Scan::new(0);
        for l in &lines {
            s.line(&Layout::Json, l.as_bytes()).unwrap();
        }
        s.finish()
    };
    let shard = |ls: &[String], top| {
        let mut s = Scan::new(top);
        for l in ls {
            s.line(&Layout::Json, l.as_bytes()).unwrap();
        }
        s.finish()
    };
    let complete = Report::merge(vec![shard(&lines[50..], 0), shard(&lines[..50], 0)], 0);
    assert_eq!(complete, whole);
    let partial = Report::merge(vec![shard(&lines[..50], 2), shard(&lines[50..], 2)], 0);
    assert_eq!((partial.urls, partial.hosts), (whole.urls, whole.hosts));
    assert_eq!(partial.inexact, ["domains", "topdomains", "tophosts"]);
    let overlapping = Report::merge(vec![shard(&lines, 0), shard(&lines[..10], 0)], 0);
    assert!(overlapping.inexact.contains(&"urls".to_string()));
    assert_eq!(overlapping.hosts, whole.hosts);
}

#[test]
fn ukvs_lines_are_json_lines() {
    let l = br#"com,example)/ 20140216050221 151 sha1:B2LT {"url":"http://example.com/","mime":"text/html","status":200,"length":1656}"#;
    assert_eq!(Layout::guess(l), Layout::Json);
    let f = Layout::Json.fields(l).unwrap();
    assert_eq!(f.mime, Some(&b"text/html"[..]));
    assert_eq!(f.status, Some(&b"200"[..]));
    assert_eq!(f.length, Some(1656));
}

#[test]
fn wget_lines_count_under_the_surt_of_their_url_without_bytes() {
    // wget's legend: the URL stands for the key, `V` is the offset and no
    // column gives a length.
    let legend = Layout::from_legend(b" CDX a b a m s k r M V g u").unwrap();
    let mut s = Scan::new(0);
    for l in [
        &b"http://example.com/a 20240101000000 http://example.com/a text/html 404 BBBB - - 1884 w.warc.gz <urn:uuid:2>"[..],
        b"http://www.example.com/b?x=1 20240101000000 http://www.example.com/b?x=1 text/html 200 AAAA - - 817 w.warc.gz <urn:uuid:1>",
    ] {
        assert!(s.line(&legend, l).unwrap());
    }
    let r = s.finish();
    assert_eq!((r.captures, r.bytes, r.hosts, r.with_query), (2, 0, 1, 1));
    assert_eq!(r.first_key.as_deref(), Some("com,example)/a"));
    assert_eq!(r.last_key.as_deref(), Some("com,example)/b?x=1"));
    assert_eq!(r.status["404"], 1);
}

#[test]
fn headerless_cdx_is_read_by_its_number_of_fields() {
    let ten = b"com,a)/ 20240101000000 http://a.com/ text/html 200 AAAA - - 99 f.warc.gz";
    let f = Layout::guess(ten).fields(ten).unwrap();
    assert_eq!((f.status, f.length), (Some(&b"200"[..]), None));
    let fourteen =
        b"com,a)/ 20240101000000 http://a.com/ text/html 200 AAAA - - 500 99 f.warc.gz - - -";
    let f = Layout::guess(fourteen).fields(fourteen).unwrap();
    assert_eq!(f.length, Some(500));
    let nine = b"com,a)/ 20240101000000 http://a.com/ text/html - AAAA - 99 f.warc.gz";
    let f = Layout::guess(nine).fields(nine).unwrap();
    assert_eq!((f.status, f.length), (Some(&b"-"[..]), None));
}

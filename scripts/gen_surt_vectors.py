#!/usr/bin/env python3
"""Generate tests/data/surt/vectors.tsv: SURT test vectors computed by the
reference, Python `surt` 0.3.1 (pip install surt==0.3.1).

    python3 scripts/gen_surt_vectors.py > tests/data/surt/vectors.tsv

Inputs are systematic variations of every URL part (scheme, userinfo, host,
IDN, IPv4/IPv6, port, path, query, session ids, fragment, whitespace) plus
seeded random combinations and garbage bytes. Each input is run through
`surt.surt(bytes)` once per profile; `!ERROR` marks a raise.

Columns: input, then one key per profile (see PROFILES). Inputs are bytes,
escaped as: `\\\\`, `\\t`, `\\n`, `\\r`, `\\xHH` for other control bytes, DEL
and bytes that are not valid UTF-8; valid non-ASCII UTF-8 is written as is.
Keys are ASCII except where the reference echoes its input (filedesc),
escaped the same way. The output is deterministic (fixed seed).
"""
import random
import sys

import surt

PROFILES = [
    ("default", {}),
    ("with_scheme", {"with_scheme": True}),
    ("trailing_comma", {"trailing_comma": True}),
    ("no_reverse_ipaddr", {"reverse_ipaddr": False}),
    ("keep_www", {"host_massage": False}),
    ("all_options", {"with_scheme": True, "trailing_comma": True,
                     "reverse_ipaddr": False, "host_massage": False}),
]

ID32 = "0123456789abcdefABCDEF0123456789"


def escape(b):
    out = []
    i = 0
    while i < len(b):
        c = b[i]
        if c == 0x5C:
            out.append("\\\\")
        elif c == 0x09:
            out.append("\\t")
        elif c == 0x0A:
            out.append("\\n")
        elif c == 0x0D:
            out.append("\\r")
        elif c < 0x20 or c == 0x7F:
            out.append("\\x%02x" % c)
        elif c < 0x80:
            out.append(chr(c))
        else:
            # Longest valid UTF-8 sequence starting here, else one raw byte.
            for n in (4, 3, 2):
                try:
                    ch = b[i:i + n].decode("utf-8")
                except UnicodeDecodeError:
                    continue
                if len(ch) == 1:
                    out.append(ch)
                    i += n
                    break
            else:
                out.append("\\x%02x" % c)
                i += 1
            continue
        i += 1
    return "".join(out)


def key(url, opts):
    try:
        return escape(surt.surt(url, **opts))
    except Exception:
        return "!ERROR"


def systematic():
    v = []
    schemes = ["http://", "https://", "HTTP://", "Https://", "ftp://", "ws://", "file://",
               "gopher://", "whois://", "", "//", "http:", "http:/", "http:///", "http:////",
               "https:/", "httpx://", "http://http://", "http://https://", "https://http://",
               "http://HTTPS://", "http://http:/", "x-y.z+1://", "1http://"]
    for s in schemes:
        for rest in ["www.Example.com/Path?b=2&a=1#frag", "example.com", "example.com:8080/x",
                     "www2.example.com:80/", "user:pass@example.com:443/a/", "a.com/%41%2F"]:
            v.append(s + rest)
    no_host = ["dns:www.Example.com", "DNS:A.COM", "dns:1.2.3.4", "mailto:Foo@Example.com",
               "mailto:a@b.com?Subject=Hi&body=x", "urn:x:B?b=2&a=1", "urn:ISBN:0451450523",
               "warcinfo:foo.warc.gz", "warcinfo:/Foo/Bar.warc", "filedesc://IA-001.arc",
               "filedesc:x", "FILEDESC:x", " filedesc:x", "filedescX", "javascript:alert(1)",
               "javascript:void(0);", "data:text/html,%3Ch1%3EHi", "about:blank", "news:comp.lang",
               "tel:+1-555-0100", "urn:", "dns:", "mailto:", "x:", "a:b:c", "http:", "https:",
               "http://", "https://", "http:///", "http:?q", "http:#f", "http://?q=1", "http://#f",
               "http://:80/", "http://:80/a/b", "http://@/", "http://u@/x", "http://[]/",
               "localhost:8080/x", "example.com:8080/foo", "bücher.ch:8080", "www.example.com/x",
               "/a/b", "//host/x", "?q=1", "#frag", "a", ".", "..", "/", "//", "///", ":", "::",
               "-", "*", "%", "%%", "%2", "%zz", "\\", "http:\\\\a.com\\b"]
    v += no_host
    hosts = ["example.com", "EXAMPLE.COM", "Example.Com.", ".example.com", "example..com",
             "a....b.com", "...", "a.", "www.example.com", "www2.example.com", "www34.example.com",
             "www.www.example.com", "www.www2.x.com", "www.com", "www", "www.", "wwwexample.com",
             "www-2.example.com", "ww.example.com", "WWW.Example.com", "www1.", "www.1.2.3.4",
             "www.010", "%41.com", "ex%2Eample.com", "ex%2eample.com", "ex%252Eample.com",
             "ex%41mple.com", "ex%ample.com", "ex%25ample.com", "a%20b.com", "a b.com",
             "a_b.com", "a-.com", "-a.com", "a+b.com", "a!b$c.com", "a%00b.com", "a\x0bb.com",
             "a\x7fb.com", "a\\b.com", "a^b.com", "a|b.com", "a{b}.com", "a\"b.com", "a'b.com",
             "a;b.com", "a,b.com", "a=b.com", "a&b.com", "a~b.com", "a`b.com", "a<b>.com",
             "x" * 63 + ".com", "x" * 64 + ".com", "x" * 300]
    idn = ["bücher.ch", "BÜCHER.ch", "faß.de", "FASS.de", "straße.de", "xn--bcher-kva.ch",
           "XN--BCHER-KVA.CH", "xn--fa-hia.de", "例え.テスト", "例え。テスト", "例え．テスト",
           "例え｡テスト", "пример.рф", "ПРИМЕР.РФ", "παράδειγμα.δοκιμή", "ςσΣ.gr", "مثال.إختبار",
           "مثال1.com", "مثالa.com", "1مثال.com", "דוגמה.טעסט", "עבריתabc.com", "ａｂｃ.com",
           "ＡＢＣ.ｃｏｍ", "ﬁ.com", "ℌ.com", "⒈.com", "①.com", "㎒.com", "a\u200db.com",
           "a\u200cb.com", "\u200d.com", "a\u00adb.com", "a\ufeffb.com", "\u2060x.com",
           "e\u0301.com", "é.com", "e\u0301\u0323.com", "e\u0323\u0301.com", "ệ.com",
           "한국.kr", "\u1112\u1161\u11ab.kr", "\u1100\u1161.kr", "☃.net", "⚑.org", "🂡.com",
           "😀.com", "😀😀.com", "a😀b.com", "xn--😀.com", "\u00a0.com", "a\u00a0b.com",
           "a\u3000b.com", "a\u2028b.com", "\ue000.com", "\U000f0000.com", "\ufdd0.com",
           "\u0080.com", "\u0340.com", "\u2ff0.com", "\u1b05\u1b35.com", "Ⰰ.com", "ᏸ.com",
           "é" * 20 + ".com", "é" * 70 + ".com", "a.é", "é.", "é..com", ".é.com", "é。",
           "%C3%BC.de", "%c3%bc.de", "%C3%9C.de", "%FF.com", "%FFexample.com", "%C3.com",
           "%C3%28.com", "%E2%82.com", "%ED%A0%80.com", "%F0%9F%98%80.com", "b%C3%BCcher.ch",
           "%E4%BE%8B%E3%81%88.jp", "ü%2Eb.com", "ü%252Eb.com", "x.xn--ü", "İstanbul.tr",
           "ǅ.com", "ß", "ẞ.de", "\u0130.com", "\u0345.com", "\u03d2\u0301.com"]
    ips = ["1.2.3.4", "192.168.1.254", "3279880203", "4294967295", "4294967296", "010", "0",
           "00", "000000000000000000001", "1" + "0" * 30, "10.0.258", "127.1", "1.2.3.010",
           "017.0.0.1", "1.2.3.04", "1.16777215", "1.16777216", "1.2.65535", "1.2.65536",
           "1.2.3.256", "256.1.1.1", "1.2.3.08", "08.1.2.3", "0x7f.0.0.1", "0x7F000001",
           "1.2.3.4.5", "1.2.3", "1.2", "01.02.03.04", "0.0.0.0", "00.00.00.00", "255.255.255.255",
           "999.1.1.1", "1.2.3.4.", ".1.2.3.4", "1..2.3.4", "1.2.3.4%0A", "1.2.3.4%20",
           "1%2E2%2E3%2E4", "01", "07", "08", "0777", "01777777777", "037777777777",
           "040000000000", "1.0" + "0" * 70, "1.2.3." + "1" * 25, "99999999999999999999.1",
           "1.99999999999999999999", "www.1.2.3.4", "www.192.168.0.1", "1.2.3.4:80",
           "[::1]", "[::1]:8080", "[2001:db8::1]", "[2001:DB8::A]:443", "[::ffff:1.2.3.4]",
           "[fe80::1%25eth0]", "[fe80::1%eth0]:81", "[::1", "::1]", "[::1]x:80", "a[b]:81",
           "[1.2.3.4]", "[www.example.com]", "2001:db8::1", "[]", "[]:80"]
    ports = ["", ":", "::", ":80", ":443", ":0", ":00", ":00080", ":0443", ":65535", ":65536",
             ":99999", ":8080", ":21", ":abc", ":8o", ":+80", ": 80", ":80 ", ":-1", ":80:80",
             ":1e3", ":٣", ":²", ":" + "0" * 4300 + "1", ":" + "0" * 4301 + "1"]
    for h in hosts + idn + ips:
        for s in ["http://", "https://"]:
            v.append(s + h + "/")
        v.append("http://" + h + "/Path/../To/Page.HTML?B=2&a=1")
    for h in ["example.com", "www.example.com", "1.2.3.4", "[::1]", "bücher.ch", ""]:
        for p in ports:
            for s in ["http://", "https://", "ftp://", "HTTP://", "HTTPS://", "Http://"]:
                v.append(s + h + p + "/x")
    for u in ["user@", "user:pass@", "u:p@h@", "@", "user@www.", ":@", "a%40b@", "u@v@w@",
              "user:pa:ss@", "USER@", "us er@", "ü@"]:
        for h in ["example.com", "www.example.com:8080", "[::1]:80", ""]:
            v.append("http://" + u + h + "/a")
    v.append("http://" + "0" * 4300 + "/")
    v.append("http://" + "0" * 4301 + "/")
    v.append("http://" + "9" * 5000 + "/")
    paths = ["", "/", "//", "///a", "/a/", "/a//b/", "/A/B/C", "/a/./b", "/a/../b", "/../b",
             "/a/../../b", "/../../b", "/a/b/c/../../../..", "/./../c", "/...", "/..a", "/a..",
             "/a/.", "/a/..", "/.", "/..", "/a%2Fb", "/a%2F..%2Fb", "/%2e%2e/x", "/%2E/x",
             "/a%252Fb", "/%7Euser", "/~user", "/%25", "/%2525", "/%252525252525", "/%", "/%2",
             "/%zz", "/%u00e9", "/a b", "/a%20b", "/a+b", "/é", "/%C3%A9", "/%c3%a9", "/%E9",
             "/a#b", "/a%23b", "/a%3Fb?c", "/a%3fb", "/a%00b", "/a\x0bb", "/a\x0cb", "/a\x7fb",
             "/a\u00a0b", "/a\u3000b", "/a;jsessionid=0123456789ABCDEF0123456789ABCDEF",
             "/a;JSESSIONID=0123456789abcdef0123456789abcdef?x=1",
             "/(S(4hqa0555fwsecu455xqckv45))/mileg.aspx",
             "/x/(S(4hqa0555fwsecu455xqckv45))/y/mileg.aspx?a=1",
             "/(S(4hqa0555fwsecu455xqckv45)A(4hqa0555fwsecu455xqckv45))/a.aspx",
             "/(4hqa0555fwsecu455xqckv45)/mileg.aspx", "/(4hqa0555fwsecu455xqckv4)/mileg.aspx",
             "/(4hqa0555fwsecu455xqckv45)/mileg.asp", "/(4hqa0555fwsecu455xqckv45)/.aspx",
             "/(4hqa0555fwsecu455xqckv45)/x%3F.aspx", "/(4hqa0555fwsecu455xqckv45)/a.ASPX",
             "/a/(S(4hqa0555fwsecu455xqckv45))/(4hqa0555fwsecu455xqckv45)/b.aspx",
             "/(s(4hqa0555fwsecu455xqckv45))/(4hqa0555fwsecu455xqckv45)/m.aspx/x",
             "/index.html", "/INDEX.HTML", "/a/b/", "/a?", "/a?#", "/C:/x", "/a:b@c",
             "/[a]", "/{a}", "/a|b", "/a\\b", "/a^b", "/a`b", "/a\"b", "/a<b>"]
    for p in paths:
        v.append("http://www.Example.com" + p)
        v.append("mailto:x" + p)
    for p in paths[:30]:
        v.append("http://" + p)
        v.append("https:" + p)
    queries = ["?", "?&", "?&&", "?=", "?a", "?a=", "?a=1", "?b=2&a=1", "?a=2&a=1&a", "?a-b=1&a=2",
               "?a=1&", "?&a=1", "?a=1&&b=2", "?B=2&A=1", "?a=b=c&a=b", "?a=%26&b=%3D",
               "?type=a+b+%26+c", "?a=%2525", "?q=%E9", "?q=é", "?q=a%20b", "?q=a b", "?q=a#b",
               "?q=a%23b", "?q=%3F", "?q=?", "?q=a&q=A", "?z&y&x", "?%41=1", "?a=%", "?a=%zz",
               "?a=1#", "?a=1#frag?b=2", "?a\x7f=1", "?a\x00=1",
               "?jsessionid=" + ID32, "?jsessionid=" + ID32 + "&b=1", "?a=1&jsessionid=" + ID32,
               "?a=1&jsessionid=" + ID32 + "&b=2", "?xjsessionid=" + ID32 + "&b=1",
               "?JSESSIONID=" + ID32, "?jsessionid=" + ID32[:31], "?jsessionid=" + ID32 + "0",
               "?jsessionid=" + ID32 + "x", "?jsessionid=" + ID32 + "&",
               "?jsessionid=" + ID32 + "&jsessionid=" + ID32.lower(),
               "?phpsessid=" + ID32, "?PHPSESSID=" + ID32 + "&a=1", "?sid=" + ID32,
               "?foosid=" + ID32 + "&a=1", "?ssid=" + ID32, "?sid=" + ID32[:30],
               "?a=1&sid=" + ID32 + "&phpsessid=" + ID32 + "&jsessionid=" + ID32,
               "?ASPSESSIONIDQQGGGNCU=ABCDEFGHIJKLMNOPQRSTUVWX",
               "?aspsessionidqqgggncu=abcdefghijklmnopqrstuvwx&a=1",
               "?ASPSESSIONIDQQGGGNC1=ABCDEFGHIJKLMNOPQRSTUVWX",
               "?ASPSESSIONIDQQGGGNCU=ABCDEFGHIJKLMNOPQRSTUVW1",
               "?CFID=123&CFTOKEN=456", "?a=1&cfid=123&cftoken=456&b=2", "?cftoken=456&cfid=123",
               "?cfid=&cftoken=1", "?cfid=1&cftoken=", "?cfid=1&x&cftoken=2", "?CfId=a=b&CfToken=c"]
    for q in queries:
        v.append("http://example.com/p" + q)
        v.append("http://example.com" + q)
        v.append("urn:x" + q)
    frags = ["#", "#a", "#a?b", "#/x/../y", "##", "#%20"]
    for f in frags:
        v.append("http://example.com/a?b=1" + f)
        v.append("http://example.com" + f)
    ws = ["", " ", "   ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x00", "\u00a0", "\u3000", " \t\n"]
    for w in ws:
        v.append(w)
        v.append(w + "http://example.com/" + w)
        v.append("http://exa" + w + "mple.com/a" + w + "b?c" + w + "=d")
        v.append("ht" + w + "tp://example.com/")
        v.append(w + "filedesc://x")
    return [x.encode("utf-8") for x in v]


def garbage(rng):
    v = []
    for _ in range(150):
        n = rng.randint(0, 40)
        v.append(bytes(rng.randrange(256) for _ in range(n)))
    alphabet = b"abcXYZ019./:?#&=%@[]-_~!$'()*+,;\\ \t"
    for _ in range(250):
        n = rng.randint(0, 30)
        v.append(bytes(rng.choice(alphabet) for _ in range(n)))
    for _ in range(100):
        n = rng.randint(0, 20)
        v.append(b"http://" + bytes(rng.choice(alphabet + b"\x80\xff\xc3\xa9") for _ in range(n)))
    return v


def combos(rng):
    schemes = ["http://", "https://", "HTTP://", "ftp://", "", "//", "http:", "http:///",
               "dns:", "mailto:", "urn:"]
    users = ["", "", "", "u@", "u:p@", "a@b@"]
    hosts = ["example.com", "www.example.com", "WWW2.Example.CO.UK", "www.", "a..b", "1.2.3.4",
             "3279880203", "10.0.258", "0x7f.1", "[::1]", "[2001:db8::1%25x]", "bücher.ch",
             "faß.de", "例え.テスト", "☃.net", "%41.com", "ex%2Eample.com", "%FF.com", "", "."]
    ports = ["", "", "", ":80", ":443", ":8080", ":0", ":", ":65536", ":x"]
    paths = ["", "/", "/a/b/../c/", "/A%2FB", "//x//y", "/%7E/", "/é", "/%25252F",
             "/(4hqa0555fwsecu455xqckv45)/p.aspx", "/a;jsessionid=" + ID32, "/..", "/a b"]
    queries = ["", "?", "?b=2&a=1", "?a&a=&a=1", "?jsessionid=" + ID32 + "&z=1",
               "?x=1&sid=" + ID32, "?cfid=1&cftoken=2", "?%26=%3D", "?Q=Ü", "?&", "?a=1&"]
    frags = ["", "", "#f", "#", "#x?y"]
    ws = ["", "", "", " ", "\t", "\n"]
    v = []
    for _ in range(1700):
        parts = [rng.choice(schemes), rng.choice(users), rng.choice(hosts), rng.choice(ports),
                 rng.choice(paths), rng.choice(queries), rng.choice(frags)]
        w = rng.choice(ws)
        if w and rng.random() < 0.5:
            i = rng.randrange(len(parts) + 1)
            parts.insert(i, w)
        url = "".join(parts)
        if rng.random() < 0.3:
            url = url.upper() if rng.random() < 0.5 else url.swapcase()
        v.append(url.encode("utf-8"))
    return v


# Unicode blocks for random IDN hosts: Latin, combining marks, Greek,
# Cyrillic, Hebrew, Arabic, Indic, Thai, Hangul jamo and syllables,
# Balinese, Greek extended, punctuation/format, letterlike and enclosed
# symbols, Glagolitic, CJK and compatibility forms, presentation forms,
# variation selectors, fullwidth, math alphanumerics, emoji, plane 1-2
# compatibility ideographs, tags.
BLOCKS = [(0x41, 0x7a), (0xc0, 0x24f), (0x300, 0x36f), (0x370, 0x3ff), (0x400, 0x4ff),
          (0x591, 0x5f4), (0x600, 0x6ff), (0x900, 0x97f), (0xe00, 0xe7f), (0x1100, 0x11ff),
          (0x1b00, 0x1b7f), (0x1e00, 0x1fff), (0x2000, 0x206f), (0x2100, 0x24ff),
          (0x2c00, 0x2c5f), (0x3000, 0x30ff), (0x3130, 0x318f), (0x3200, 0x33ff),
          (0x4e00, 0x4e80), (0xac00, 0xac40), (0xf900, 0xfaff), (0xfb00, 0xfdff),
          (0xfe00, 0xfe6f), (0xff00, 0xffef), (0x1d400, 0x1d7ff), (0x1f000, 0x1faff),
          (0x10000, 0x100ff), (0x2f800, 0x2fa1d), (0xe0000, 0xe007f)]
MARKS = "ae\u0301\u0323\u0308\u1100\u1161\u11a8\u0627\u05d0.-9"


def idn_random(rng):
    v = []
    for _ in range(900):
        chars = []
        for _ in range(rng.randint(1, 6)):
            if rng.random() < 0.3:
                chars.append(rng.choice(MARKS))
            else:
                lo, hi = rng.choice(BLOCKS)
                chars.append(chr(rng.randint(lo, hi)))
        host = "".join(chars)
        if "\n" in host or "\r" in host:
            continue
        v.append(("http://" + host + "/").encode("utf-8"))
    return v


PIECES = [b"http://", b"https://", b"HTTP:", b"//", b"/", b":", b"::", b"@", b"?", b"#", b"&",
          b"=", b"%", b"%2", b"%25", b"%2F", b"%2E", b"%2e%2E", b"%3F", b"%26", b"%3D", b"%41",
          b"%C3%A9", b"%FF", b"%00", b"www.", b"www1.", b"WWW.", b".", b"..", b"...", b"[", b"]",
          b"::1", b"1", b"0", b"01", b"8", b"255", b"256", b"4294967296", b"0x1", b".1",
          b"1.2.3.4", b"a", b"B", b"com", b"example", b"xn--", b"\xc3\xa9", b"\xc3\x9f",
          b"\xe2\x98\x83", b"\xff", b"\x80", b" ", b"\t", b"\x0b", b"\x00", b"\\", b"+",
          b";", b"(", b")", b"jsessionid=", b"sid=", ID32.encode(), b"cfid=1", b"&cftoken=2",
          b"aspsessionidabcdefgh=", b"abcdefghijklmnopqrstuvwx", b"(s(",
          b"4hqa0555fwsecu455xqckv45", b"))/", b".aspx", b":80", b":443", b":0", b":8080",
          b"dns:", b"mailto:", b"urn:", b"filedesc", b"ftp://", b"https:", b"http:"]


def piece_random(rng):
    return [b"".join(rng.choice(PIECES) for _ in range(rng.randint(1, 12)))
            for _ in range(1200)]


def main():
    rng = random.Random(20241121)
    inputs = (systematic() + garbage(rng) + combos(rng) + idn_random(rng)
              + piece_random(rng))
    seen = set()
    out = sys.stdout
    out.write("\t".join(["input"] + [name for name, _ in PROFILES]) + "\n")
    count = 0
    for url in inputs:
        if url in seen:
            continue
        seen.add(url)
        out.write("\t".join([escape(url)] + [key(url, opts) for _, opts in PROFILES]) + "\n")
        count += 1
    print("wrote %d vectors" % count, file=sys.stderr)


main()

#!/usr/bin/env python3
"""Generate a Nedlib harvest tree with its ground truth.

    python3 scripts/gen_nedlib.py --out DIR --objects N --seed S [--damage]

Written from the storage-hierarchy seed text (Nedlib crawler part) and the
`.meta` form FORMATS.md states:

    DIR/accessK.data               K = 1, 2, ...: --per-list entries each
    DIR/YYYY-MM-DD/N/MD5URL        the body as received
    DIR/YYYY-MM-DD/N/MD5URL.meta   harvester fields, an empty line, the head

The harvester's clock runs forward from a seeded start. A day directory is
made for each local day (the harvester runs at UTC+1, Harvest-Time is UTC,
so objects fetched 23:00-24:00 UTC sit under the next day), and the running
number N goes up every --per-dir objects and at each new day; it never
restarts. URLs are revisited on later days (the same file name under
another directory). Bodies are HTML, plain text and binary (images, octet
streams), empty for most redirects; heads are CRLF, a few bare LF, a few
without Content-Type, and a few objects have no head at all (HTTP/0.9).

truth.tsv has one row per object, in harvest order, after a `#` header:
path of the data file relative to DIR, url, datetime (the Harvest-Time as
harvested), sha1 (base32 SHA-1 of the data file as it is on disk), mime
(Content-Type without parameters, '' when none), status ('' when no head),
length (the data file's size on disk), damage ('' or a kind below).

--damage spoils about one object in eight, cycling through the kinds so
each appears when there are enough objects:

    meta_without_data   the data file is missing
    data_without_meta   the .meta file is missing
    md5_mismatch        one byte of the data file changed after the harvest
    size_mismatch       the data file cut short after the harvest
    bad_harvest_time    the .meta file's Harvest-Time is not 14 digits
    name_mismatch       the files are named by the MD5 of another URL

The access lists keep what the harvester wrote at the time (good values,
the names the files really have). The output depends only on the
arguments.
"""
import argparse
import base64
import datetime
import hashlib
import os
import random

DAMAGES = [
    "meta_without_data",
    "data_without_meta",
    "md5_mismatch",
    "size_mismatch",
    "bad_harvest_time",
    "name_mismatch",
]

HOSTS = [
    "www.server.at",
    "www.example.fi",
    "nedlib.example.nl",
    "kirjasto.example.fi",
    "192.0.2.44:8080",
]

# Words for page text, from the seed's own sentences.
WORDS = (
    "the data of the original document is not stored together with the "
    "metadata in self-contained files yet they are kept closely together "
    "a file with the extension meta is created that contains the metadata "
    "those two files are stored together in a directory the name of which "
    "is simply a running number after a certain number of files have been "
    "collected this index is increased"
).split()

LOCAL_OFFSET = datetime.timedelta(hours=1)


def b32sha1(data):
    return base64.b32encode(hashlib.sha1(data).digest()).decode()


def md5hex(data):
    return hashlib.md5(data).hexdigest()


def make_url(rng):
    host = rng.choice(HOSTS)
    depth = rng.randint(0, 3)
    path = "/".join(rng.choice(WORDS) for _ in range(depth))
    leaf = rng.choice(["", "index.html", "page%d.html" % rng.randint(1, 99),
                       "img%d.gif" % rng.randint(1, 9), "doc.txt",
                       "cgi-bin/q?id=%d&lang=fi" % rng.randint(1, 999),
                       "%C3%A4iti.html"])
    return "http://%s/%s%s%s" % (host, path, "/" if path else "", leaf)


def make_object(rng):
    """(status, head lines or None, body, mime written or None): one
    response as a server of the time might have sent it."""
    kind = rng.choices(
        ["html", "text", "gif", "binary", "redirect", "notfound", "untyped",
         "http09"],
        weights=[30, 8, 12, 8, 10, 6, 4, 2])[0]
    if kind == "html":
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 200)))
        body = ("<html><head><title>%s</title></head>\n<body><p>%s</p></body></html>\n"
                % (rng.choice(WORDS), words)).encode()
        ctype = rng.choice(["text/html", "text/html; charset=iso-8859-1",
                            "Text/HTML", "text/html;charset=utf-8"])
        return 200, ctype, body
    if kind == "text":
        body = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 80))).encode()
        return 200, "text/plain", body
    if kind == "gif":
        body = b"GIF89a" + bytes(rng.getrandbits(8) for _ in range(rng.randint(10, 3000)))
        return 200, rng.choice(["image/gif", "image/jpeg"]), body
    if kind == "binary":
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 5000)))
        return 200, "application/octet-stream", body
    if kind == "redirect":
        body = b"" if rng.random() < 0.7 else b"<a href=\"/\">moved</a>\r\n"
        return rng.choice([301, 302]), "text/html", body
    if kind == "notfound":
        return 404, "text/html", b"<html><body>Not Found</body></html>\r\n"
    if kind == "untyped":
        body = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 200)))
        return 200, None, body
    return None, None, b"<html>HTTP/0.9 has no head</html>\n"


def head_bytes(rng, status, ctype, body, url):
    """The response head as the server sent it: CRLF mostly, bare LF
    from a few old servers."""
    eol = "\n" if rng.random() < 0.1 else "\r\n"
    reason = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found"}
    lines = ["HTTP/1.%d %d %s" % (rng.randint(0, 1), status, reason[status]),
             "Server: Apache/1.3.%d (Unix)" % rng.randint(0, 20)]
    if ctype is not None:
        lines.append("Content-Type: " + ctype)
    if status in (301, 302):
        lines.append("Location: " + url.rsplit("/", 1)[0] + "/")
    lines.append("Content-Length: %d" % len(body))
    return ("".join(l + eol for l in lines) + eol).encode("latin-1")


def fields_block(url, time, ip, length, md5, depth):
    lines = [("URL", url), ("Harvest-Time", time), ("IP-Address", ip),
             ("Content-Length", str(length)), ("MD5", md5)]
    if depth is not None:
        lines.append(("Depth", str(depth)))
    return "".join("%s: %s\n" % kv for kv in lines).encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--damage", action="store_true")
    ap.add_argument("--per-dir", type=int, default=9,
                    help="objects per numbered directory (the harvester's default is 2000)")
    ap.add_argument("--per-list", type=int, default=40, help="entries per access list")
    ap.add_argument("--days", type=int, default=3, help="days the harvest runs, about")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)

    clock = datetime.datetime(1999 + rng.randint(0, 3), rng.randint(1, 12), rng.randint(1, 28),
                              rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
    mean_step = max(1, args.days * 86400 // max(1, args.objects))
    day, number, in_dir = None, 0, 0
    names_in_dir = set()
    seen_urls = []
    truth, access = [], []
    for i in range(args.objects):
        clock += datetime.timedelta(seconds=rng.randint(1, 2 * mean_step))
        local_day = (clock + LOCAL_OFFSET).strftime("%Y-%m-%d")
        if local_day != day or in_dir == args.per_dir:
            day, number, in_dir = local_day, number + 1, 0
            names_in_dir = set()
        if seen_urls and rng.random() < 0.1:
            url = rng.choice(seen_urls)
        else:
            url = make_url(rng)
            seen_urls.append(url)
        name = md5hex(url.encode())
        if name in names_in_dir:
            # The same URL twice in one directory would share a file name.
            url = make_url(rng) + "?v=%d" % i
            name = md5hex(url.encode())
        damage = ""
        if args.damage and i % 8 == 5:
            damage = DAMAGES[(i // 8) % len(DAMAGES)]
        if damage == "name_mismatch":
            name = md5hex((url + "#top").encode())
        names_in_dir.add(name)
        in_dir += 1

        status, ctype, body = make_object(rng)
        if damage in ("md5_mismatch", "size_mismatch") and not body:
            body = b"<html></html>\n"
        head = b"" if status is None else head_bytes(rng, status, ctype, body, url)
        time = clock.strftime("%Y%m%d%H%M%S")
        ip = "192.0.2.%d" % (HOSTS.index(url.split("/")[2]) + 10)
        depth = rng.randint(0, 9) if rng.random() < 0.2 else None
        fields = fields_block(url, time, ip, len(body), md5hex(body), depth)
        rel = "%s/%d/%s" % (day, number, name)
        access.append(b"Path: " + rel.encode() + b"\n" + fields + b"\n")

        stored = body
        if damage == "md5_mismatch":
            k = rng.randrange(len(body))
            stored = body[:k] + bytes([body[k] ^ 0x20]) + body[k + 1:]
        elif damage == "size_mismatch":
            stored = body[:rng.randrange(len(body))]
        meta_fields = fields
        if damage == "bad_harvest_time":
            bad = rng.choice([clock.strftime("%Y-%m-%d %H:%M:%S"), time[:12],
                              str(int(clock.replace(tzinfo=datetime.timezone.utc).timestamp()))])
            meta_fields = fields.replace(b"Harvest-Time: " + time.encode(),
                                         b"Harvest-Time: " + bad.encode())
        directory = os.path.join(args.out, day, str(number))
        os.makedirs(directory, exist_ok=True)
        if damage != "meta_without_data":
            with open(os.path.join(directory, name), "wb") as f:
                f.write(stored)
        if damage != "data_without_meta":
            with open(os.path.join(directory, name + ".meta"), "wb") as f:
                f.write(meta_fields + b"\n" + head)
        mime = "" if ctype is None or status is None else ctype.split(";")[0].strip()
        truth.append([rel, url, time, b32sha1(stored), mime,
                      "" if status is None else str(status), str(len(stored)), damage])

    for k in range(0, len(access), args.per_list):
        with open(os.path.join(args.out, "access%d.data" % (k // args.per_list + 1)), "wb") as f:
            f.write(b"".join(access[k:k + args.per_list]))
    with open(os.path.join(args.out, "truth.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("# path\turl\tdatetime\tsha1\tmime\tstatus\tlength\tdamage\n")
        for row in truth:
            f.write("\t".join(row) + "\n")


if __name__ == "__main__":
    main()

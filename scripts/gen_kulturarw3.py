#!/usr/bin/env python3
"""Generate a Kulturarw3 storage tree with ground truth.

    python3 scripts/gen_kulturarw3.py --out DIR --objects N --seed S \
        [--concatenated K] [--damage]

Written from the format's description (Kulturarw3 record format 0.01: one
object per MIME multipart/mixed message) and the description of its
storage tree (archive/XX/HOST/SNAPSHOT/MD5URL.EPOCH, XX the first two hex
digits of the MD5 of the host name, MD5URL the MD5 of the URL, EPOCH the
archive time in seconds since 1970).

Objects vary in what a reader must get right:
  * layout: the archive fields in the main header (the format's example,
    which labels the main header `HTTP-part: Archive-Info`) or in a
    separate Archive-Info part (three parts, as the tree's description
    has it);
  * Header-Info with an HTTP status line, or libwww-style (header fields
    only, no status), with or without a Content-Type (then the media type
    is the Content part's own, if it has one);
  * content: HTML, text with CRLF, binary bytes (NUL, CR, LF, dashes),
    text holding boundary-like lines (other KulturArw3 boundaries, the
    object's own boundary followed by more characters or not at a line
    start, `MIME-version: 1.0` lines), empty content, content ending
    without a line break or with a CR;
  * line ends: LF (the example) or CRLF for a whole object;
  * boundary: `KulturArw3_` + MD5 of the content (the example), or one
    derived from the URL when the content plays with it;
  * HTTP-Content-MD5 as 32 hex digits (the example) or, rarely, base64.

With --concatenated K, K files hold 2 to 4 objects of one host and
snapshot each, glued or separated by an empty line, and named after their
first object. With --damage some objects are damaged: `truncated` (the
file ends inside the last object of a file), `missing_close` (an object
followed by another in its file loses its closing delimiter line),
`md5_mismatch` (HTTP-Content-MD5 is not the content's).

DIR/truth.tsv has one line per object, in file and offset order, after a
`#` header line:
  path  offset  length  url  datetime  sha1  mime  status  damage  ip  redirect
path is relative to DIR; length runs from the MIME-version line through
the line end after the closing delimiter (a truncated object: to the end
of the file; an object without closing delimiter: to the next object);
sha1 is the base32 SHA-1 of the Content part's bytes (the line break
before a delimiter belongs to the delimiter); mime is the media type
without parameters or `-`; status `-` when the Header-Info has no status
line; damage is empty for a sound object; redirect is the Header-Info
`Location` of 3xx objects with a status line (else empty). The output depends only on the
arguments.
"""
import argparse
import base64
import hashlib
import os
import random
import sys
import time

WORDS = ["kb", "bibliotek", "kommun", "skola", "tidning", "foto", "musik",
         "riksdag", "museum", "forening", "sport", "resor"]
SERVERS = ["Microsoft-IIS/3.0", "Apache/1.2.4", "NCSA/1.5.2", "CERN/3.0",
           "Netscape-Enterprise/2.01", "Apache/1.3.6 (Unix)"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep",
          "Oct", "Nov", "Dec"]
STATUSES = [(200, "OK"), (200, "OK"), (200, "OK"), (404, "Not Found"),
            (302, "Moved Temporarily"), (301, "Moved Permanently"),
            (500, "Internal Server Error")]


def md5hex(b):
    return hashlib.md5(b).hexdigest()


def b32sha1(b):
    return base64.b32encode(hashlib.sha1(b).digest()).decode()


def http_date(epoch):
    t = time.gmtime(epoch)
    return "%s, %02d %s %04d %02d:%02d:%02d GMT" % (
        DAYS[t.tm_wday], t.tm_mday, MONTHS[t.tm_mon - 1], t.tm_year,
        t.tm_hour, t.tm_min, t.tm_sec)


def datetime14(epoch):
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(epoch))


def rand_bytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def media_type(ct):
    if ct is None:
        return None
    m = ct.split(";")[0].strip().split()
    return m[0] if m else None


def make_content(rng, kind, boundary_hint):
    """Content bytes and its Content-Type for a content kind."""
    if kind == "html":
        title = rng.choice(WORDS).capitalize()
        lines = ["<HTML>", "<HEAD><TITLE>%s</TITLE></HEAD>" % title, "<BODY>"]
        for _ in range(rng.randrange(1, 12)):
            lines.append("<P>%s</P>" % " ".join(
                rng.choice(WORDS) for _ in range(rng.randrange(1, 15))))
        lines += ["</BODY>", "</HTML>"]
        return ("\n".join(lines) + "\n").encode(), "text/html"
    if kind == "crlf":
        lines = ["line %d: %s" % (i, rng.choice(WORDS))
                 for i in range(rng.randrange(1, 8))]
        return ("\r\n".join(lines) + "\r\n").encode(), "text/plain"
    if kind == "binary":
        n = rng.randrange(1, 700)
        data = bytearray(rand_bytes(rng, n))
        # Sprinkle what a parser looks at.
        for frag in (b"\r\n", b"\n--", b"\r", b"\n\n", b"--\n", b"\x00"):
            if rng.random() < 0.5:
                at = rng.randrange(0, len(data) + 1)
                data[at:at] = frag
        ct = rng.choice(["image/gif", "image/jpeg", "application/octet-stream"])
        return bytes(data), ct
    if kind == "tricky":
        b = boundary_hint
        other = "KulturArw3_" + md5hex(rand_bytes(rng, 8))
        parts = [
            "--%s\n" % other,
            "--%s--\n" % other,
            "--%sx\n" % b,
            "--%s-- trailing words\n" % b,
            " --%s\n" % b,
            "text --%s\n" % b,
            "--%s\tand more\n" % b,
            "MIME-version: 1.0\n",
            "Content-Type: text/html\n\n",
            "HTTP-part: Content\n",
            "\n",
            "\r\n",
            "-- \n",
        ]
        rng.shuffle(parts)
        body = "".join(parts[:rng.randrange(3, len(parts) + 1)])
        return body.encode(), "text/plain"
    if kind == "empty":
        return b"", "text/html"
    if kind == "no_final_newline":
        return ("<p>%s</p>" % rng.choice(WORDS)).encode(), "text/html"
    if kind == "final_cr":
        return ("%s\r" % rng.choice(WORDS)).encode(), "text/plain"
    raise ValueError(kind)


CONTENT_KINDS = ["html"] * 4 + ["crlf", "binary", "binary", "tricky",
                                "tricky", "empty", "no_final_newline",
                                "final_cr"]


def make_object(rng, url, epoch, ip):
    """One object: (bytes, truth fields, close-delimiter offset in bytes)."""
    kind = rng.choice(CONTENT_KINDS)
    crlf = rng.random() < 0.15
    own_boundary = kind == "tricky"
    hint = "KulturArw3_" + md5hex((url + str(epoch)).encode())
    content, content_ct = make_content(rng, kind, hint)
    if own_boundary:
        boundary = hint
    else:
        boundary = "KulturArw3_" + md5hex(content)
    eol = "\r\n" if crlf else "\n"

    # Header-Info: a status line or libwww-style fields only.
    style = rng.choice(["status", "status", "libwww", "libwww"])
    status = None
    lines = []
    if style == "status":
        status, reason = rng.choice(STATUSES)
        lines.append("HTTP/1.%d %d %s" % (rng.randrange(2), status, reason))
    lines.append("Date: %s" % http_date(epoch))
    lines.append("Server: %s" % rng.choice(SERVERS))
    redirect = ""
    if status is not None and 300 <= status < 400:
        redirect = url.rstrip("/") + "/moved/"
        lines.append("Location: %s" % redirect)
    if rng.random() < 0.2:
        lines.append("MIME-version: 1.0")
    info_ct = None
    r = rng.random()
    if r < 0.6:
        info_ct = content_ct
    elif r < 0.8:
        info_ct = content_ct + "; charset=iso-8859-1"
    lines.append("Content-Length: %d" % len(content))
    if info_ct is not None:
        lines.append("Content-Type: %s" % info_ct)
    if style == "libwww":
        lines.append("Client-Date: %s" % http_date(epoch))
    part_ct = content_ct if (info_ct is not None or rng.random() < 0.8) else None
    mime = media_type(info_ct) or media_type(part_ct)

    md5 = md5hex(content)
    if rng.random() < 0.05:
        md5 = base64.b64encode(hashlib.md5(content).digest()).decode()
    archive = [
        "HTTP-www-archiver: KulturArw3",
        "HTTP-archiver-version: 0.01",
        "HTTP-URL: %s" % url,
        "HTTP-Content-MD5: %s" % md5,
        "HTTP-archive-time: %d" % epoch,
        "HTTP-IP-addr: %s" % ip,
    ]
    main = ["MIME-version: 1.0",
            "Content-Type: multipart/mixed; boundary=%s" % boundary]
    three_parts = rng.random() < 0.2
    out = []
    if three_parts:
        out.append(eol.join(main) + eol + eol)
        out.append("--%s%s" % (boundary, eol))
        out.append("Content-Type: text/plain%sHTTP-part: Archive-Info%s%s"
                   % (eol, eol, eol))
        out.append(eol.join(archive) + eol + eol)
    else:
        out.append(eol.join(main + ["HTTP-part: Archive-Info"] + archive)
                   + eol + eol)
    out.append("--%s%s" % (boundary, eol))
    out.append("Content-Type: text/plain; charset=\"US-ascii\"%s" % eol)
    out.append("HTTP-part: Header-Info%s%s" % (eol, eol))
    out.append(eol.join(lines) + eol + eol)
    out.append("--%s%s" % (boundary, eol))
    if part_ct is not None:
        out.append("Content-Type: %s%s" % (part_ct, eol))
    out.append("HTTP-part: Content%s%s" % (eol, eol))
    data = "".join(out).encode() + content + eol.encode()
    close_at = len(data)
    data += ("--%s--%s" % (boundary, eol)).encode()
    truth = {
        "url": url,
        "datetime": datetime14(epoch),
        "sha1": b32sha1(content),
        "mime": mime or "-",
        "status": str(status) if status is not None else "-",
        "ip": ip,
        "redirect": redirect,
        "damage": "",
        "md5": md5,
        "epoch": epoch,
        "boundary": boundary,
    }
    return data, truth, close_at


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--objects", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--concatenated", type=int, default=0,
                    help="files holding several objects")
    ap.add_argument("--damage", action="store_true")
    args = ap.parse_args()
    rng = random.Random(args.seed)

    n = args.objects
    hosts = []
    for i in range(max(1, n // 6)):
        host = "www.%s%d.se" % (rng.choice(WORDS), i)
        if rng.random() < 0.1:
            host += ":8080"
        hosts.append(host)
    snapshots = ["001", "002", "003"]

    # Group the objects into files: K concatenated files of 2 to 4
    # objects, the rest one per file.
    sizes = []
    left = n
    for _ in range(args.concatenated):
        if left < 2:
            break
        k = min(left, rng.randrange(2, 5))
        sizes.append(k)
        left -= k
    sizes += [1] * left
    rng.shuffle(sizes)

    files = []  # (relpath, bytes, [truth rows])
    serial = 0
    seen_names = set()
    for size in sizes:
        host = rng.choice(hosts)
        snapshot = rng.choice(snapshots)
        objs = []
        for _ in range(size):
            serial += 1
            path = "/".join(rng.choice(WORDS) for _ in range(rng.randrange(0, 3)))
            url = "http://%s/%s%s%d.html" % (host, path + "/" if path else "",
                                            rng.choice(WORDS), serial)
            if rng.random() < 0.1:
                url += "?q=%d&x=%s" % (serial, rng.choice(WORDS))
            epoch = rng.randrange(844000000, 1104537600)
            ip = "%d.%d.%d.%d" % (rng.randrange(1, 224), rng.randrange(256),
                                  rng.randrange(256), rng.randrange(1, 255))
            objs.append(make_object(rng, url, epoch, ip))
        first = objs[0][1]
        xx = md5hex(host.lower().encode())[:2]
        name = "%s.%d" % (md5hex(first["url"].encode()), first["epoch"])
        rel = "archive/%s/%s/%s/%s" % (xx, host, snapshot, name)
        assert rel not in seen_names
        seen_names.add(rel)
        files.append([rel, objs])

    if args.damage:
        damage_files(rng, files)

    out_files = []
    rows = []
    for rel, objs in files:
        data = b""
        offsets = []
        for i, (obj, truth, close_at) in enumerate(objs):
            if i > 0 and rng.random() < 0.4:
                data += b"\n"
            offsets.append(len(data))
            data += obj
        for i, (obj, truth, close_at) in enumerate(objs):
            off = offsets[i]
            if truth["damage"] == "missing_close":
                length = offsets[i + 1] - off
            else:
                length = len(obj)
            rows.append((rel, off, length, truth))
        out_files.append((rel, data))

    os.makedirs(args.out, exist_ok=True)
    for rel, data in out_files:
        p = os.path.join(args.out, *rel.split("/"))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    with open(os.path.join(args.out, "truth.tsv"), "w", encoding="utf-8",
              newline="\n") as f:
        f.write("#path\toffset\tlength\turl\tdatetime\tsha1\tmime\tstatus\tdamage\tip\tredirect\n")
        for rel, off, length, t in rows:
            f.write("\t".join([rel, str(off), str(length), t["url"],
                               t["datetime"], t["sha1"], t["mime"],
                               t["status"], t["damage"], t["ip"], t["redirect"]]) + "\n")
    return 0


def is_close_line(line, boundary):
    """Whether a line (without its LF) is a closing delimiter."""
    rest = line
    prefix = ("--%s--" % boundary).encode()
    if not rest.startswith(prefix):
        return False
    return rest[len(prefix):].rstrip(b"\r").strip(b" \t") == b""


def damage_files(rng, files):
    """Damages about one object in eight, each kind where it can happen."""
    for entry in files:
        rel, objs = entry
        for i, (obj, truth, close_at) in enumerate(objs):
            if rng.random() >= 0.125:
                continue
            last = i == len(objs) - 1
            kinds = ["md5_mismatch"]
            kinds.append("truncated" if last else "missing_close")
            kind = rng.choice(kinds)
            if kind == "md5_mismatch":
                bad = md5hex(obj + b"altered")
                text = obj.replace(("HTTP-Content-MD5: %s" % truth["md5"]).encode(),
                                   ("HTTP-Content-MD5: %s" % bad).encode(), 1)
                assert text != obj
                obj = text
            elif kind == "truncated":
                first_end = obj.index(b"\n") + 1
                while True:
                    cut = rng.randrange(first_end + 1, close_at + 1)
                    # Content that plays with the boundary may hold
                    # `--BOUNDARY-- words`; a cut right after its `--`
                    # would leave a sound closing delimiter at the end.
                    last_line = obj[:cut].rsplit(b"\n", 1)[-1]
                    if not is_close_line(last_line, truth["boundary"]):
                        break
                obj = obj[:cut]
            else:
                obj = obj[:close_at]
            truth["damage"] = kind
            objs[i] = (obj, truth, close_at)


if __name__ == "__main__":
    sys.exit(main())

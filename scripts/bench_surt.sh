#!/usr/bin/env bash
# Benchmark: SURT keys per second, single-threaded, `ukvs surt` against the
# reference (Python surt 0.3.1, bytes API, as cdxj-indexer calls it) on
# the same URL list. Both read the list from a file and write keys to
# /dev/null; wall time includes start-up (negligible at this size).
#
#   scripts/bench_surt.sh [URL_FILE] [N]
#
# Without URL_FILE, a list of N (default 200000) URLs is made: the original
# URLs of the CDX/CDXJ files under ../shared/corpus (when present) mixed
# with seeded synthetic web URLs (www hosts, ports, paths, dot segments,
# percent-encodings, queries with session ids, some IDN hosts). Numeric
# hosts that would make the reference call the system resolver are left
# out so that DNS does not slow the reference down.
#
# Output: keys/s for both (best of REPS runs each, default 3) and the
# ratio (target: ukvs >= 30x).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
N="${2:-200000}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

if [[ $# -ge 1 && -n "$1" ]]; then
    cp "$1" "$WORK/urls.txt"
else
    python3 - "$N" "$WORK/urls.txt" <<'EOF'
import glob, json, os, random, sys
n, out = int(sys.argv[1]), sys.argv[2]
real = []
for path in glob.glob("../shared/corpus/**/*.cdx*", recursive=True):
    if path.endswith(".gz") or not os.path.isfile(path):
        continue
    with open(path, "rb") as f:
        for line in f:
            line = line.rstrip(b"\r\n")
            if line.startswith(b" CDX") or not line:
                continue
            if line.rstrip().endswith(b"}") and b" {" in line:
                try:
                    url = json.loads(line.split(b" ", 2)[2]).get("url")
                except (ValueError, IndexError):
                    continue
                if url:
                    real.append(url.encode("utf-8"))
            else:
                parts = line.split(b" ")
                if len(parts) >= 3 and b"://" in parts[2]:
                    real.append(parts[2])
rng = random.Random(7)
words = ["news", "index", "about", "Products", "blog", "2019", "img", "static", "search",
         "article", "page", "view", "en", "de", "home", "a b", "caf%C3%A9", "%7Euser"]
tlds = ["com", "org", "net", "de", "co.uk", "fr", "jp", "gov", "edu", "info"]
idn = ["bücher", "faß", "пример", "例え", "☃"]
def synth():
    host = rng.choice(["www.", "www.", "", "WWW.", "www2.", "m.", "blog."])
    host += (rng.choice(idn) if rng.random() < 0.05 else rng.choice(words).replace(" ", "").replace("%", "")) + str(rng.randint(0, 999))
    host += "." + rng.choice(tlds)
    port = rng.choice([""] * 40 + [":80", ":8080", ":443"])
    path = "".join("/" + rng.choice(words) for _ in range(rng.randint(0, 5)))
    if rng.random() < 0.1:
        path += "/../x/./y/"
    path += rng.choice(["", "", ".html", ".php", "/", ".aspx"])
    q = ""
    if rng.random() < 0.5:
        params = ["%s=%s" % (rng.choice(["id", "q", "page", "Sort", "lang", "ref"]), rng.randint(0, 10**6)) for _ in range(rng.randint(1, 5))]
        if rng.random() < 0.05:
            params.append("jsessionid=" + "".join(rng.choice("0123456789ABCDEF") for _ in range(32)))
        q = "?" + "&".join(params)
    frag = "#top" if rng.random() < 0.05 else ""
    return (rng.choice(["http://", "http://", "https://"]) + host + port + path + q + frag).encode("utf-8")
urls = []
while len(urls) < n:
    if real and rng.random() < 0.2:
        urls.append(rng.choice(real))
    else:
        urls.append(synth())
with open(out, "wb") as f:
    f.write(b"\n".join(urls[:n]) + b"\n")
print("URL list: %d lines (%d distinct corpus URLs mixed in)" % (n, len(set(real))), file=sys.stderr)
EOF
fi
LINES=$(wc -l < "$WORK/urls.txt")

cargo build --release --quiet
BIN="$CARGO_TARGET_DIR/release/ukvs"

cat > "$WORK/ref.py" <<'EOF'
import sys, surt
for line in sys.stdin.buffer:
    url = line.rstrip(b"\n")
    try:
        k = surt.surt(url)
    except Exception:
        k = url
    sys.stdout.buffer.write(k + b"\n")
EOF

now() { date +%s.%N; }
secs() { python3 -c "print(max($2 - $1, 1e-9))"; }

# Best wall time of REPS runs of "$@" (stdin from the URL list, stdout to
# $OUT); the same number of runs for both tools, since the machine may be
# shared.
REPS="${REPS:-3}"
best_of() {
    local best="" t0 t1 s
    for _ in $(seq "$REPS"); do
        t0=$(now); "$@" < "$WORK/urls.txt" > "$OUT"; t1=$(now)
        s=$(secs "$t0" "$t1")
        if [[ -z "$best" ]] || python3 -c "import sys; sys.exit(0 if $s < $best else 1)"; then best=$s; fi
    done
    echo "$best"
}
OUT=/dev/null
best=$(best_of "$BIN" surt --quiet)
OUT="$WORK/ref.keys"
py=$(best_of python3 "$WORK/ref.py")
"$BIN" surt --quiet < "$WORK/urls.txt" > "$WORK/ukvs.keys"
if cmp -s "$WORK/ref.keys" "$WORK/ukvs.keys"; then
    echo "keys identical to the reference on all $LINES URLs"
else
    echo "WARNING: keys differ from the reference:"; diff "$WORK/ref.keys" "$WORK/ukvs.keys" | head
fi

python3 - "$LINES" "$best" "$py" <<'EOF'
import sys
n, rs, py = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print("URLs:               %d" % n)
print("ukvs surt:          %.3f s  %12.0f keys/s" % (rs, n / rs))
print("Python surt 0.3.1:  %.3f s  %12.0f keys/s" % (py, n / py))
print("ratio:              %.1fx" % (py / rs))
EOF

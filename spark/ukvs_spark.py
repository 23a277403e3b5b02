#!/usr/bin/env python3
"""Index web archives into a ZipNum cluster on Spark, with ukvs doing the work.

Spark schedules, retries and shuffles; the `ukvs` command does every
per-record step (indexing, block compression, MementoMap, statistics).
The job only moves lines between the two:

1. Each input file goes to `ukvs index -j 1` on an executor, several
   files to a task (`--bytes-per-task`), as each task costs Spark a
   fixed time (about 0.15 s of a core in local mode). Local files are
   opened by ukvs; other URLs are read by Spark and streamed into ukvs
   through a named pipe that bears the file's name, so the `filename`
   recorded is the same. Its output lines come back as rows:
   header lines, data lines with their SURT key, and the messages of
   damaged records. The file's lines are sorted by ukvs (in memory: an
   index is a small fraction of its archive) rather than streamed with
   `--no-sort`, because only then does ukvs write the file's `!meta`
   header (its name and filedesc or warcinfo record) wherever that record
   is (`--no-sort` takes it only from the first record), and the cluster's
   `index.headers` must hold it to equal `ukvs index` of the inputs.
2. Split points are sampled from the keys, or read from `--splits FILE`,
   or from the cluster already in OUTDIR; they are written to
   OUTDIR/splits.txt for the next batch.
3. Data lines are range-partitioned by their key alone (every URL in one
   shard) and sorted within partitions in byte order.
4. Per shard, an executor writes the lines (below the header lines) to a
   local file, merges in the shard's lines already in the cluster, if any,
   and runs `ukvs zipnum build --shards 1`, `ukvs mementomap generate` and
   `ukvs stats --json --top 0` on it.
5. The driver puts the shard files in place under their cluster names,
   renumbers the blocks of the shards' `.idx` parts into one `index.idx`,
   writes `index.loc` and `index.headers`, and runs `ukvs mementomap merge`
   and `compact` and `ukvs stats --merge` over the per-shard parts.

OUTDIR after a run (a shared directory every node sees):

    index-NN.cdx.gz    shard NN (shard 1 holds the keys below the first
                       split point), blocks as `ukvs zipnum build` writes
    index.idx          one line per block; block numbers count across shards
    index.loc          `index-NN<TAB>index-NN.cdx.gz`, shards that hold lines
    index.headers      the header lines `ukvs index` writes above the data
                       lines (a cluster stores none): `cat index.headers`
                       then the blocks in `.idx` order is `ukvs index` of
                       the inputs, byte for byte
    splits.txt         the split keys, one a line
    mementomap.ukvs    the map of the whole cluster (its `!meta` names
                       `index.idx`, beside it, as its source)
    stats.json         its statistics
    parts/             per-shard `mementomap-NN.ukvs` (each naming its
                       shard, `../index-NN.cdx.gz`, as its source) and
                       `stats-NN.json`, kept so that the next batch
                       rebuilds only the shards it touches

Executors write into OUTDIR/_staging-RUN/ under temporary names that ukvs
renames when a file is complete, so a task Spark retries or kills leaves
no partial file under a final name; the driver moves the finished files
into place only after every task succeeded, the `.idx` last but the maps,
and removes the staging directory. Run
`python3 spark/ukvs_spark.py --help` for the options.
"""

import argparse
import functools
import os
import posixpath
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import uuid
from urllib.parse import urlsplit

# Row kinds of the indexing step's output.
HEADER, DATA, MESSAGE = 0, 1, 2

# File names `ukvs index` picks up in a directory (any case).
ARCHIVE_SUFFIXES = (".arc", ".arc.gz", ".warc", ".warc.gz", ".warc.zst")

# Keys sampled per shard to choose split points.
SAMPLES_PER_SHARD = 200

# Bytes of ukvs output read at a time (one Arrow batch of lines).
READ_SIZE = 1 << 22


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Index ARC and WARC files into a ZipNum cluster, a "
        "MementoMap and statistics on Spark; ukvs does every per-record step.",
        epilog="A new batch run with the OUTDIR of an existing cluster merges "
        "into it shard by shard, with the cluster's split points.",
    )
    p.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="ARC or WARC files or directories: local paths or URLs Spark reads",
    )
    p.add_argument(
        "--list",
        action="append",
        default=[],
        metavar="FILE",
        help="local file of inputs, one a line (`-` = stdin); repeatable",
    )
    p.add_argument("-o", "--output", required=True, metavar="OUTDIR",
                   help="cluster directory, shared by the driver and every executor")
    p.add_argument("--shards", type=int, help="number of shards (range partitions)")
    p.add_argument("--splits", metavar="FILE",
                   help="split keys, one a line, instead of sampling (a batch's splits.txt)")
    p.add_argument("--lines-per-block", type=int, default=3000,
                   help="lines per gzip block (default 3000, as ukvs zipnum build)")
    p.add_argument("--stats-top", type=int, default=10,
                   help="largest hosts and domains listed in stats.json (0 = all; default 10)")
    p.add_argument("--hcf", default="inf",
                   help="host compaction factor of the map (default inf: no rollup, as mementomap generate)")
    p.add_argument("--pcf", default="inf",
                   help="path compaction factor of the map (default inf)")
    p.add_argument("--bytes-per-task", type=parse_size, default=parse_size("256M"),
                   metavar="SIZE", help="archive bytes indexed per task, several files to a task "
                   "(K, M, G suffixes; default 256M): each task costs Spark a fixed time")
    p.add_argument("--index-arg", action="append", default=[], metavar="ARG",
                   help="extra option for `ukvs index` (e.g. --index-arg=--post-append); repeatable")
    p.add_argument("--ukvs", default="ukvs",
                   help="the ukvs binary: a path valid on every node, or a name looked up "
                   "among the files shipped with --files, then on PATH (default ukvs)")
    p.add_argument("--via-spark", action="store_true",
                   help="read local files through Spark too and stream them to ukvs, as "
                   "non-local URLs always are")
    p.add_argument("--table", metavar="DIR",
                   help="also the capture table (Parquet, Common Crawl's schema) in DIR, "
                   "partitioned crawl=.../subset=..., one file per shard and partition: "
                   "the rows `ukvs table` writes for the whole index")
    p.add_argument("--crawl", metavar="NAME",
                   help="the table's crawl (default: OUTDIR's name; see `ukvs table --help`)")
    p.add_argument("--subset", metavar="NAME",
                   help="the table's subset of every row (default: per row)")
    p.add_argument("--master", help="Spark master (e.g. local[2]); spark-submit's when absent")
    p.add_argument("--remote", help="Spark Connect URL (sc://host:port) instead of a master")
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                   help="Spark configuration; repeatable")
    args = p.parse_args(argv)
    if args.lines_per_block < 1:
        p.error("--lines-per-block must be at least 1")
    if args.shards is not None and args.shards < 1:
        p.error("--shards must be at least 1")
    return args


def parse_size(text):
    """`256M` -> bytes (K, M, G suffixes, powers of 1024)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    scale = units.get(text[-1:].upper(), 1)
    number = text[:-1] if scale > 1 else text
    if not number.isdigit() or int(number) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size like 256M")
    return int(number) * scale


def index_tasks(spark, files, bytes_per_task):
    """How many tasks index the files: about `bytes_per_task` each, at
    least one per core where Spark tells the cores, at most one per file."""
    tasks = -(-sum(length for _, length in files) // bytes_per_task)
    try:
        tasks = max(tasks, spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        pass
    return max(1, min(tasks, len(files)))


# ---------------------------------------------------------------------------
# Finding ukvs (on the driver and on every executor)

_resolved = {}


def resolve_ukvs(spec):
    """Path of the ukvs binary on this node.

    A spec with a `/` is a path; a bare name is looked up among the files
    Spark shipped (`--files`), then on PATH. A shipped file that lost its
    execute bit is copied once into a private directory and made
    executable.
    """
    if spec in _resolved:
        return _resolved[spec]
    path = None
    if "/" in spec:
        path = spec
    else:
        shipped = []
        try:
            from pyspark import SparkFiles

            shipped.append(os.path.join(SparkFiles.getRootDirectory(), spec))
        except Exception:  # no SparkContext here (driver of Spark Connect)
            pass
        shipped.append(os.path.join(os.getcwd(), spec))
        path = next((p for p in shipped if os.path.isfile(p)), None) or shutil.which(spec)
    if path is None or not os.path.isfile(path):
        raise FileNotFoundError(
            f"ukvs binary {spec!r} not found on {os.uname().nodename}: install the ukvs "
            "wheel on every node, ship the binary with --files, or give --ukvs PATH"
        )
    if not os.access(path, os.X_OK):
        private = tempfile.mkdtemp(prefix="ukvs-bin-")
        copy = os.path.join(private, "ukvs")
        shutil.copyfile(path, copy)
        os.chmod(copy, stat.S_IRWXU)
        path = copy
    _resolved[spec] = path
    return path


def run_ukvs(ukvs, args, what, cwd=None):
    """Runs `ukvs ARGS`; raises naming `what` unless it exits 0."""
    proc = subprocess.run([ukvs, *args], cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{what}: `ukvs {shlex.join(args)}` exited {proc.returncode}: "
            f"{proc.stderr.decode(errors='replace').strip()}"
        )


# ---------------------------------------------------------------------------
# Inputs

def local_path(url):
    """The local path of a `file:` URL or plain path, else None."""
    parts = urlsplit(url)
    if parts.scheme in ("", "file"):
        return parts.path
    return None


def normalise(url):
    """An input as Spark's file listing spells it, to compare the two."""
    path = local_path(url)
    if path is not None:
        return "file:" + os.path.abspath(path).rstrip("/")
    return url.rstrip("/")


def read_lists(lists):
    """Inputs named in list files, one a line (blank lines skipped)."""
    inputs = []
    for name in lists:
        try:
            if name == "-":
                text = sys.stdin.read()
            else:
                with open(name, encoding="utf-8") as f:
                    text = f.read()
        except OSError as e:
            raise SystemExit(f"ukvs_spark: cannot read the list {name}: {e.strerror}")
        inputs += [line.strip() for line in text.splitlines() if line.strip()]
    return inputs


def list_inputs(spark, inputs):
    """Every archive file under the inputs, as (path URL, length), sorted.

    Spark lists the files, so any filesystem it reads works. A file named
    as an input is taken whatever its name; files found in directories are
    taken when their names end like an archive's (any case), as
    `ukvs index` walks directories.
    """
    rows = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .load(inputs)
        .select("path", "length")
        .collect()
    )
    named = {normalise(i) for i in inputs}
    files = set()
    for row in rows:
        if normalise(row.path) in named or row.path.lower().endswith(ARCHIVE_SUFFIXES):
            files.add((row.path, row.length))
    return sorted(files)


# ---------------------------------------------------------------------------
# Step 1: index each file (executors)

def index_files(ukvs_spec, index_args, batches):
    """mapInArrow body: `ukvs index` of each file of the batches.

    Rows in: `path` (and `content` when Spark read the file). Rows out:
    `kind` (HEADER, DATA, MESSAGE), `key` (the SURT key of a data line)
    and `line` (without its LF; a message's text).
    """
    import pyarrow as pa

    ukvs = resolve_ukvs(ukvs_spec)
    for batch in batches:
        columns = batch.to_pydict()
        contents = columns.get("content")
        for i, url in enumerate(columns["path"]):
            content = contents[i] if contents is not None else None
            yield from index_file(ukvs, index_args, url, content, pa)


def index_file(ukvs, index_args, url, content, pa):
    """Record batches of `ukvs index` of one file (see `index_files`)."""
    import pyarrow.compute as pc

    with tempfile.TemporaryDirectory(prefix="ukvs-spark-") as tmp:
        feeder = None
        if content is None:
            target = local_path(url)
            opts = []
        else:
            # A pipe named like the file: ukvs records the name it reads.
            target = os.path.join(tmp, posixpath.basename(urlsplit(url).path) or "input")
            os.mkfifo(target)
            feeder = PipeFeeder(target, content)
            opts = ["--no-mmap"]
        cmd = [ukvs, "index", "-j", "1", "-q", "--tmp-dir", tmp, *opts, *index_args, target]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        errors = []
        drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()))
        drain.start()
        rest, at_top = b"", True
        while True:
            chunk = proc.stdout.read(READ_SIZE)
            if not chunk:
                break
            lines = (rest + chunk).split(b"\n")
            rest = lines.pop()
            headers = []
            if at_top:
                while lines and is_header(lines[0]):
                    headers.append(lines.pop(0))
                at_top = not lines
            if headers:
                yield rows_batch(pa, HEADER, headers, [None] * len(headers))
            if lines:
                yield data_batch(pa, pc, lines)
        if rest:
            if at_top and is_header(rest):
                yield rows_batch(pa, HEADER, [rest], [None])
            else:
                yield data_batch(pa, pc, [rest])
        code = proc.wait()
        drain.join()
        if feeder is not None:
            feeder.finish()
        stderr = errors[0].decode(errors="replace").strip() if errors else ""
        if code not in (0, 2):
            # A crash or a signal: Spark retries the task, then fails the job.
            raise RuntimeError(f"{url}: `{shlex.join(cmd)}` exited {code}: {stderr}")
        if code == 2 or stderr:
            text = f"{url}: ukvs index exited {code}" + (f":\n{stderr}" if stderr else "")
            yield rows_batch(pa, MESSAGE, [text.encode()], [None])


def is_header(line):
    """A header line of an index (`!...` or a CDX legend)."""
    return line.startswith(b"!") or line.startswith(b" CDX")


def rows_batch(pa, kind, lines, keys):
    return pa.RecordBatch.from_arrays(
        [pa.array([kind] * len(lines), pa.int8()), pa.array(keys, pa.binary()),
         pa.array(lines, pa.binary())],
        names=["kind", "key", "line"],
    )


def data_batch(pa, pc, lines):
    """Data lines with their keys: the bytes before the first space."""
    line_array = pa.array(lines, pa.binary())
    keys = pc.list_element(pc.split_pattern(line_array, b" ", max_splits=1), 0)
    return pa.RecordBatch.from_arrays(
        [pa.array([DATA] * len(lines), pa.int8()), keys, line_array],
        names=["kind", "key", "line"],
    )


class PipeFeeder:
    """Writes bytes into a named pipe from a thread, so that ukvs reads them."""

    def __init__(self, path, data):
        self.path = path
        self.thread = threading.Thread(target=self._write, args=(data,), daemon=True)
        self.thread.start()

    def _write(self, data):
        try:
            with open(self.path, "wb") as pipe:
                pipe.write(data)
        except BrokenPipeError:  # ukvs stopped reading; its exit code tells why
            pass

    def finish(self):
        """Joins the writer once ukvs has exited. If ukvs stopped before
        the end (or never opened the pipe), what is left is read away
        here, so that the writer cannot block."""
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            while self.thread.is_alive():
                try:
                    if not os.read(fd, 1 << 20):
                        self.thread.join(0.01)
                except BlockingIOError:
                    self.thread.join(0.01)
        finally:
            os.close(fd)


# ---------------------------------------------------------------------------
# Step 2: split points (driver)

def choose_splits(keys, shards):
    """Up to `shards - 1` ascending split keys at the quantiles of a sample."""
    keys = sorted(keys)
    splits = []
    for i in range(1, shards):
        if not keys:
            break
        key = keys[i * len(keys) // shards]
        if key > keys[0] and (not splits or key > splits[-1]):
            splits.append(key)
    return splits


def read_splits(path):
    """Split keys of a file, checked to ascend strictly."""
    try:
        with open(path, "rb") as f:
            splits = f.read().splitlines()
    except OSError as e:
        raise SystemExit(f"ukvs_spark: cannot read the splits {path}: {e.strerror}")
    for n, (a, b) in enumerate(zip(splits, splits[1:]), start=2):
        if not a < b or b"" in (a, b):
            raise SystemExit(f"ukvs_spark: {path}: line {n}: split keys must be "
                             "non-empty and ascend strictly")
    return splits


def shard_column(F, key, splits):
    """Spark expression: the shard of a key, by binary search of the splits.

    A line is `key SPACE ...` and a key holds no space, so comparing
    `key + " "` with `split + " "` orders keys as their lines sort: the
    shards then follow one another in the byte order of whole lines.
    """
    probe = F.concat(key, F.lit(bytearray(b" ")))

    def pick(lo, hi):  # the shard among lo..hi
        if lo == hi:
            return F.lit(lo)
        mid = (lo + hi) // 2  # keys from splits[mid] on are past shard mid
        return F.when(probe >= F.lit(bytearray(splits[mid] + b" ")), pick(mid + 1, hi)) \
            .otherwise(pick(lo, mid))

    return pick(0, len(splits))


# ---------------------------------------------------------------------------
# Step 4: build each shard (executors)

def shard_name(shard):
    """The cluster name of shard number `shard` (0-based), as ukvs names them."""
    return f"index-{shard + 1:02}"


class ShardJob:
    """What each shard task needs: the binary, the staging directory, the
    header lines and the shards already in the cluster."""

    def __init__(self, ukvs_spec, outdir, staging, headers, lines_per_block, old_idx,
                 table_args=None):
        self.table_args = table_args  # `ukvs table` naming options, or None
        self.ukvs_spec = ukvs_spec
        self.outdir = outdir
        self.staging = staging
        self.headers = headers
        self.lines_per_block = lines_per_block
        self.old_idx = old_idx  # shard -> its lines of the existing index.idx

    def run(self, batches):
        """mapInArrow body: rows (`shard`, `line`) sorted by shard then line;
        one row (`shard`, `idx`) out per shard built."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        ukvs = resolve_ukvs(self.ukvs_spec)
        shard, out, tmp = None, None, None
        try:
            for batch in batches:
                shards = batch.column(0).to_numpy()
                lines = batch.column(1)
                cuts = np.flatnonzero(shards[1:] != shards[:-1]) + 1
                for start, end in zip([0, *cuts], [*cuts, len(shards)]):
                    if shards[start] != shard:
                        if shard is not None:
                            out.close()
                            yield self.finish(ukvs, shard, tmp, pa)
                            shutil.rmtree(tmp)
                        shard = int(shards[start])
                        tmp = tempfile.mkdtemp(prefix=f"ukvs-spark-{shard_name(shard)}-")
                        out = open(os.path.join(tmp, "new.ukvs"), "wb")
                        out.write(b"".join(h + b"\n" for h in self.headers))
                    run = lines.slice(start, end - start)
                    offsets = pa.array([0, len(run)], pa.int32())
                    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, run), b"\n")
                    out.write(joined[0].as_py() + b"\n")
            if shard is not None:
                out.close()
                yield self.finish(ukvs, shard, tmp, pa)
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

    def finish(self, ukvs, shard, tmp, pa):
        """Merges in the shard's old lines, then cuts the blocks, the map
        part and the statistics part into the staging directory."""
        name = shard_name(shard)
        # The shard's index, named alike on every run.
        index = f"{name}.ukvs"
        new = os.path.join(tmp, "new.ukvs")
        old_idx = self.old_idx.get(shard)
        if old_idx:
            old = self.old_lines(ukvs, shard, old_idx, tmp)
            run_ukvs(ukvs, ["merge", old, new, "-o", index], f"shard {name}", cwd=tmp)
        else:
            os.rename(new, os.path.join(tmp, index))
        cluster = os.path.join(self.staging, name)
        run_ukvs(ukvs, ["zipnum", "build", "--shards", "1", "--lines-per-block",
                        str(self.lines_per_block), "-o", cluster, index], f"shard {name}",
                 cwd=tmp)
        # The map part summarises the shard's blocks, named from `parts/`,
        # where the part is kept.
        run_ukvs(ukvs, ["mementomap", "generate", "-q", "-j", "1", "--source",
                        f"../{name}.cdx.gz", "-o",
                        os.path.join(self.staging, f"mementomap-{shard + 1:02}.ukvs"), index],
                 f"shard {name}", cwd=tmp)
        run_ukvs(ukvs, ["stats", "--json", "--top", "0", "-q", "-j", "1", "-o",
                        os.path.join(self.staging, f"stats-{shard + 1:02}.json"), index],
                 f"shard {name}", cwd=tmp)
        if self.table_args is not None:
            # The shard's rows, partitioned as the whole table is.
            run_ukvs(ukvs, ["table", "-q", *self.table_args, "-o",
                            os.path.join(self.staging, f"table-{shard + 1:02}"), index],
                     f"shard {name}", cwd=tmp)
        with open(os.path.join(cluster, "index.idx"), "rb") as f:
            idx = f.read()
        return pa.RecordBatch.from_arrays(
            [pa.array([shard], pa.int32()), pa.array([idx], pa.binary())],
            names=["shard", "idx"],
        )

    def old_lines(self, ukvs, shard, idx_lines, tmp):
        """The shard's lines in the existing cluster, read back by ukvs
        through a one-shard cluster (its `.idx` lines, a `.loc` naming the
        shard file in OUTDIR)."""
        name = shard_name(shard)
        view = os.path.join(tmp, "old-cluster")
        os.mkdir(view)
        with open(os.path.join(view, "index.idx"), "wb") as f:
            f.write(b"".join(line + b"\n" for line in idx_lines))
        with open(os.path.join(view, "index.loc"), "w") as f:
            f.write(f"{name}\t{os.path.abspath(os.path.join(self.outdir, name))}.cdx.gz\n")
        path = os.path.join(tmp, "old.ukvs")
        with open(path, "wb") as out:
            # Every line of the cluster: an empty key's prefix range.
            proc = subprocess.run([ukvs, "lookup", view, "--key", "", "--match", "prefix"],
                                  stdout=out, stderr=subprocess.PIPE)
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"shard {name}: reading it back from {self.outdir} failed: "
                               f"{proc.stderr.decode(errors='replace').strip()}")
        return path


# ---------------------------------------------------------------------------
# Step 5: put the cluster together (driver)

def read_cluster(outdir):
    """The existing cluster's (splits, idx lines by shard, headers), or None."""
    idx_path = os.path.join(outdir, "index.idx")
    if not os.path.exists(idx_path):
        return None
    splits = read_splits(os.path.join(outdir, "splits.txt"))
    by_shard = {}
    with open(idx_path, "rb") as f:
        for n, line in enumerate(f.read().splitlines(), start=1):
            fields = line.split(b"\t")
            name = fields[1].decode(errors="replace") if len(fields) == 5 else ""
            if not name.startswith("index-") or not name[6:].isdigit():
                raise SystemExit(f"ukvs_spark: {idx_path}: line {n} is not a block of "
                                 "this job's cluster")
            by_shard.setdefault(int(name[6:]) - 1, []).append(line)
    headers = []
    headers_path = os.path.join(outdir, "index.headers")
    if os.path.exists(headers_path):
        with open(headers_path, "rb") as f:
            headers = f.read().splitlines()
    return splits, by_shard, headers


def write_file(path, data):
    """Writes a file whole under a temporary name, then renames it."""
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def commit(ukvs, args, staging, built, old_idx, shards, splits, headers):
    """Moves the staged shards into OUTDIR and writes the cluster's files."""
    outdir, parts = args.output, os.path.join(args.output, "parts")
    os.makedirs(parts, exist_ok=True)
    for shard in sorted(built):
        n = shard + 1
        os.replace(os.path.join(staging, shard_name(shard), "index-01.cdx.gz"),
                   os.path.join(outdir, f"{shard_name(shard)}.cdx.gz"))
        for part in (f"mementomap-{n:02}.ukvs", f"stats-{n:02}.json"):
            os.replace(os.path.join(staging, part), os.path.join(parts, part))

    idx, loc, block_no, present = [], [], 0, []
    for shard in range(shards):
        if shard in built:
            lines = built[shard].splitlines()
        else:
            lines = old_idx.get(shard, [])
        if not lines:
            continue
        present.append(shard)
        name = shard_name(shard).encode()
        loc.append(name + b"\t" + name + b".cdx.gz\n")
        for line in lines:
            key, _, offset, length, _ = line.split(b"\t")
            block_no += 1
            idx.append(b"\t".join([key, name, offset, length, str(block_no).encode()]) + b"\n")
    if args.table:
        commit_table(args.table, staging, built)
    write_file(os.path.join(outdir, "index.headers"), b"".join(h + b"\n" for h in headers))
    write_file(os.path.join(outdir, "splits.txt"), b"".join(s + b"\n" for s in splits))
    write_file(os.path.join(outdir, "index.loc"), b"".join(loc))
    write_file(os.path.join(outdir, "index.idx"), b"".join(idx))

    maps = [os.path.join(parts, f"mementomap-{s + 1:02}.ukvs") for s in present]
    reports = [os.path.join(parts, f"stats-{s + 1:02}.json") for s in present]
    with tempfile.TemporaryDirectory(prefix="ukvs-spark-map-") as tmp:
        # The map of all shards, rolled up once over the whole (rollups
        # cross shard boundaries, so the parts are never compacted alone).
        merged = "mementomap-merged.ukvs"
        if maps:
            run_ukvs(ukvs, ["mementomap", "merge", "-q", "--disjoint", *maps, "-o", merged],
                     "mementomap.ukvs", cwd=tmp)
        else:
            run_ukvs(ukvs, ["mementomap", "generate", "-q", "-o", merged, "/dev/null"],
                     "mementomap.ukvs", cwd=tmp)
        # The map summarises the cluster beside it, not the merged parts
        # it is compacted from: its source is the cluster's `.idx`, named
        # from the map's directory, so that the two can move together.
        run_ukvs(ukvs, ["mementomap", "compact", "-q", "--hcf", args.hcf, "--pcf", args.pcf,
                        "--source", "index.idx", merged,
                        "-o", os.path.abspath(os.path.join(outdir, "mementomap.ukvs"))],
                 "mementomap.ukvs", cwd=tmp)
    if reports:
        run_ukvs(ukvs, ["stats", "--merge", "--json", "-q", "--top", str(args.stats_top),
                        *reports, "-o", os.path.join(outdir, "stats.json")], "stats.json")
    else:
        run_ukvs(ukvs, ["stats", "--json", "-q", "--top", str(args.stats_top), "/dev/null",
                        "-o", os.path.join(outdir, "stats.json")], "stats.json")
    return len(present)


def commit_table(table, staging, built):
    """Puts each built shard's table files in place: shard N's rows of a
    partition are `crawl=C/subset=S/part-0000N.parquet`, so the files of a
    partition in name order hold its rows in key order (shards are key
    ranges). A rebuilt shard's old files go first."""
    os.makedirs(table, exist_ok=True)
    for shard in sorted(built):
        part = f"part-{shard + 1:05}.parquet"
        for root, _, files in os.walk(table):
            if part in files:
                os.remove(os.path.join(root, part))
        shard_dir = os.path.join(staging, f"table-{shard + 1:02}")
        for root, _, files in os.walk(shard_dir):
            for f in files:
                rel = os.path.relpath(root, shard_dir)
                os.makedirs(os.path.join(table, rel), exist_ok=True)
                os.replace(os.path.join(root, f), os.path.join(table, rel, part))


def table_args(args):
    """The naming options of `ukvs table` for the shards' tables."""
    crawl = args.crawl or os.path.basename(os.path.normpath(args.output)).split(".")[0]
    return ["--crawl", crawl] + (["--subset", args.subset] if args.subset else [])


# ---------------------------------------------------------------------------

def spark_session(args):
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("ukvs")
    if args.remote:
        builder = builder.remote(args.remote)
    elif args.master:
        builder = builder.master(args.master)
        if args.master.startswith("local"):
            # A local run listens on loopback only, and its Python workers
            # are this interpreter.
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            builder = builder.config("spark.driver.host", "127.0.0.1") \
                .config("spark.driver.bindAddress", "127.0.0.1")
    for setting in args.conf:
        key, sep, value = setting.partition("=")
        if not sep:
            raise SystemExit(f"ukvs_spark: --conf {setting!r} is not KEY=VALUE")
        builder = builder.config(key, value)
    return builder.getOrCreate()


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    inputs = args.inputs + read_lists(args.list)
    if not inputs:
        raise SystemExit("ukvs_spark: no inputs (give files, directories or --list FILE)")
    args.output = os.path.abspath(args.output)
    if args.table:
        args.table = os.path.abspath(args.table)
    os.makedirs(args.output, exist_ok=True)
    existing = read_cluster(args.output)
    splits = None
    if existing:
        splits = existing[0]
    if args.splits:
        given = read_splits(args.splits)
        if splits is not None and given != splits:
            raise SystemExit(f"ukvs_spark: {args.splits} differs from the splits of the "
                             f"cluster in {args.output}: a batch merges with the same splits")
        splits = given
    if splits is not None and args.shards is not None and args.shards != len(splits) + 1:
        raise SystemExit(f"ukvs_spark: --shards {args.shards}, but the splits make "
                         f"{len(splits) + 1} shards")
    if splits is None and args.shards is None:
        raise SystemExit("ukvs_spark: give --shards N (or --splits FILE)")

    spark = spark_session(args)
    try:
        return run_job(spark, args, inputs, splits, existing)
    finally:
        spark.stop()


def run_job(spark, args, inputs, splits, existing):
    """Steps 1-5 (see the module's doc); returns the exit code."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import (BinaryType, ByteType, IntegerType, StructField,
                                   StructType)

    ukvs = resolve_ukvs(args.ukvs)
    files = list_inputs(spark, inputs)
    if not files:
        raise SystemExit(f"ukvs_spark: no ARC or WARC files in {', '.join(inputs)}")
    # Largest first: dealt round-robin to the tasks, files of all sizes
    # even out.
    files.sort(key=lambda f: (-f[1], f[0]))
    local = [f for f in files if local_path(f[0]) is not None and not args.via_spark]
    remote = sorted({p for p, _ in files} - {p for p, _ in local})
    index_schema = StructType([StructField("kind", ByteType()), StructField("key", BinaryType()),
                               StructField("line", BinaryType())])
    index = functools.partial(index_files, args.ukvs, args.index_arg)
    parts = []
    if local:
        paths = spark.createDataFrame([(p,) for p, _ in local], "path string")
        tasks = index_tasks(spark, local, args.bytes_per_task)
        parts.append(paths.repartition(tasks).mapInArrow(index, index_schema))
    if remote:
        content = spark.read.format("binaryFile").load(remote).select("path", "content")
        parts.append(content.mapInArrow(index, index_schema))
    indexed = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
    indexed = indexed.persist()

    # The count indexes the files into the cache; then one more pass
    # brings the headers, the messages and (without split points) a
    # sample of the keys to the driver.
    data_lines = indexed.filter(F.col("kind") == DATA).count()
    shards = len(splits) + 1 if splits is not None else args.shards
    fraction = 0.0 if splits is not None else \
        min(1.0, SAMPLES_PER_SHARD * shards / max(data_lines, 1))
    side = indexed.filter((F.col("kind") != DATA) | (F.rand(seed=19) < F.lit(fraction))) \
        .select("kind", "key", "line").collect()
    headers = {bytes(r.line) for r in side if r.kind == HEADER}
    messages = [bytes(r.line).decode(errors="replace") for r in side if r.kind == MESSAGE]
    if splits is None:
        splits = choose_splits([bytes(r.key) for r in side if r.kind == DATA], shards)
    shards = len(splits) + 1
    old_idx = {}
    if existing:
        old_idx = existing[1]
        headers.update(existing[2])
    headers = sorted(headers)

    staging = os.path.join(args.output, f"_staging-{uuid.uuid4().hex}")
    os.makedirs(staging)
    try:
        job = ShardJob(args.ukvs, args.output, staging, headers, args.lines_per_block, old_idx,
                       table_args(args) if args.table else None)
        by_shard = (
            indexed.filter(F.col("kind") == DATA)
            .select(shard_column(F, F.col("key"), splits).alias("shard"), "line")
            .repartitionByRange(shards, "shard")
            .sortWithinPartitions("shard", "line")
        )
        built_rows = by_shard.mapInArrow(
            job.run, StructType([StructField("shard", IntegerType()),
                                 StructField("idx", BinaryType())])
        ).collect()
        built = {r.shard: bytes(r.idx) for r in built_rows}
        present = commit(ukvs, args, staging, built, old_idx, shards, splits, headers)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        indexed.unpersist()

    for message in messages:
        print(message, file=sys.stderr)
    print(f"ukvs_spark: {len(files)} files, {data_lines} lines: {len(built)} of {shards} "
          f"shards built, {present} in {args.output}", file=sys.stderr)
    return 2 if messages else 0

if __name__ == "__main__":
    sys.exit(main())

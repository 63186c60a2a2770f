"""The shards of a `translate-beam` job, their records and the manifest.

Input shard `i` of `n` (the files `--input` matches, sorted) is translated
to `PREFIX-iiiii-of-nnnnn`, one output line per input line, in order. Once
that file is written (atomically), `PREFIX-iiiii-of-nnnnn.done.json`
records the input's sha256 and line count, the output's, and the job's
settings (model, search options, task). A shard is *done* when its record
exists, names the same input content and settings, and the output on disk
still has the recorded sha256 and line count; a rerun translates only the
shards that are not done, so a job that stopped half way resumes, and a
finished one rewrites nothing. `PREFIX.manifest.json` lists all records
and is rewritten only when its content changes.

A shard that cannot be translated (invalid UTF-8, a line the model
refuses, an input changed while the job ran) is not written: the reason
goes to `PREFIX-iiiii-of-nnnnn.failed.json` (`write_failure`) for the
driver to report, the other shards are written as usual, and the
manifest lists the failed shards under "failed". A rerun tries them again.

Lines are those of `gnmt-tf translate`: split at `\\n`, a trailing `\\r`
dropped, no empty last line; hashes are of the (decompressed) bytes. Paths
without a scheme are local files; others (`gs://`, `s3://`, ...) go through
Apache Beam's `FileSystems`.
"""

import dataclasses
import glob
import gzip
import hashlib
import json
import os
import re

MANIFEST_VERSION = 1
_READ_BYTES = 1 << 20


def _remote(path) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*://", str(path)) is not None


def _filesystems():
    from apache_beam.io.filesystems import FileSystems

    return FileSystems


def open_read(path):
    """A binary stream of `path`'s bytes (gunzipped for `.gz`)."""
    if _remote(path):
        return _filesystems().open(path)  # compression from the extension
    return (gzip.open if str(path).endswith(".gz") else open)(path, "rb")


def exists(path) -> bool:
    if _remote(path):
        return _filesystems().exists(path)
    return os.path.isfile(path)


def write_atomic(path, data: bytes):
    """Writes `data` to `path` complete or not at all: local files through
    `gnmt_tf.io_utils.write_bytes_atomic` (folder created), remote ones to a
    temporary object renamed into place (object stores publish an object
    whole)."""
    if not _remote(path):
        from gnmt_tf.io_utils import write_bytes_atomic

        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        write_bytes_atomic(path, data)
        return
    import uuid

    filesystems = _filesystems()
    tmp = f"{path}.tmp-{uuid.uuid4().hex}"
    with filesystems.create(tmp) as f:
        f.write(data)
    filesystems.rename([tmp], [path])


def match_inputs(pattern):
    """The files `pattern` (a path or glob, local or remote) matches, sorted.

    Raises:
      ValueError: it matches no file.
    """
    if _remote(pattern):
        result = _filesystems().match([pattern])[0]
        paths = [m.path for m in result.metadata_list]
    else:
        paths = [p for p in glob.glob(pattern, recursive=True)
                 if os.path.isfile(p)]
    if not paths:
        raise ValueError(f"--input {pattern!r} matched no file")
    return sorted(paths)


def digest_stream(stream):
    """`(sha256 hex, line count)` of a binary stream, read 1 MiB at a time."""
    sha = hashlib.sha256()
    lines, last = 0, b"\n"
    while True:
        block = stream.read(_READ_BYTES)
        if not block:
            break
        sha.update(block)
        lines += block.count(b"\n")
        last = block[-1:]
    return sha.hexdigest(), lines + (last != b"\n")


def digest(path):
    """`(sha256 hex, line count)` of the file at `path`."""
    with open_read(path) as f:
        return digest_stream(f)


def split_lines(data: bytes, name: str):
    """The lines of `data` as `gnmt-tf translate` reads them.

    Raises:
      ValueError: invalid UTF-8, naming `name` and the 1-based line.
    """
    raw = data.split(b"\n")
    if raw[-1] == b"":
        raw.pop()
    lines = []
    for number, line in enumerate(raw, 1):
        try:
            lines.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{name}:{number}: invalid UTF-8 "
                             f"({e.reason})") from None
    return lines


def output_path(prefix, index, count):
    """`PREFIX-iiiii-of-nnnnn` (a prefix ending in `/` gets `part`)."""
    if str(prefix).endswith("/"):
        prefix = f"{prefix}part"
    return f"{prefix}-{index:05d}-of-{count:05d}"


def record_path(output):
    return f"{output}.done.json"


def failure_path(output):
    return f"{output}.failed.json"


def manifest_path(prefix):
    if str(prefix).endswith("/"):
        prefix = f"{prefix}part"
    return f"{prefix}.manifest.json"


def canonical(settings):
    """`settings` as JSON would give it back (tuples as lists, ...)."""
    return json.loads(json.dumps(settings, sort_keys=True))


@dataclasses.dataclass(frozen=True)
class Shard:
    """One input file and where its translation goes.

    Attributes:
      index: int. Position among the sorted input files.
      input: str. The input file.
      output: str. The output file (`output_path`).
      input_sha256: str. Hex sha256 of the input's bytes when planned.
      input_lines: int. Its line count.
    """

    index: int
    input: str
    output: str
    input_sha256: str
    input_lines: int


def plan(pattern, prefix):
    """The `Shard`s of a job: the inputs `pattern` matches, each hashed.

    Raises:
      ValueError: no input matched.
    """
    paths = match_inputs(pattern)
    shards = []
    for index, path in enumerate(paths):
        sha, lines = digest(path)
        shards.append(Shard(index, path, output_path(prefix, index,
                                                     len(paths)), sha, lines))
    return shards


@dataclasses.dataclass(frozen=True)
class LineFailure:
    """What a model handler gives for a line it could not translate, in
    place of the translation: the reason, on one line."""

    message: str


def read_shard(shard):
    """The lines of `shard`'s input, checked to be the content planned.

    Raises:
      ValueError: the input changed since it was planned, or holds invalid
        UTF-8 (naming the line).
    """
    with open_read(shard.input) as f:
        data = f.read()
    sha = hashlib.sha256(data).hexdigest()
    if sha != shard.input_sha256:
        raise ValueError(f"{shard.input} changed since the job started "
                         f"(sha256 {sha}, planned {shard.input_sha256})")
    return split_lines(data, shard.input)


def shard_translations(shard, numbered):
    """The translations of `shard` in line order, from `(line number,
    translation or LineFailure)` pairs.

    Raises:
      ValueError: a line failed (naming the first), or the pairs are not
        exactly one per line number.
    """
    numbered = list(numbered)  # a runner's grouped values may be lazy
    translations = dict(numbered)
    if len(translations) != len(numbered) or \
            sorted(translations) != list(range(shard.input_lines)):
        raise ValueError(
            f"{shard.input}: {len(numbered)} translations for line "
            f"numbers {len(translations)} distinct, expected "
            f"{shard.input_lines}")
    lines = [translations[i] for i in range(shard.input_lines)]
    failed = [(i, line) for i, line in enumerate(lines, 1)
              if isinstance(line, LineFailure)]
    if failed:
        number, failure = failed[0]
        more = f" (and {len(failed) - 1} more line(s))" if len(failed) > 1 \
            else ""
        raise ValueError(f"{shard.input}:{number}: {failure.message}{more}")
    return lines


def write_failure(shard, message):
    """Records why `shard` was not translated (`failure_path`)."""
    write_atomic(failure_path(shard.output), json.dumps(
        {"input": shard.input, "error": message}, indent=1).encode("utf-8"))


def read_failure(shard):
    """The reason recorded for `shard`, or None."""
    path = failure_path(shard.output)
    if not exists(path):
        return None
    try:
        with open_read(path) as f:
            return json.loads(f.read().decode("utf-8"))["error"]
    except (ValueError, KeyError, UnicodeDecodeError):
        return None


def clear_failure(shard):
    """Removes `shard`'s failure record, if any (before a new attempt)."""
    path = failure_path(shard.output)
    if not exists(path):
        return
    if _remote(path):
        _filesystems().delete([path])
    else:
        os.remove(path)


def make_record(shard, settings, output_sha256, output_lines):
    """The done-record of `shard` (what `record_path` holds)."""
    return {"index": shard.index, "input": shard.input,
            "input_sha256": shard.input_sha256,
            "input_lines": shard.input_lines, "output": shard.output,
            "output_sha256": output_sha256, "output_lines": output_lines,
            "settings": canonical(settings)}


def read_record(shard):
    """The done-record of `shard`'s output, or None (missing or unreadable)."""
    path = record_path(shard.output)
    if not exists(path):
        return None
    try:
        with open_read(path) as f:
            return json.loads(f.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None


def done_record(shard, settings):
    """`shard`'s record if the shard is done (see the module docstring),
    else None. Reads the whole output to check its hash."""
    record = read_record(shard)
    if not record or not exists(shard.output):
        return None
    expected = make_record(shard, settings, record.get("output_sha256"),
                           shard.input_lines)
    if record != expected:
        return None
    if digest(shard.output) != (record["output_sha256"],
                                record["output_lines"]):
        return None
    return record


def write_shard(shard, settings, lines):
    """Writes a shard's translations and then its record; returns the record.

    Raises:
      ValueError: not one single-line translation per input line.
    """
    lines = list(lines)
    if len(lines) != shard.input_lines:
        raise ValueError(f"{shard.input}: {len(lines)} translations for "
                         f"{shard.input_lines} lines")
    for number, line in enumerate(lines, 1):
        if "\n" in line:
            raise ValueError(f"{shard.input}:{number}: the translation "
                             "spans lines")
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    sha = hashlib.sha256(data).hexdigest()
    write_atomic(shard.output, data)
    record = make_record(shard, settings, sha, len(lines))
    write_atomic(record_path(shard.output),
                 json.dumps(record, indent=1, sort_keys=True).encode("utf-8"))
    return record


def write_manifest(prefix, settings, records, failed=()):
    """Writes `PREFIX.manifest.json` (records sorted by shard, and the
    failed shards' `{"index", "input", "error"}` under "failed" when there
    are any) unless it already holds exactly this; returns `(path,
    written)`."""
    path = manifest_path(prefix)
    manifest = {"version": MANIFEST_VERSION, "settings": canonical(settings),
                "shards": sorted(records, key=lambda r: r["index"])}
    if failed:
        manifest["failed"] = sorted(failed, key=lambda f: f["index"])
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if exists(path):
        with open_read(path) as f:
            if f.read().decode("utf-8", "replace") == text:
                return path, False
    write_atomic(path, text.encode("utf-8"))
    return path, True

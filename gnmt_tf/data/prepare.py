"""`gnmt-tf data prepare`: corpora of a data configuration -> clean shards.

Streams every corpus (`gnmt_tf.data.corpus_readers`), drops the pairs that
`gnmt_tf.data.cleaning.PairCleaner` rejects, and writes the rest as gzip
TSV shards of at most `shard_size` pairs, `source<TAB>target` a line:

    OUT/<corpus>.00000.tsv.gz, <corpus>.00001.tsv.gz, ...
    OUT/manifest.json   the corpora (direction, weight, tags, shards) and
                        what was read, dropped (per reason) and kept

Each shard is written under a temporary name and renamed when complete; the
manifest comes last, so a directory with a manifest is a finished one. A run
that fails removes the shards it wrote. Memory does not grow with corpus
size, except for the duplicate check's digests (see `PairCleaner`).
"""

import dataclasses
import gzip
import json
import pathlib
import sys

from gnmt_tf.checks import check_number
from gnmt_tf.data import cleaning
from gnmt_tf.data.corpus_readers import BadInputError, read_records
from gnmt_tf.data.data_config import DataConfig

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "gnmt-tf-shards"
MANIFEST_VERSION = 1
BAD_INPUT = "bad_input"
DEFAULT_SHARD_SIZE = 100_000


@dataclasses.dataclass(frozen=True)
class PrepareOptions:
    """How `prepare` cleans and shards.

    Attributes:
        shard_size: int >= 1. Pairs per shard.
        skip_bad_lines: bool. Count and skip malformed input instead of
            stopping at the first.
        max_length_chars: int >= 1. See `PairCleaner`.
        max_ratio: float >= 1. See `PairCleaner`.
        check_language: bool. Drop pairs whose sides are detected as another
            language than the declared one (`gnmt_tf.data.language_check`).
    """

    shard_size: int = DEFAULT_SHARD_SIZE
    skip_bad_lines: bool = False
    max_length_chars: int = cleaning.DEFAULT_MAX_LENGTH_CHARS
    max_ratio: float = cleaning.DEFAULT_MAX_RATIO
    check_language: bool = False

    def __post_init__(self):
        check_number("shard_size", self.shard_size, integer=True, minimum=1)
        check_number("max_length_chars", self.max_length_chars,
                     integer=True, minimum=1)
        check_number("max_ratio", self.max_ratio, minimum=1)


class _ShardWriter:
    """Writes pairs into numbered gzip TSV shards, each renamed into place
    when full (or at `close`)."""

    def __init__(self, out_dir, prefix, shard_size):
        self.out_dir, self.prefix, self.shard_size = out_dir, prefix, shard_size
        self.names, self._file, self._tmp, self._count = [], None, None, 0

    def write(self, source, target):
        if self._file is None:
            name = f"{self.prefix}.{len(self.names):05d}.tsv.gz"
            self._tmp = self.out_dir / f".{name}.tmp"
            # Level 1: level 9 (gzip's default) spent half of `prepare`'s
            # time compressing, for shards about a fifth smaller.
            self._file = gzip.open(self._tmp, "wt", encoding="utf-8",
                                   newline="\n", compresslevel=1)
            self.names.append(name)
        self._file.write(f"{source}\t{target}\n")
        self._count += 1
        if self._count == self.shard_size:
            self._finish()

    def _finish(self):
        self._file.close()
        self._tmp.replace(self.out_dir / self.names[-1])
        self._file, self._tmp, self._count = None, None, 0

    def close(self):
        if self._file is not None:
            self._finish()

    def discard(self):
        """Removes the shards written so far (after a failure)."""
        if self._file is not None:
            self._file.close()
            self._tmp.unlink(missing_ok=True)
        for name in self.names:
            (self.out_dir / name).unlink(missing_ok=True)


def prepare(data_config: DataConfig, out_dir, options=None,
            stream=None) -> dict:
    """Cleans and shards the corpora of `data_config` into `out_dir`.

    Args:
        data_config: `gnmt_tf.data.data_config.DataConfig`.
        out_dir: str or Path; created if missing. Must not hold a manifest.
        options: `PrepareOptions`.
        stream: where the summary lines go (default stderr).

    Returns:
        The manifest (also written to `out_dir/manifest.json`).

    Raises:
        BadInputError: malformed input (without `skip_bad_lines`), naming
            the file and line.
        ValueError: a corpus with no pairs, or none left after cleaning;
            `out_dir` already prepared.
    """
    from gnmt_tf.io_utils import write_text_atomic

    options = options or PrepareOptions()
    stream = stream or sys.stderr
    out_dir = pathlib.Path(out_dir)
    if (out_dir / MANIFEST).exists():
        raise ValueError(f"{out_dir} already holds prepared data "
                         f"({MANIFEST}); choose another --out or remove it")
    out_dir.mkdir(parents=True, exist_ok=True)
    language_of = None
    if options.check_language:
        from gnmt_tf.data.language_check import language_identifier

        language_of = language_identifier(data_config.languages())
    cleaner = cleaning.PairCleaner(options.max_length_chars,
                                   options.max_ratio, language_of)
    written, entries = [], []
    try:
        for spec in data_config.corpora:
            writer = _ShardWriter(out_dir, spec.name, options.shard_size)
            written.append(writer)
            counts = _prepare_corpus(spec, cleaner, writer, options)
            writer.close()
            entries.append({**spec.to_dict(), "shards": writer.names,
                            "counts": counts})
            print(f"{spec.name} ({spec.direction}): kept {counts['kept']} of "
                  f"{counts['read']} pairs; dropped "
                  f"{_dropped_text(counts) or 'none'}", file=stream)
        manifest = {
            "format": MANIFEST_FORMAT, "version": MANIFEST_VERSION,
            "columns": ["source", "target"],
            "data_config": str(data_config.path) if data_config.path else None,
            "options": dataclasses.asdict(options),
            "corpora": entries,
            "counts": _total(entry["counts"] for entry in entries),
        }
        write_text_atomic(out_dir / MANIFEST,
                          json.dumps(manifest, indent=2) + "\n")
    except BaseException:
        for writer in written:
            writer.discard()
        raise
    return manifest


def _prepare_corpus(spec, cleaner, writer, options) -> dict:
    from gnmt_tf.progress import progress

    counts = {"read": 0, BAD_INPUT: 0,
              **{reason: 0 for reason in cleaning.REASONS}, "kept": 0}
    records = progress(read_records(spec), desc=f"prepare {spec.name}",
                       unit=" pairs")
    for record in records:
        counts["read"] += 1
        if record.error:
            if not options.skip_bad_lines:
                raise BadInputError(
                    f"{record.location()}: {record.error} (--skip-bad-lines "
                    "counts and skips such lines)")
            counts[BAD_INPUT] += 1
            continue
        source = cleaning.normalize_whitespace(record.source)
        target = cleaning.normalize_whitespace(record.target)
        reason = cleaner.reason(source, target, spec.src_lang, spec.tgt_lang)
        if reason:
            counts[reason] += 1
            continue
        writer.write(source, target)
        counts["kept"] += 1
    if counts["read"] == 0:
        raise ValueError(f"corpus {spec.name!r}: no sentence pairs in "
                         f"{', '.join(str(f) for f in spec.files)}")
    if counts["kept"] == 0:
        raise ValueError(f"corpus {spec.name!r}: all {counts['read']} pairs "
                         f"were dropped ({_dropped_text(counts)}); check the "
                         "corpus or loosen --max-length-chars / --max-ratio")
    return counts


def _dropped_text(counts) -> str:
    return ", ".join(f"{counts[k]} {k}" for k in (BAD_INPUT, *cleaning.REASONS)
                     if counts[k])


def _total(counts_list) -> dict:
    total = {}
    for counts in counts_list:
        for key, value in counts.items():
            total[key] = total.get(key, 0) + value
    return total


def read_manifest(prepared_dir) -> dict:
    """The manifest of a prepared directory.

    Raises:
        FileNotFoundError: no manifest (not prepared, or not finished).
        ValueError: not a manifest this version reads.
    """
    path = pathlib.Path(prepared_dir) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{prepared_dir} holds no prepared data ({MANIFEST}); run "
            "`gnmt-tf data prepare --data-config FILE --out DIR` first")
    manifest = json.loads(path.read_text(encoding="utf-8"))
    if (manifest.get("format") != MANIFEST_FORMAT
            or manifest.get("version") != MANIFEST_VERSION):
        raise ValueError(f"{path} is not a version-{MANIFEST_VERSION} "
                         f"{MANIFEST_FORMAT} manifest")
    return manifest


def shard_paths(prepared_dir, corpus_entry) -> list:
    """Absolute paths of one corpus's shards."""
    return [str(pathlib.Path(prepared_dir) / name)
            for name in corpus_entry["shards"]]


def prepared_dir_of(data_config_path) -> pathlib.Path:
    """The prepared directory that `--data-config` names: the path itself
    when it is a prepared directory, else the data configuration's
    `prepared` directory.

    Raises:
        ValueError: a data configuration without `prepared`.
    """
    from gnmt_tf.data.data_config import load_data_config

    path = pathlib.Path(data_config_path)
    if path.is_dir():
        return path
    config = load_data_config(path, check_files=False)
    if config.prepared is None:
        raise ValueError(f"{path} names no 'prepared' directory; add one "
                         "(where `gnmt-tf data prepare` writes) or pass the "
                         "prepared directory itself")
    return config.prepared


def manifest_summary(manifest) -> str:
    """One line: pairs kept per corpus."""
    return ", ".join(f"{c['name']} ({c['src_lang']}-{c['tgt_lang']}): "
                     f"{c['counts']['kept']}" for c in manifest["corpora"])

"""Float32 TFLite exports of model directories, converted once and kept.

`gnmt-tf translate --model M` translates with M's float32 TFLite export
through the NumPy host search (`gnmt_tf.host_translator`) when one is
cached: no TensorFlow import (3-4 s of a one-line run) and no tracing, and
the translations are the in-process search's up to float rounding. The
first run converts the export (`gnmt_tf.export.tflite.export_tflite`, the
default shapes) into the cache for the runs after it. The export carries
the whole search at the default beam size and at the shipped models'
(`SEARCH_BEAM_SIZES`), so a sentence translated alone at those takes one
interpreter call (`gnmt_tf.export.search_signature`).

A model directory can also carry its own export
(`gnmt_tf.export.tflite_entries.ship`, as the shipped
`multi30k-transformer` does in ``tflite_float32/``), gzipped (its weights,
float16 values stored as float32, compress to 60 %; float16 storage in the
file would not do: the converter also rounds the constants it folds, such
as the position tables, which changed scores by up to 1e-3). The first run
unpacks it into the cache (0.2 s), so it is fast too, and only while the
fingerprint recorded with it matches the directory's: a changed model
never runs a stale export.

Entries live in `$GNMT_TF_TFLITE_CACHE` (``off``: none), else
``~/.cache/gnmt_tf/tflite``, one folder per model fingerprint: a digest of
the files the weights come from, so a retrained or replaced model gets a
new entry and never an old export. Entries are written to a temporary
folder and renamed into place, so a reader sees a whole entry or none.
This module imports no TensorFlow and no exporter: converting an export
into the cache (`build`) or into a model directory (`ship`) is
`gnmt_tf.export.tflite_entries`'s.
"""

import gzip
import hashlib
import os
import pathlib
import shutil
import tempfile
from typing import Optional

from gnmt_tf.translation import SearchOptions

CACHE_ENV = "GNMT_TF_TFLITE_CACHE"  # a directory, or "off"
DEFAULT_DIR = pathlib.Path("~/.cache/gnmt_tf/tflite")
MODEL_FILE = "model_float32.tflite"
# Whole-content digests for these; checkpoints (large, many) by name, size
# and modification time, as `make` would.
CONTENT_FILES = ("config.json", "spm.model", "weights.npz")
CHECKPOINT_DIR = "checkpoints"
# A model directory's own export (`ship`), gzipped, and the fingerprint it
# was made from.
SHIPPED_DIR = "tflite_float32"
SHIPPED_FILE = MODEL_FILE + ".gz"
SHIPPED_FINGERPRINT = "fingerprint.txt"
# `SearchOptions`' default beam, and the beam the shipped models were
# scored with (their model cards).
SEARCH_BEAM_SIZES = tuple(sorted({SearchOptions().beam_size, 4}))
# What the exports hold besides the weights: part of the fingerprint, so a
# change here makes new entries instead of reusing old exports.
EXPORT_FORMAT = ("float32, default shapes, search beams "
                 + ",".join(map(str, SEARCH_BEAM_SIZES)))


def cache_dir() -> Optional[pathlib.Path]:
    """`$GNMT_TF_TFLITE_CACHE`, else ``~/.cache/gnmt_tf/tflite``; None
    when the variable is ``off``."""
    value = os.environ.get(CACHE_ENV)
    if value == "off":
        return None
    return pathlib.Path(value or DEFAULT_DIR).expanduser()


def fingerprint(model_dir) -> str:
    """A digest of what `model_dir`'s translations depend on: its config,
    vocabulary and weights (shipped ``weights.npz`` or training
    checkpoints), and of the exports' `EXPORT_FORMAT`."""
    model_dir = pathlib.Path(model_dir)
    digest = hashlib.sha256(EXPORT_FORMAT.encode())
    for name in CONTENT_FILES:
        path = model_dir / name
        if path.is_file():
            digest.update(name.encode())
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    checkpoints = model_dir / CHECKPOINT_DIR
    if checkpoints.is_dir():
        for path in sorted(checkpoints.rglob("*")):
            if path.is_file():
                info = path.stat()
                digest.update(f"{path.relative_to(model_dir)} {info.st_size} "
                              f"{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def entry(model_dir, digest=None) -> Optional[pathlib.Path]:
    """The folder `model_dir`'s export is (or would be) cached in; None
    without a cache. `digest`: its `fingerprint`, where already known."""
    directory = cache_dir()
    if directory is None:
        return None
    return directory / (digest or fingerprint(model_dir))


def shipped(model_dir, digest=None) -> Optional[pathlib.Path]:
    """`model_dir`'s own gzipped export (`ship`) while it matches the
    model's fingerprint (`digest`, where already known), else None."""
    folder = pathlib.Path(model_dir) / SHIPPED_DIR
    try:
        recorded = (folder / SHIPPED_FINGERPRINT).read_text().strip()
    except OSError:
        return None
    if ((folder / SHIPPED_FILE).is_file()
            and recorded == (digest or fingerprint(model_dir))):
        return folder / SHIPPED_FILE
    return None


def cached(model_dir, own_only=False) -> Optional[pathlib.Path]:
    """The cached float32 `.tflite` file of `model_dir`, unpacked from the
    model's matching shipped export on first use; None when there is
    neither (or no cache). With `own_only`, None unless the directory
    carries its own export (an entry cached by another run is ignored)."""
    digest = fingerprint(model_dir)  # read once: the weights' digest
    packed = shipped(model_dir, digest)
    folder = entry(model_dir, digest)
    if folder is None or (own_only and packed is None):
        return None
    if not (folder / MODEL_FILE).is_file():
        if packed is None:
            return None
        try:
            write_entry(folder, lambda staging: _unpack(packed, staging))
        except OSError:
            return None
    return folder / MODEL_FILE


def _unpack(packed, staging):
    with gzip.open(packed, "rb") as source, \
            open(staging / MODEL_FILE, "wb") as target:
        shutil.copyfileobj(source, target, 1 << 20)
    for name in ("model.json", "spm.model"):
        shutil.copy(packed.parent / name, staging / name)


def write_entry(folder, fill):
    """Fills a temporary folder with `fill(path)` and renames it to
    `folder` (a concurrent twin that got there first wins)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{folder.name}-",
                                            dir=folder.parent))
    try:
        fill(staging)
        try:
            os.rename(staging, folder)
        except OSError:
            if not (folder / MODEL_FILE).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)

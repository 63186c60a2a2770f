"""Writing the float32 TFLite exports that `gnmt_tf.tflite_cache` finds.

`build` converts a model directory's export into the cache (the first
`gnmt-tf translate --model` run of a model does, so that the runs after it
take the fast path); `ship` writes it, gzipped, into the model directory
itself, as the shipped models carry it. Both convert with
`gnmt_tf.export.tflite.export_tflite` (default shapes, the search
signatures of `SEARCH_BEAM_SIZES`), imported when they run: finding an
entry that is already there loads no TensorFlow.
"""

import gzip
import os
import pathlib
import shutil
import tempfile
import time
from typing import Optional

from gnmt_tf.tflite_cache import (CACHE_ENV, MODEL_FILE, SEARCH_BEAM_SIZES,
                                  SHIPPED_DIR, SHIPPED_FILE,
                                  SHIPPED_FINGERPRINT, entry, fingerprint,
                                  write_entry)


def ship(model_dir) -> pathlib.Path:
    """Writes `model_dir`'s float32 TFLite export, gzipped, into
    `model_dir/tflite_float32/` with the fingerprint it was made from
    (replacing an older one whole); returns the `.tflite.gz` path."""
    from gnmt_tf.export.tflite import export_tflite

    model_dir = pathlib.Path(model_dir)
    staging = pathlib.Path(tempfile.mkdtemp(prefix=f".{SHIPPED_DIR}-",
                                            dir=model_dir))
    old = model_dir / f".{SHIPPED_DIR}-old"
    try:
        os.chmod(staging, 0o755)  # package data, not mkdtemp's private 0700
        export_tflite(model_dir, staging, "float32",
                      search_beam_sizes=SEARCH_BEAM_SIZES)
        with open(staging / MODEL_FILE, "rb") as source, \
                gzip.open(staging / SHIPPED_FILE, "wb") as target:
            shutil.copyfileobj(source, target, 1 << 20)
        os.remove(staging / MODEL_FILE)
        (staging / SHIPPED_FINGERPRINT).write_text(
            fingerprint(model_dir) + "\n")
        target = model_dir / SHIPPED_DIR
        if target.exists():
            os.rename(target, old)
        os.rename(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
    return model_dir / SHIPPED_DIR / SHIPPED_FILE


def build(model_dir) -> pathlib.Path:
    """Converts `model_dir`'s float32 TFLite export into the cache (once:
    an entry already there is returned as is); returns the `.tflite` path.

    Raises:
      ValueError: no cache (``off``), or the model does not convert.
      OSError: the cache cannot be written.
    """
    folder = entry(model_dir)
    if folder is None:
        raise ValueError(f"{CACHE_ENV}=off: no TFLite cache")
    if (folder / MODEL_FILE).is_file():
        return folder / MODEL_FILE
    from gnmt_tf.export.tflite import export_tflite

    write_entry(folder, lambda staging: export_tflite(
        model_dir, staging, "float32", search_beam_sizes=SEARCH_BEAM_SIZES))
    return folder / MODEL_FILE


def build_with_note(model_dir, stream) -> Optional[pathlib.Path]:
    """`build`, saying on `stream` what it did and how long it took, or
    why it could not (one line; never raises)."""
    start = time.perf_counter()
    try:
        path = build(model_dir)
    except Exception as e:  # noqa: BLE001  (a note; translation is done)
        print(f"note: no fast path cached for {model_dir}: "
              f"{str(e).splitlines()[0] if str(e) else type(e).__name__}",
              file=stream)
        return None
    print(f"note: cached the float32 TFLite export of {model_dir} in "
          f"{path.parent} ({time.perf_counter() - start:.1f} s, once): "
          "the next runs translate without loading TensorFlow", file=stream)
    return path

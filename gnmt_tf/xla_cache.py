"""Compiled XLA searches kept on disk, so a new process does not compile
them again.

`Translator(..., jit_compile_search=True)` (`gnmt-tf translate --xla`)
compiles the whole search once per batch shape, which takes seconds a
shape. TensorFlow can persist what XLA compiled
(`--tf_xla_persistent_cache_directory`, read from `TF_XLA_FLAGS` when
TensorFlow loads): the next process that traces the same search for the
same shape loads the program instead of compiling it. `enable` sets that
flag for the CPU device; it must run before TensorFlow is imported.
"""

import os
import pathlib
import sys
from typing import Optional

CACHE_ENV = "GNMT_TF_XLA_CACHE"  # a directory, or "off"
DEFAULT_DIR = pathlib.Path("~/.cache/gnmt_tf/xla")
_FLAG = "--tf_xla_persistent_cache_directory"


def cache_dir() -> Optional[pathlib.Path]:
    """Where compiled programs go: `$GNMT_TF_XLA_CACHE`, else
    `~/.cache/gnmt_tf/xla`; None when the variable is ``off``."""
    value = os.environ.get(CACHE_ENV)
    if value == "off":
        return None
    return pathlib.Path(value or DEFAULT_DIR).expanduser()


def enable() -> Optional[pathlib.Path]:
    """Makes TensorFlow keep compiled XLA programs in `cache_dir()`.

    Returns the directory, or None when there is none (``off``), when
    `TF_XLA_FLAGS` already names a cache, or when TensorFlow is already
    imported (it reads the flag once, at import).
    """
    directory = cache_dir()
    flags = os.environ.get("TF_XLA_FLAGS", "")
    if directory is None or _FLAG in flags:
        return None
    if "tensorflow" in sys.modules:  # e.g. `main([...])` called in process
        return None
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        print(f"note: no XLA cache ({directory}: {e.strerror})",
              file=sys.stderr)
        return None
    os.environ["TF_XLA_FLAGS"] = " ".join(filter(None, (
        flags, f"{_FLAG}={directory}",
        "--tf_xla_persistent_cache_device_types=CPU")))
    return directory

"""One training run per model directory, and no half-made directory after a
run that fails before its first checkpoint.

`claim_model_dir` is the context every trainer (`train_gnmt`,
`train_task_space`, the QAT fine-tuners) writes a model directory in (with
several workers, only the chief enters it: `gnmt_tf.training.workers`):

- It holds an exclusive `filelock` lock on `MODEL_DIR/.lock`; a second run on
  the same directory stops at once with `ModelDirBusyError` instead of
  interleaving its checkpoints with the first run's.
- If the run fails (an error, Ctrl-C) before it saved a checkpoint, it removes
  what the run created: the directory itself (and any parent it made) when it
  did not exist, else only the entries that are new. A directory that existed
  is never deleted, and a run that saved a checkpoint keeps everything, so it
  can be resumed.

Example:
```python
with claim_model_dir("runs/en-de"):
    ...  # write config.json, spm.model, train
```
"""

import contextlib
import os
import pathlib
import shutil

from gnmt_tf.errors import UsageError

LOCK_FILE = ".lock"
CHECKPOINT_INDEX = pathlib.Path("checkpoints") / "checkpoint"


class ModelDirBusyError(UsageError):
    """Another run holds the model directory's lock."""


def _first_missing(path: pathlib.Path):
    """The outermost folder of `path` that does not exist yet, or None."""
    missing = None
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing = folder
    return missing


def _checkpoint_index(path: pathlib.Path):
    try:
        return (path / CHECKPOINT_INDEX).read_bytes()
    except OSError:
        return None


def _undo(path, created, entries_before):
    """Removes what a failed run made in `path` (see the module doc)."""
    if created is not None:
        shutil.rmtree(created, ignore_errors=True)
        return
    for name in set(os.listdir(path)) - entries_before:
        entry = path / name
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


@contextlib.contextmanager
def claim_model_dir(model_dir):
    """Creates `model_dir` if needed and holds its training lock for the
    block; undoes the block's changes if it fails before a checkpoint.

    Args:
      model_dir: str or Path.

    Yields:
      `model_dir` as a `pathlib.Path`.

    Raises:
      ModelDirBusyError: another run (process) holds the lock.
      NotADirectoryError: `model_dir` is a file.
    """
    import filelock

    path = pathlib.Path(model_dir)
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(20, "is a file, not a model directory",
                                 str(path))
    created = _first_missing(path)
    path.mkdir(parents=True, exist_ok=True)
    entries_before = set(os.listdir(path))
    index_before = _checkpoint_index(path)
    lock = filelock.FileLock(str(path / LOCK_FILE), timeout=0)
    try:
        lock.acquire()
    except filelock.Timeout:
        # Never undo here: the directory is the other run's now.
        raise ModelDirBusyError(
            f"{path} is in use by another training run (it holds "
            f"{path / LOCK_FILE}); wait for it or use another directory"
        ) from None
    try:
        yield path
    except BaseException:
        if _checkpoint_index(path) == index_before:
            _undo(path, created, entries_before)
        raise
    finally:
        lock.release()

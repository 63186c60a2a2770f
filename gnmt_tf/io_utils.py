"""Output files that are either complete or untouched.

Every command that writes a file goes through these helpers: the data goes to
a hidden temporary file in the destination's folder and is renamed over the
destination only when all of it is written (`os.replace` is atomic within a
file system). A failure or an interrupt leaves an existing file as it was and
removes the temporary one. `check_output_file` refuses an output that is
one of the inputs (or the file on standard input): the input would be
replaced by what the command made of it.

Example:
```python
check_output_file("out.txt", {"--input": "in.txt"})
with atomic_write("out.txt") as f:
    f.write("complete or nothing\\n")
```
"""

import contextlib
import errno
import os
import pathlib
import sys
import tempfile


def current_umask() -> int:
    """The process's umask (read by setting and restoring it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _final_mode(path: pathlib.Path) -> int:
    """The mode the destination keeps (existing file) or gets (new file, as
    `open()` would create it); temporary files start as 0600."""
    try:
        return path.stat().st_mode & 0o7777
    except FileNotFoundError:
        return 0o666 & ~current_umask()


@contextlib.contextmanager
def atomic_path(path):
    """Yields a temporary path next to `path`; renames it to `path` when the
    block ends without an exception, else deletes it.

    For writers that take a file name (SentencePiece, tf2onnx,
    `shutil.copyfile`). The parent folder must exist.

    Args:
      path: str or Path. The destination.
    """
    path = pathlib.Path(path)
    _check_destination(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                               dir=path.parent)
    os.close(fd)
    tmp = pathlib.Path(tmp)
    try:
        yield tmp
        os.chmod(tmp, _final_mode(path))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_write(path, mode="w", encoding="utf-8"):
    """Opens a temporary file next to `path` for writing and renames it to
    `path` (flushed and synced) when the block ends without an exception.

    Args:
      path: str or Path. The destination; its folder must exist.
      mode: "w" (text) or "wb" (bytes).
      encoding: text encoding (ignored for "wb").

    Yields:
      The open file object.
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', got {mode!r}")
    with atomic_path(path) as tmp:
        kwargs = {} if mode == "wb" else {"encoding": encoding, "newline": ""}
        with open(tmp, mode, **kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())


def write_text_atomic(path, text, encoding="utf-8"):
    """Writes `text` to `path` through `atomic_write`."""
    with atomic_write(path, "w", encoding) as f:
        f.write(text)


def write_bytes_atomic(path, data):
    """Writes `data` to `path` through `atomic_write`."""
    with atomic_write(path, "wb") as f:
        f.write(data)


def copy_file_atomic(source, path):
    """Copies `source` to `path` through `atomic_path`; copying a file onto
    itself is a no-op."""
    import shutil

    if _same_file(source, path):
        return
    with atomic_path(path) as tmp:
        shutil.copyfile(source, tmp)


def _same_file(a, b) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def _check_destination(path: pathlib.Path):
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder, not a file",
                                str(path))
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "no such folder",
                                str(path.parent))


def _is_stdin(path) -> bool:
    """Whether `path` is the file on standard input (`cmd < path`)."""
    try:
        return os.path.samestat(os.fstat(sys.stdin.fileno()), os.stat(path))
    except (AttributeError, OSError, ValueError):  # no stdin file, no path
        return False


def check_output_file(output, inputs=None, reads_stdin=False):
    """Checks an output file before any work: its folder exists, it is not
    a folder, and it is none of the input files.

    Args:
      output: str or Path or None (stdout: nothing to check).
      inputs: `{flag or name: path or None}` of the files the command reads.
      reads_stdin: bool. The command reads standard input too: `output`
        must not be the file redirected to it (`cmd --output F < F`).

    Raises:
      ValueError: `output` is (a link to) one of the `inputs`, or the file
        on standard input.
      IsADirectoryError / FileNotFoundError: `output` is a folder, or its
        folder is missing.
    """
    if not output:
        return
    _check_destination(pathlib.Path(output))
    for name, path in (inputs or {}).items():
        if path and _same_file(output, path):
            raise ValueError(f"output {output} is the same file as {name} "
                             f"{path}; write to another file")
    if reads_stdin and _is_stdin(output):
        raise ValueError(f"output {output} is the same file as standard "
                         "input; write to another file")

"""Streaming for `gnmt-tf translate`: lazy input, output chunk by chunk.

`translate_stream` reads the input a chunk of lines at a time, translates
the chunk, and writes its output lines at once (flushed), so translations
appear while the input is still being read (a pipe that stays open, or a
huge file) and memory stays bounded by one chunk. Input order, blank
lines and n-best numbering are those of the whole input.

A chunk is one batch (`--batch-size` lines) when stdin is a pipe or a
terminal, so each batch comes back as soon as it is complete, and
`SORT_WINDOW_BATCHES` batches from a file, which the translator sorts by
length for less padding (GNMT §7).

`--output FILE` is written through `gnmt_tf.io_utils.atomic_write`: the
file appears complete when all is done, or stays untouched on an error.
On stdout, the chunks before a failing one have been written already.
"""

import contextlib
import gzip
import os
import re
import stat
import sys

from gnmt_tf.progress import progress

# Batches per chunk when the input is a file (sorted by length together).
SORT_WINDOW_BATCHES = 16


def iter_lines(stream, name):
    """The lines of a binary stream, decoded, read lazily: split at
    `\\n`, a trailing `\\r` dropped, no empty last line (as
    `gnmt_tf.data.corpus.decode_lines`).

    Raises:
      ValueError: invalid UTF-8, naming `name` and the 1-based line.
    """
    for number, raw in enumerate(stream, 1):
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        try:
            yield raw.decode("utf-8").rstrip("\r")
        except UnicodeDecodeError as e:
            raise ValueError(
                f"{name}:{number}: invalid UTF-8 ({e.reason})") from None


@contextlib.contextmanager
def open_input(path):
    """Yields `(binary stream, name)`: the file at `path` (gzip if it ends
    in .gz), or stdin."""
    if not path:
        yield sys.stdin.buffer, "<stdin>"
        return
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        yield f, str(path)


@contextlib.contextmanager
def open_output(path):
    """Yields a text stream: an atomically written `path`, or stdout."""
    if not path:
        yield sys.stdout
        return
    from gnmt_tf.io_utils import atomic_write

    with atomic_write(path) as f:
        yield f


def chunk_size(stream, batch_size) -> int:
    """One batch for a pipe or terminal, `SORT_WINDOW_BATCHES` for a file."""
    try:
        regular = stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, OSError, ValueError):  # no file descriptor
        regular = False
    return batch_size * (SORT_WINDOW_BATCHES if regular else 1)


def chunks(lines, size):
    """`(index of the first line, [lines])` for each `size` lines."""
    chunk, first = [], 0
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield first, chunk
            first, chunk = first + size, []
    if chunk:
        yield first, chunk


def renumbered(error, first):
    """`error` with a leading "input N" (a translator's 1-based position in
    the chunk) made the position in the whole input."""
    message = str(error)
    match = re.match(r"input (\d+)\b", message)
    if not match or first == 0 or type(error) not in (ValueError, TypeError):
        return error
    number = int(match.group(1)) + first
    return type(error)(f"input {number}{message[match.end():]}")


def translate_stream(input_path, output_path, batch_size, translate_chunk,
                     format_chunk):
    """Translates the input chunk by chunk; returns the exit status.

    Args:
      input_path: str or None (stdin).
      output_path: str or None (stdout).
      batch_size: int. Sentences per search call (`chunk_size`).
      translate_chunk: `[lines] -> results`, one result per line.
      format_chunk: `(lines, results, first) -> (output lines, status)`,
        where `first` is the 0-based index of the chunk's first input line
        and `status` 0, or 1 when some lines failed (told on stderr).

    Raises:
      ValueError, TypeError: from reading or translating, with input
        positions in the whole input.
    """
    status = empty = 0
    with open_input(input_path) as (stream, name), \
            open_output(output_path) as out, \
            progress(desc="translate", unit=" sentences") as bar:
        size = chunk_size(stream, batch_size)
        for first, chunk in chunks(iter_lines(stream, name), size):
            try:
                results = translate_chunk(chunk)
            except (ValueError, TypeError) as e:
                raise renumbered(e, first) from None
            lines, chunk_status = format_chunk(chunk, results, first)
            status = max(status, chunk_status)
            out.write("".join(line + "\n" for line in lines))
            out.flush()
            empty += sum(1 for line in chunk if not line.strip())
            bar.update(len(chunk))
    if empty:
        print(f"note: {empty} empty input line(s) give empty output lines",
              file=sys.stderr)
    return status

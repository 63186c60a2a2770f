"""Pharaoh alignment lines (`i-j`) and fast_align corpus lines (`src ||| tgt`).

A Pharaoh line lists links `i-j`, separated by spaces, where `i` indexes the
source token and `j` the target token (both 0-based). An empty line is a
sentence without links. A corpus line holds a whitespace-tokenised source
sentence and its translation separated by the token `|||`.

Malformed input raises `PharaohFormatError`, which names the line number when
the caller reads a file.
"""

import contextlib
import re
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

Link = Tuple[int, int]
SEPARATOR = "|||"
_LINK = re.compile(r"(\d+)-(\d+)")


class PharaohFormatError(ValueError):
    """A malformed alignment or corpus line."""


def _where(line_number: Optional[int]) -> str:
    return f"line {line_number}: " if line_number is not None else ""


def parse_alignment(line: str, line_number: Optional[int] = None) -> List[Link]:
    """Parses one Pharaoh line such as `"0-0 1-2"` into `[(0, 0), (1, 2)]`."""
    links = []
    for item in line.split():
        match = _LINK.fullmatch(item)
        if match is None:
            raise PharaohFormatError(
                f"{_where(line_number)}bad alignment link {item!r} "
                "(expected i-j with non-negative integers)")
        links.append((int(match.group(1)), int(match.group(2))))
    return links


def format_alignment(links: Iterable[Link]) -> str:
    """Formats links as a Pharaoh line, in the order given."""
    return " ".join(f"{i}-{j}" for i, j in links)


def parse_corpus_line(line: str, line_number: Optional[int] = None
                      ) -> Tuple[List[str], List[str]]:
    """Splits `"src tokens ||| tgt tokens"` into two token lists.

    Raises `PharaohFormatError` unless there is exactly one `|||` token and
    both sides hold at least one token.
    """
    tokens = line.split()
    count = tokens.count(SEPARATOR)
    if count != 1:
        raise PharaohFormatError(
            f"{_where(line_number)}expected 'source ||| target' with exactly "
            f"one '|||' separator, found {count}")
    cut = tokens.index(SEPARATOR)
    source, target = tokens[:cut], tokens[cut + 1:]
    if not source or not target:
        side = "source" if not source else "target"
        raise PharaohFormatError(f"{_where(line_number)}empty {side} sentence")
    return source, target


def format_corpus_line(source: Sequence[str], target: Sequence[str]) -> str:
    """Joins token lists into a `src ||| tgt` line."""
    return f"{' '.join(source)} {SEPARATOR} {' '.join(target)}"


@contextlib.contextmanager
def _opened(path_or_file, mode: str):
    if hasattr(path_or_file, "read") or hasattr(path_or_file, "write"):
        yield path_or_file
    else:
        # Lines end at "\n" only (a stray "\r" is not a line break), as
        # in `gnmt_tf.data.corpus.decode_lines`.
        with open(path_or_file, mode, encoding="utf-8", newline="\n") as f:
            yield f


def _lines(path_or_file) -> Iterator[Tuple[int, str]]:
    with _opened(path_or_file, "r") as f:
        for number, line in enumerate(f, start=1):
            yield number, line.rstrip("\r\n")


def read_alignments(path_or_file) -> Iterator[List[Link]]:
    """Yields the links of each line of a Pharaoh file (path or text file)."""
    for number, line in _lines(path_or_file):
        yield parse_alignment(line, number)


def write_alignments(alignments: Iterable[Iterable[Link]],
                     path_or_file) -> None:
    """Writes one Pharaoh line per sentence."""
    with _opened(path_or_file, "w") as f:
        for links in alignments:
            f.write(format_alignment(links) + "\n")


def read_corpus(path_or_file) -> Iterator[Tuple[List[str], List[str]]]:
    """Yields `(source_tokens, target_tokens)` for each `src ||| tgt` line."""
    for number, line in _lines(path_or_file):
        yield parse_corpus_line(line, number)


def write_corpus(pairs: Iterable[Tuple[Sequence[str], Sequence[str]]],
                 path_or_file) -> None:
    """Writes `(source_tokens, target_tokens)` pairs as `src ||| tgt` lines."""
    with _opened(path_or_file, "w") as f:
        for source, target in pairs:
            f.write(format_corpus_line(source, target) + "\n")

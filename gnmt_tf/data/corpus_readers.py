"""Streaming readers for the corpus formats of a data configuration.

Each reader yields one `Record` per sentence pair, reading its files a line
(or a TMX `<tu>`) at a time, so memory stays flat whatever the corpus size.
Malformed input (invalid UTF-8, a TSV line without exactly one tab, a TMX
`<tu>` without both languages) comes out as a `Record` with `error` set,
naming the file and line; an XML syntax error in a TMX ends the file with
one such record (the parser cannot go on after it). The caller decides
whether to stop (`BadInputError`) or count and skip.
"""

import dataclasses
import gzip
import pathlib
from typing import Iterator, Optional

from gnmt_tf.data.data_config import CorpusSpec

_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


class BadInputError(ValueError):
    """Malformed corpus input; the message names the file and line."""


@dataclasses.dataclass(frozen=True)
class Record:
    """A sentence pair read from `file` at `line` (1-based), or, when
    `error` is set, the reason it could not be read."""

    source: str
    target: str
    file: str
    line: int
    error: Optional[str] = None

    def location(self) -> str:
        return f"{self.file}:{self.line}"


def open_binary(path):
    """Opens `path` for reading bytes, through gzip when it ends in .gz."""
    path = pathlib.Path(path)
    return gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb")


def read_records(spec: CorpusSpec) -> Iterator[Record]:
    """The records of a corpus, in file order."""
    return _READERS[spec.format](spec)


def _decode(raw: bytes):
    """`(text, None)` or `(None, reason)` for one raw line."""
    try:
        return raw.decode("utf-8").rstrip("\r\n"), None
    except UnicodeDecodeError as e:
        return None, f"invalid UTF-8 ({e.reason} at byte {e.start})"


def _read_text(spec: CorpusSpec) -> Iterator[Record]:
    source_path, target_path = spec.files
    with open_binary(source_path) as src, open_binary(target_path) as tgt:
        number = 0
        while True:
            raw_src, raw_tgt = src.readline(), tgt.readline()
            if not raw_src and not raw_tgt:
                return
            number += 1
            if not raw_src or not raw_tgt:
                shorter = source_path if not raw_src else target_path
                raise BadInputError(
                    f"{shorter}:{number}: ends before "
                    f"{target_path if not raw_src else source_path} (the "
                    "two files of a text corpus must have as many lines)")
            text_src, error = _decode(raw_src)
            if error:
                yield Record("", "", str(source_path), number, error)
                continue
            text_tgt, error = _decode(raw_tgt)
            if error:
                yield Record("", "", str(target_path), number, error)
                continue
            yield Record(text_src, text_tgt, str(source_path), number)


def _read_tsv(spec: CorpusSpec) -> Iterator[Record]:
    (path,) = spec.files
    with open_binary(path) as f:
        for number, raw in enumerate(f, 1):
            text, error = _decode(raw)
            if error is None:
                fields = text.split("\t")
                if len(fields) != 2:
                    error = ("expected 2 tab-separated columns (src<TAB>tgt),"
                             f" got {len(fields)}")
            if error:
                yield Record("", "", str(path), number, error)
                continue
            yield Record(fields[0], fields[1], str(path), number)


def _language_matches(code, wanted) -> bool:
    """`en-US` / `EN_us` / `en` match `en`."""
    code = (code or "").lower().replace("_", "-")
    wanted = wanted.lower().replace("_", "-")
    return code == wanted or code.split("-")[0] == wanted


def _tmx_side(tu, lang):
    for tuv in tu.iter("tuv"):
        code = tuv.get(_XML_LANG) or tuv.get("lang")
        if _language_matches(code, lang):
            seg = tuv.find("seg")
            if seg is not None:
                return "".join(seg.itertext())
    return None


def _read_tmx(spec: CorpusSpec) -> Iterator[Record]:
    from lxml import etree

    (path,) = spec.files
    with open_binary(path) as f:
        # iterparse with each <tu> cleared once read, and the siblings
        # before it dropped, keeps memory flat on large memories.
        events = etree.iterparse(f, events=("end",), tag="tu",
                                 resolve_entities=False, no_network=True)
        try:
            for _, tu in events:
                source = _tmx_side(tu, spec.src_lang)
                target = _tmx_side(tu, spec.tgt_lang)
                line = tu.sourceline or 0
                tu.clear()
                while tu.getprevious() is not None:
                    del tu.getparent()[0]
                if source is None or target is None:
                    missing = spec.src_lang if source is None else spec.tgt_lang
                    yield Record("", "", str(path), line,
                                 f"<tu> has no <tuv xml:lang=\"{missing}\"> "
                                 "with a <seg>")
                    continue
                yield Record(source, target, str(path), line)
        except etree.XMLSyntaxError as e:
            line = e.position[0] if e.position else 0
            yield Record("", "", str(path), line,
                         f"broken TMX ({e.msg}); the rest of the file is "
                         "unreadable")


_READERS = {"text": _read_text, "tsv": _read_tsv, "tmx": _read_tmx}

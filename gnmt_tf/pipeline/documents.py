"""Content extraction and reassembly: plain text and HTML/XHTML.

A document is read into a list of segments (`Document.segments`, the text
to translate) and rebuilt from the translated ones (`Document.rebuild`).
With an identity translation the rebuilt document equals the input (plain
text: the same characters; HTML: the same element tree).

Plain text: paragraphs are separated by blank lines; each paragraph is one
segment, and the blank lines and the whitespace around paragraphs are kept.

HTML and XHTML (lxml):

- block elements (`BLOCK_TAGS`, or any element holding one) cut their content
  into separate segments;
- inline markup inside a segment becomes placeholders, XLIFF-like:
  `<g1>text</g1>` for an element with content (`b`, `i`, `a href`, `span`,
  ...), `<x2/>` for an empty one (`br`, `img`) or an untouched one (inline
  `code`); the element, with its attributes, is put back where the
  placeholder ends up in the translation;
- `alt` and `title` attributes are segments of their own;
- `script`, `style`, `code`, `pre`, `textarea`, comments and processing
  instructions are left untouched;
- the encoding is kept (XML declaration, `<meta charset>`, else UTF-8), and
  so are the references written for non-ASCII characters (`&nbsp;`,
  `&eacute;`, `&#8212;`): lxml resolves them when it parses, so each
  character that was a reference in the input is written as that reference
  again (two references to one character, such as `&mdash;` and `&#8212;`,
  both come out in one of the two forms). `&amp;`, `&lt;` and `&gt;` are
  written by lxml as needed.

Malformed input: HTML is parsed leniently (libxml2's recovering parser,
as browsers do) and `MalformedHTMLWarning` says what was repaired, with its
line; the rebuilt document is the repaired tree. XHTML (input with an XML
declaration or the XHTML namespace) is XML, so it is rejected with
`DocumentError` naming the line: repairing it would silently change the
tree a well-formedness-checking consumer expects.

Placeholders the translation lost or broke (an unknown id, an unclosed
`<g1>`) are not guessed at: the segment's text is kept without markup,
empty and untouched inline elements are appended after it, and a
`PlaceholderWarning` is raised. `Pipeline` never sends the placeholders to
the model: `gnmt_tf.pipeline.markup` takes them out and puts them back at the
aligned position, always well-nested, so this fallback is for other callers.

Nothing is lost without an error: elements may nest `MAX_NESTING_DEPTH`
deep (browsers stop nesting at 512 too; libxml2's own limit of 256 is
lifted), deeper is a `DocumentError`, and so is a repair that dropped
text (`gnmt_tf.pipeline.html_text` checks every word of the input against the
segments and untouched elements).

Limits: `MAX_DOCUMENT_BYTES` (10 MB by default) bounds a document; text that
itself reads like a placeholder (`<g1>`) is taken for one.
"""

import copy
import dataclasses
import re
import warnings
from typing import Callable, List, Optional, Sequence, Tuple, Union

from gnmt_tf.pipeline.html_text import lost_text

try:
    from lxml import etree
    from lxml import html as lxml_html
except ImportError:  # the gateway extra
    raise ModuleNotFoundError(
        "document extraction needs lxml: "
        "pip install 'gnmt-tf[gateway]'",
        name="lxml") from None

MAX_DOCUMENT_BYTES = 10 * 1024 * 1024
# Elements nested deeper than this are refused (the document root counts
# as 1). Each level costs a few Python frames in extraction and markup
# projection, which this keeps well inside Python's recursion limit.
MAX_NESTING_DEPTH = 512

BLOCK_TAGS = frozenset("""
address article aside blockquote body caption center dd details dialog dir
div dl dt fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 head
header hgroup hr html legend li main menu nav ol optgroup option p section
summary table tbody td tfoot th thead title tr ul
""".split())
UNTOUCHED_TAGS = frozenset({"script", "style", "code", "pre", "textarea",
                            "noscript", "svg", "math"})
TRANSLATED_ATTRIBUTES = ("alt", "title")

_PLACEHOLDER = re.compile(r"<(/?)g(\d+)>|<x(\d+)/>")
_XHTML_NAMESPACE = "http://www.w3.org/1999/xhtml"
_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)
_XML_ENCODING = re.compile(
    rb"""^\s*<\?xml[^>]*encoding\s*=\s*["']([A-Za-z0-9_.:-]+)""")
_REFERENCE = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")


class DocumentError(ValueError):
    """A document that cannot be read (bad encoding, malformed XHTML, too
    large)."""


class MalformedHTMLWarning(UserWarning):
    """HTML that the lenient parser had to repair."""


class PlaceholderWarning(UserWarning):
    """A translated segment whose inline-markup placeholders were lost."""


def decode(data: Union[bytes, str], encoding: str = "utf-8") -> str:
    """`data` as text; `DocumentError` naming the line of invalid bytes."""
    if isinstance(data, str):
        return data
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise DocumentError(f"line {line}: invalid {e.encoding} "
                            f"(byte {data[e.start]:#04x})") from None
    except LookupError:
        raise DocumentError(f"unknown encoding {encoding!r}") from None


def _check_size(data: Union[bytes, str], limit: int) -> None:
    size = len(data) if isinstance(data, bytes) else len(data.encode())
    if size > limit:
        raise DocumentError(f"document of {size} bytes is over the limit of "
                            f"{limit} bytes")


class TextDocument:
    """Plain text: one segment per paragraph (paragraphs are separated by
    blank lines); everything between segments is kept as it is.

    Args:
      data: bytes (UTF-8) or str.
      max_bytes: int. Larger documents raise `DocumentError`.
    """

    def __init__(self, data: Union[bytes, str],
                 max_bytes: int = MAX_DOCUMENT_BYTES):
        _check_size(data, max_bytes)
        self.binary = isinstance(data, bytes)
        text = decode(data)
        # Odd items are paragraphs, even ones the whitespace between them.
        self._parts = re.split(r"((?:[^\S\n]*\S[^\n]*(?:\n|$))+)", text)
        self._parts = [re.sub(r"\s+$", "", p) if i % 2 else p
                       for i, p in enumerate(self._parts)]
        self._parts = self._rejoin(self._parts, text)

    @staticmethod
    def _rejoin(parts: List[str], text: str) -> List[str]:
        """Gaps recomputed so that the parts concatenate to `text` exactly."""
        out, position = [], 0
        for i in range(1, len(parts), 2):
            start = text.index(parts[i], position)
            out += [text[position:start], parts[i]]
            position = start + len(parts[i])
        return out + [text[position:]]

    @property
    def segments(self) -> List[str]:
        """The paragraphs, stripped (inner newlines kept)."""
        return [p.strip() for p in self._parts[1::2]]

    def rebuild(self, translated: Sequence[str]) -> Union[bytes, str]:
        """The document with each paragraph replaced by its translation."""
        _check_count(translated, len(self._parts) // 2)
        parts = list(self._parts)
        for i, segment in enumerate(translated):
            old = parts[2 * i + 1]
            lead = old[:len(old) - len(old.lstrip())]
            parts[2 * i + 1] = lead + segment
        text = "".join(parts)
        return text.encode() if self.binary else text


def _check_count(translated: Sequence[str], expected: int) -> None:
    if len(translated) != expected:
        raise ValueError(f"{len(translated)} translated segments for "
                         f"{expected} source segments")


@dataclasses.dataclass
class _Run:
    """A stretch of text and inline elements inside one block element: the
    text slot (`parent.text`, or `tail` of the block child before it) and
    the inline children that follow it."""

    parent: etree._Element
    after: Optional[etree._Element]  # None: the slot is parent.text
    inline: List[etree._Element]
    lead: str = ""
    trail: str = ""
    elements: List[etree._Element] = dataclasses.field(default_factory=list)
    opaque: List[bool] = dataclasses.field(default_factory=list)


def _local(element) -> str:
    tag = element.tag if isinstance(element.tag, str) else ""
    return etree.QName(tag).localname.lower() if tag else ""


def _untouched(element) -> bool:
    return not isinstance(element.tag, str) or _local(element) in \
        UNTOUCHED_TAGS


def _is_block(element) -> bool:
    if _untouched(element):
        return False
    return _local(element) in BLOCK_TAGS or any(
        _local(e) in BLOCK_TAGS for e in element.iterdescendants()
        if isinstance(e.tag, str))


class HtmlDocument:
    """HTML or XHTML: segments from block content (inline markup as
    placeholders) and from `alt` / `title` attributes; see the module
    docstring.

    Args:
      data: bytes (encoding from the XML declaration or `<meta charset>`,
        else UTF-8) or str.
      max_bytes: int. Larger documents raise `DocumentError`.

    Raises:
      DocumentError: undecodable bytes, malformed XHTML, too large.

    Warns:
      MalformedHTMLWarning: HTML the parser repaired.
    """

    def __init__(self, data: Union[bytes, str],
                 max_bytes: int = MAX_DOCUMENT_BYTES):
        _check_size(data, max_bytes)
        self.binary = isinstance(data, bytes)
        head = data[:2048] if self.binary else data[:2048].encode()
        found = _XML_ENCODING.match(head) or _CHARSET.search(head)
        self.encoding = found.group(1).decode("ascii") if found else "utf-8"
        text = decode(data, self.encoding)
        stripped = text.lstrip()
        self._declaration = ""
        if stripped.startswith("<?xml"):
            end = stripped.index("?>") + 2
            self._declaration = text[:len(text) - len(stripped) + end]
            text = text[len(self._declaration):]
        self.xhtml = bool(self._declaration) or _XHTML_NAMESPACE in text[:2048]
        self._references = {}
        for name in set(_REFERENCE.findall(text)):
            character = lxml_html.fromstring(f"<p>&{name};</p>").text or ""
            if len(character) == 1 and ord(character) > 127:
                self._references[character] = f"&{name};"
        self._whole = re.match(r"\s*(<!doctype|<html)", text, re.I) is not None
        doctype = re.match(r"\s*(<!doctype[^>]*>)", text, re.I)
        self._doctype = doctype.group(1) if doctype else ""
        self._data = data
        self._runs: List[_Run] = []
        self._run_texts: List[str] = []  # as extracted, for the text check
        self._attributes: List[Tuple[etree._Element, str]] = []
        self._root = self._parse(text) if text.strip() else None
        if self._root is not None:
            self._collect(self._root)
            if not self.xhtml:  # XML is parsed strictly: nothing repaired
                self._check_text_kept(text)

    def _parse(self, text: str):
        # huge_tree: libxml2 stops at 256 levels and drops what is deeper;
        # MAX_NESTING_DEPTH is checked on the tree instead.
        if self.xhtml:
            parser = etree.XMLParser(resolve_entities=False, no_network=True,
                                     huge_tree=True)
            try:
                root = etree.fromstring(
                    text.encode(self.encoding, "xmlcharrefreplace"), parser)
            except etree.XMLSyntaxError as e:
                _check_depth_error(e.msg)
                raise DocumentError(
                    f"line {e.lineno}: malformed XHTML: {e.msg}") from None
            _check_depth(root)
            return root
        parser = etree.HTMLParser(no_network=True, remove_blank_text=False,
                                  huge_tree=True)
        if self._whole:
            root = etree.fromstring(text, parser)
        else:
            root = lxml_html.fragment_fromstring(text, create_parent="div",
                                                 parser=parser)
        for error in parser.error_log:
            _check_depth_error(error.message)
        if root is not None:
            _check_depth(root)
        repaired = [e for e in parser.error_log
                    if "invalid" not in e.message]  # unknown (HTML5) tags
        if repaired:
            first = repaired[0]
            warnings.warn(f"line {first.line}: malformed HTML repaired "
                          f"({first.message.strip()}; {len(repaired)} "
                          "problem(s) in all)", MalformedHTMLWarning,
                          stacklevel=3)
        if root is None:
            raise DocumentError("empty HTML document")
        return root

    def _check_text_kept(self, text: str) -> None:
        """Raises `DocumentError` when a repair dropped text of `text`."""
        kept = [_PLACEHOLDER.sub(" ", text) for text in self._run_texts]
        kept += ["".join(e.itertext())
                 for e in self._root.iter(*UNTOUCHED_TAGS)]
        lost = lost_text(text, kept)
        if lost:
            first, count = lost
            raise DocumentError(
                f"malformed HTML: repairing it would drop {count} letter(s) "
                f"of text, first {first[:60]!r}; fix the markup there")

    def _collect(self, block) -> None:
        """Runs and attribute segments of `block` and its descendants."""
        if _untouched(block):
            return
        for element in block.iter():
            if _untouched(element) or any(
                    _untouched(a) for a in element.iterancestors()):
                continue
            for name in TRANSLATED_ATTRIBUTES:
                if (element.get(name) or "").strip():
                    self._attributes.append((element, name))
        self._collect_runs(block)

    def _collect_runs(self, block) -> None:
        run = _Run(block, None, [])
        for child in block:
            if _is_block(child):
                self._add_run(run)
                self._collect_runs(child)
                run = _Run(block, child, [])
            else:
                run.inline.append(child)
        self._add_run(run)

    def _add_run(self, run: _Run) -> None:
        text = self._encode_run(run)
        if _PLACEHOLDER.sub("", text).strip():
            self._runs.append(run)
            self._run_texts.append(text)

    @property
    def segments(self) -> List[str]:
        """Run segments (with placeholders) in document order, then the
        `alt` / `title` attribute values."""
        return ([self._encode_run(run) for run in self._runs]
                + [element.get(name).strip()
                   for element, name in self._attributes])

    def _encode_run(self, run: _Run) -> str:
        run.elements, run.opaque = [], []
        slot = run.parent.text if run.after is None else run.after.tail
        text = (slot or "") + "".join(self._encode(e, run, True)
                                      for e in run.inline)
        run.lead = text[:len(text) - len(text.lstrip())]
        run.trail = text[len(text.rstrip()):] if text.strip() else ""
        return text.strip()

    def _encode(self, element, run: _Run, with_tail: bool) -> str:
        run.elements.append(element)
        run.opaque.append(_untouched(element))
        number = len(run.elements)
        tail = (element.tail or "") if with_tail else ""
        if _untouched(element) or not (
                (element.text or "") or len(element)):
            return f"<x{number}/>" + tail
        inner = [element.text or ""]
        for child in element:  # a loop: one frame per nesting level
            inner.append(self._encode(child, run, True))
        return f"<g{number}>{''.join(inner)}</g{number}>" + tail

    def rebuild(self, translated: Sequence[str]) -> Union[bytes, str]:
        """The document with every segment replaced by its translation
        (same order as `segments`), serialised in the input's encoding."""
        source = self.segments  # also refreshes the runs' element lists
        _check_count(translated, len(source))
        if self._root is None:
            return self._data  # blank: nothing to parse or rebuild
        root = copy.deepcopy(self._root)
        # Map original elements to their copies: the same document order.
        copies = dict(zip(self._root.iter(), root.iter()))
        # Attributes first: rebuilding a run copies its inline elements.
        for (element, name), text in zip(self._attributes,
                                         translated[len(self._runs):]):
            value = element.get(name)
            lead = value[:len(value) - len(value.lstrip())]
            trail = value[len(value.rstrip()):]
            copies[element].set(name, lead + text + trail)
        for run, text in zip(self._runs, translated):
            self._rebuild_run(run, run.lead + text + run.trail, copies)
        return self._serialise(root)

    def _rebuild_run(self, run: _Run, text: str, copies) -> None:
        parent = copies[run.parent]
        after = copies[run.after] if run.after is not None else None
        old = [copies[e] for e in run.inline]
        try:
            slot, children = _decode(text, run, copies)
        except ValueError as e:
            warnings.warn(f"segment {text[:60]!r}: {e}; markup dropped",
                          PlaceholderWarning, stacklevel=3)
            slot = _PLACEHOLDER.sub("", text)
            children = []
            for element, opaque in zip(run.elements, run.opaque):
                if opaque or not "".join(element.itertext()).strip():
                    new = copy.deepcopy(copies[element])
                    new.tail = None
                    if not opaque:
                        new.text = None
                        del new[:]
                    children.append(new)
        index = (list(parent).index(after) + 1) if after is not None else 0
        for element in old:
            parent.remove(element)
        if after is None:
            parent.text = slot
        else:
            after.tail = slot
        for offset, child in enumerate(children):
            parent.insert(index + offset, child)

    def _serialise(self, root) -> Union[bytes, str]:
        if self.xhtml:
            body = etree.tostring(root, encoding="unicode")
        elif self._whole:
            body = lxml_html.tostring(root, encoding="unicode")
        else:
            body = (root.text or "") + "".join(
                lxml_html.tostring(child, encoding="unicode")
                for child in root)
        doctype = self._doctype
        for character, reference in self._references.items():
            body = body.replace(character, reference)
        text = self._declaration + (doctype + "\n" if doctype else "") + body
        if self.binary:
            return text.encode(self.encoding, "xmlcharrefreplace")
        return text


def _check_depth_error(message: str) -> None:
    """Raises `DocumentError` for libxml2's own depth limit (2048 with
    huge_tree), past which it drops the rest."""
    if "Excessive depth" in message:
        raise DocumentError(f"elements nested deeper than "
                            f"{MAX_NESTING_DEPTH} levels")


# The elements one level too deep below the root: "*/*/.../*" (XPath,
# evaluated by libxml2 level by level, so as fast as the tree is big).
_TOO_DEEP = etree.XPath("/".join(["*"] * MAX_NESTING_DEPTH))


def _check_depth(root) -> None:
    """Raises `DocumentError` for elements nested deeper than
    `MAX_NESTING_DEPTH`."""
    deep = _TOO_DEEP(root)
    if deep:
        line = deep[0].sourceline
        raise DocumentError((f"line {line}: " if line else "") +
                            f"elements nested deeper than {MAX_NESTING_DEPTH} "
                            "levels")


def _has_text(element) -> bool:
    if _untouched(element):
        return True  # inline code: part of the sentence around it
    return bool("".join(element.itertext()).strip()) or \
        _local(element) in {"br", "img"} or bool(element.tail)


def _decode(text: str, run: _Run, copies) -> Tuple[str, list]:
    """`text` with placeholders -> (slot text, new inline elements);
    ValueError when the placeholders do not nest or do not match the run's.
    """
    top: List = []
    stack: List[Tuple[int, etree._Element, List]] = []
    slot_parts: List[str] = []
    seen = set()
    position = 0

    def add_text(piece: str) -> None:
        if not piece:
            return
        container = stack[-1][1] if stack else None
        siblings = stack[-1][2] if stack else top
        if siblings:
            siblings[-1].tail = (siblings[-1].tail or "") + piece
        elif container is not None:
            container.text = (container.text or "") + piece
        else:
            slot_parts.append(piece)

    for match in _PLACEHOLDER.finditer(text):
        add_text(text[position:match.start()])
        position = match.end()
        closing, paired, empty = match.groups()
        number = int(paired or empty)
        if not 1 <= number <= len(run.elements) or (
                number in seen and not closing):
            raise ValueError(f"unexpected placeholder {match.group(0)}")
        original = run.elements[number - 1]
        if closing:
            if not stack or stack[-1][0] != number:
                raise ValueError(f"unmatched {match.group(0)}")
            _, element, children = stack.pop()
            for child in children:
                element.append(child)
            continue
        seen.add(number)
        if empty:
            element = copy.deepcopy(copies[original])
            element.tail = None
            (stack[-1][2] if stack else top).append(element)
        else:
            element = copies[original].makeelement(
                copies[original].tag, dict(copies[original].attrib),
                copies[original].nsmap if hasattr(copies[original], "nsmap")
                and copies[original].nsmap else None)
            (stack[-1][2] if stack else top).append(element)
            stack.append((number, element, []))
    add_text(text[position:])
    if stack:
        raise ValueError(f"unclosed <g{stack[-1][0]}>")
    if len(seen) != len(run.elements):
        raise ValueError("placeholders missing")
    return "".join(slot_parts), top


def read_document(data: Union[bytes, str], format: str,
                  max_bytes: int = MAX_DOCUMENT_BYTES):
    """A `TextDocument` (format "text") or `HtmlDocument` ("html")."""
    if format == "text":
        return TextDocument(data, max_bytes)
    if format == "html":
        return HtmlDocument(data, max_bytes)
    raise ValueError(f"unknown format {format!r}; expected text or html")


def translate_document(data: Union[bytes, str], format: str,
                       translate: Callable[[List[str]], List[str]],
                       max_bytes: int = MAX_DOCUMENT_BYTES):
    """`data` with its segments replaced by `translate(segments)`."""
    document = read_document(data, format, max_bytes)
    return document.rebuild(list(translate(document.segments)))

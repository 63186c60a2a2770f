"""Normalising source text before it reaches a model (or the cache).

`normalize` applies, in order:

1. Unicode NFC (composed characters: "e" + U+0301 becomes "é");
2. control characters removed (C0 and C1 controls except tab and newline;
   "\\r\\n" and "\\r" become "\\n"); format characters such as the zero-width
   joiner are kept, some scripts need them;
3. whitespace: runs of spaces, tabs and other Unicode spaces become one space
   inside a line, lines are stripped, newlines are kept (they separate
   paragraphs);
4. Moses punctuation normalisation (sacremoses' `MosesPunctNormalizer`, the
   rules of Moses' `normalize-punctuation.perl`) for the languages in
   `MOSES_LANGUAGES`: typographic quotes, dashes and ellipses become ASCII,
   spacing around punctuation is made uniform. Other languages skip it:
   its rules rewrite full-width CJK punctuation ("，" to ","), which would
   damage Chinese or Japanese text.

What can be undone (`normalize_reversibly` and `Normalized.restore`):

- the segment's leading and trailing whitespace is put back exactly;
- punctuation that Moses replaced one piece for another ("„" to '"', "–" to
  "-", "…" to "...") is put back in the user's characters, in order, when
  the text given to `restore` holds exactly as many of the ASCII pieces as
  the normalised text did (true for an identity translation, and for most
  translations that keep the quotes).

What cannot be undone, and why that is acceptable: NFC (canonically
equivalent text, the same to every reader), removed control characters
(invisible, and they break tokenisers), collapsed whitespace inside a line
(HTML renders it the same; plain text loses alignment spaces) and spacing
that Moses changed around punctuation. `Normalized.original` keeps the
input for whoever needs the exact characters.
"""

import dataclasses
import difflib
import functools
import re
import unicodedata
from typing import Dict, List, Optional, Tuple

try:
    from sacremoses import MosesPunctNormalizer
except ImportError:  # the gateway extra
    raise ModuleNotFoundError(
        "punctuation normalisation needs sacremoses: "
        "pip install 'gnmt-tf[gateway]'",
        name="sacremoses") from None

# Latin-script languages whose punctuation Moses' rules were written for.
MOSES_LANGUAGES = frozenset({"cs", "de", "en", "es", "fr", "it", "nl", "pl",
                             "pt", "ro", "sk"})

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"[^\S\n]+")  # any whitespace but newline


@functools.lru_cache(maxsize=None)
def _moses(language: str) -> MosesPunctNormalizer:
    return MosesPunctNormalizer(lang=language)


def clean_whitespace(text: str) -> str:
    """NFC, control characters removed and whitespace collapsed (steps 1-3
    of the module docstring), without punctuation normalisation."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub("", text)
    return "\n".join(_SPACES.sub(" ", line).strip()
                     for line in text.split("\n"))


def normalize(text: str, language: Optional[str] = None) -> str:
    """Normalises `text` (see the module docstring); lossy.

    Args:
      text: str. Any text; newlines separate lines and are kept.
      language: str or None. ISO 639-1 code; Moses punctuation normalisation
        runs only for `MOSES_LANGUAGES`. None skips it.

    Returns:
      The normalised text.

    Example:
      >>> normalize("„Hallo“ –  sagte er\\t…", "de")
      '"Hallo" - sagte er ...'
    """
    text = clean_whitespace(text)
    if language and language.lower() in MOSES_LANGUAGES:
        moses = _moses(language.lower())
        text = "\n".join(moses.normalize(line).strip() if line else line
                         for line in text.split("\n"))
    return text


@dataclasses.dataclass(frozen=True)
class Normalized:
    """A normalised segment and what is needed to give back the user's
    characters (see the module docstring).

    Attributes:
      text: str. The normalised text, for the model and the cache.
      original: str. The text as given.
      prefix, suffix: str. Leading and trailing whitespace of `original`.
      punctuation: dict. For each ASCII piece Moses produced (such as '"'),
        the original piece at each of its occurrences in `text`, in order.
    """

    text: str
    original: str
    prefix: str = ""
    suffix: str = ""
    punctuation: Dict[str, Tuple[str, ...]] = dataclasses.field(
        default_factory=dict)

    def restore(self, text: str) -> str:
        """`text` (the normalised text or its translation) with the user's
        punctuation and outer whitespace put back where that is unambiguous.
        """
        for piece, originals in self.punctuation.items():
            parts = text.split(piece)
            if len(parts) - 1 != len(originals):
                continue  # the translation moved or dropped some: keep ASCII
            text = parts[0] + "".join(o + p for o, p in
                                      zip(originals, parts[1:]))
        return self.prefix + text + self.suffix


def _substitutions(before: str, after: str) -> Dict[str, List[str]]:
    """For each punctuation piece of `after` that replaced a different one of
    `before`, the pieces of `before` at each occurrence, in order."""
    replaced: Dict[int, Tuple[str, str]] = {}  # start in `after` -> pair
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for op, b0, b1, a0, a1 in matcher.get_opcodes():
        old, new = before[b0:b1], after[a0:a1]
        if op == "replace" and _is_punctuation(old) and _is_punctuation(new):
            replaced[a0] = (new, old)
    result: Dict[str, List[str]] = {}
    for new in sorted({new for new, _ in replaced.values()}, key=len,
                      reverse=True):
        start, originals = after.find(new), []
        while start >= 0:
            pair = replaced.get(start)
            originals.append(pair[1] if pair and pair[0] == new else new)
            start = after.find(new, start + len(new))
        result[new] = originals
    return result


def _is_punctuation(piece: str) -> bool:
    return bool(piece.strip()) and not any(c.isalnum() or c.isspace()
                                           for c in piece)


def normalize_reversibly(text: str,
                         language: Optional[str] = None) -> Normalized:
    """Normalises `text` like `normalize` and records what `restore` needs.

    Example:
      >>> n = normalize_reversibly("  „Hallo“, sagte er. ", "de")
      >>> n.text
      '"Hallo", sagte er.'
      >>> n.restore(n.text)
      '  „Hallo“, sagte er. '
    """
    stripped = text.strip()
    prefix = text[:len(text) - len(text.lstrip())]
    suffix = text[len(text.rstrip()):] if stripped else ""
    cleaned = clean_whitespace(stripped)
    normalized = normalize(cleaned, language)
    substitutions = {new: tuple(old) for new, old in
                     _substitutions(cleaned, normalized).items()
                     if any(o != new for o in old)}
    return Normalized(normalized, text, prefix, suffix, substitutions)

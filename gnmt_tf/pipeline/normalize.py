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

Both run in time linear in the text: Moses' one backtracking rule runs
in an equivalent linear form (`_DotRunRule`), and the user's
punctuation is found by pairing the text between words, which Moses never
changes, rather than by aligning whole texts.

What cannot be undone, and why that is acceptable: NFC (canonically
equivalent text, the same to every reader), removed control characters
(invisible, and they break tokenisers), collapsed whitespace inside a line
(HTML renders it the same; plain text loses alignment spaces) and spacing
that Moses changed around punctuation. `Normalized.original` keeps the
input for whoever needs the exact characters.
"""

import collections
import dataclasses
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
# Letters and digits (`str.isalnum`): Moses' rules never change them.
_WORD = re.compile(r"[^\W_]+")
# sacremoses' rules that start with a run of dots: `re.sub` retries them
# from every dot of a run the rule does not match after, quadratic in the
# run's length (20,000 dots: seconds).
_DOT_RUN_RULES = frozenset({r'(\.+)"(\s*[^<])'})


class _DotRunRule:
    """`re.sub(pattern, repl, text)` for a pattern that starts with `(\.+)`,
    in linear time: a match from a dot would end where one from the first
    dot of its run does, so a match is looked for from a run's first dot
    only (and where the previous match ended, which may be inside a run).
    """

    def __init__(self, pattern: str, repl: str):
        self.pattern = re.compile(pattern)
        self._from_run_start = re.compile(r"(?<!\.)" + pattern)
        self.repl = repl

    def sub(self, text: str) -> str:
        parts, position = [], 0
        while True:
            match = None
            if text.startswith(".", position) and position and \
                    text[position - 1] == ".":
                match = self.pattern.match(text, position)
            match = match or self._from_run_start.search(text, position)
            if match is None:
                break
            parts += [text[position:match.start()], match.expand(self.repl)]
            position = match.end()
        return "".join(parts) + text[position:]


@functools.lru_cache(maxsize=None)
def _moses_rules(language: str) -> tuple:
    """sacremoses' substitutions for `language` as `sub(text)` callables,
    in its order."""
    rules = MosesPunctNormalizer(lang=language).substitutions
    return tuple(_DotRunRule(pattern, repl).sub if pattern in _DOT_RUN_RULES
                 else functools.partial(re.compile(pattern).sub, repl)
                 for pattern, repl in rules)


def _moses_line(line: str, language: str) -> str:
    """`MosesPunctNormalizer(lang=language).normalize(line)`, in linear
    time."""
    for sub in _moses_rules(language):
        line = sub(line)
    return line.strip()


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
        text = "\n".join(_moses_line(line, language.lower()) if line
                         else line for line in text.split("\n"))
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
    `before`, the pieces of `before` at each occurrence, in order.

    Moses changes only what lies between words, so the texts are cut at
    their words (the same ones, in order) and each pair of gaps is compared
    on its own: linear in the texts' length.
    """
    if _WORD.findall(before) != _WORD.findall(after):
        return {}  # not a Moses rewrite: nothing is put back
    replaced: Dict[int, Tuple[str, str]] = {}  # start in `after` -> pair
    position = 0
    for old, new in zip(_WORD.split(before), _WORD.split(after)):
        if old != new:
            for offset, pair in _gap_substitutions(old, new):
                replaced[position + offset] = pair
        position += len(new)
        match = _WORD.match(after, position)
        position = match.end() if match else position
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


def _gap_substitutions(old: str, new: str) -> List[Tuple[int, Tuple[str,
                                                                   str]]]:
    """`(offset in new, (new piece, old piece))` for the punctuation Moses
    replaced in one gap between words.

    The characters of each side that the other lacks are paired in order:
    one for one when there are as many on both sides, else run for run (a
    run: adjacent repeats of one character, so "..." pairs with "…" and
    '"' with "''"); none when that does not pair them up either.
    """
    added = _unmatched(new, old)
    removed = _unmatched(old, new)
    if not added or not removed:
        return []
    if len(added) != len(removed):
        added, removed = _runs(added), _runs(removed)
        if len(added) != len(removed):
            return []
    return [(offset, (n, o)) for (offset, n), (_, o) in zip(added, removed)
            if _is_punctuation(n) and _is_punctuation(o)]


def _unmatched(text: str, other: str) -> List[Tuple[int, str]]:
    """`(offset, character)` of the non-space characters of `text` beyond
    the count of each in `other`, the last ones of each kind."""
    surplus = collections.Counter(c for c in text if not c.isspace())
    surplus.subtract(c for c in other if not c.isspace())
    found = []
    for offset in range(len(text) - 1, -1, -1):
        c = text[offset]
        if surplus[c] > 0 and not c.isspace():
            surplus[c] -= 1
            found.append((offset, c))
    return found[::-1]


def _runs(pieces: List[Tuple[int, str]]) -> List[Tuple[int, str]]:
    """Adjacent repeats of one character joined: `(offset, run)`."""
    runs: List[Tuple[int, str]] = []
    for offset, c in pieces:
        if runs and runs[-1][1][-1] == c and \
                runs[-1][0] + len(runs[-1][1]) == offset:
            runs[-1] = (runs[-1][0], runs[-1][1] + c)
        else:
            runs.append((offset, c))
    return runs


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

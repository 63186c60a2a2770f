"""Plain `gnmt-tf translate`: lines split into sentences, translations
joined back into one output line each.

The models are trained on sentence pairs: given a line of two sentences
("A dog runs. Two cats sleep on the sofa.") they translate it as one and
drop or merge the second without a word. So each line is split with the
project's sentence splitter (`gnmt_tf.pipeline.sentence_split`, reached through
`gnmt_tf.serving.request_batching`, the command line's path to it), the sentences
of a chunk are translated together, and each line's translations are
joined with a space (nothing for Chinese, Japanese and Thai targets). A
line of one sentence is sent as it is, so its output is what it was
without splitting; the output keeps one line per input line.

Lines go whole with `--no-split-sentences` (`add_argument`), and where a
result per line cannot be made of sentences: n-best lists, per-line
constraints, attention plots (`from_args`).

Example:
```python
translate_lines = SentenceLines("en", "de").wrap(
    lambda sentences: translator.translate_nbest(sentences))
translate_lines(["A dog runs. Two cats sleep.", "A man sits."])
# [[Hypothesis("Ein Hund rennt. Zwei Katzen schlafen.", ...)], [...]]
```
"""

import dataclasses
import re

# Target languages written without spaces between sentences.
NO_SPACE_LANGUAGES = frozenset({"ja", "zh", "th"})
DEFAULT_LANGUAGE = "en"  # the splitter's rules where the source is unknown


class SentenceLines:
    """Splits input lines into sentences and joins their translations back.

    Args:
      source_language: str or None. The source's ISO 639-1 code, for the
        splitter's abbreviation rules (None: English rules).
      target_language: str or None. The target's code: its sentences are
        joined without a space for `NO_SPACE_LANGUAGES`.
    """

    def __init__(self, source_language=None, target_language=None):
        self.source_language = source_language or DEFAULT_LANGUAGE
        self.joiner = "" if target_language in NO_SPACE_LANGUAGES else " "

    def split(self, line):
        """The sentences of `line`, or `[line]` when it holds fewer than two
        (a blank line, one sentence: sent as they are)."""
        from gnmt_tf.serving.request_batching import split_sentences

        sentences = split_sentences(line, self.source_language)
        return sentences if len(sentences) > 1 else [line]

    def wrap(self, translate_sentences, merge=None):
        """`translate_sentences` (one result per sentence) made to take
        lines: `merge(results of a line's sentences, joiner)` makes the
        line's one result (default `merge_hypotheses`).

        An error naming "input N" (a sentence's 1-based position) names the
        line instead, and which of its sentences.
        """
        merge = merge or merge_hypotheses

        def translate_lines(lines):
            groups = [self.split(line) for line in lines]
            flat = [sentence for group in groups for sentence in group]
            try:
                results = translate_sentences(flat)
            except (ValueError, TypeError) as e:
                raise _renumbered(e, groups) from None
            merged, start = [], 0
            for group in groups:
                part = results[start:start + len(group)]
                merged.append(part[0] if len(part) == 1
                              else merge(part, self.joiner))
                start += len(group)
            return merged

        return translate_lines


def merge_hypotheses(results, joiner):
    """One line's `[Hypothesis]` from its sentences' hypothesis lists (a
    `translate_nbest` result each): the best texts joined, their scores
    added."""
    best = [hypotheses[0] for hypotheses in results]
    return [dataclasses.replace(
        best[0], text=joiner.join(h.text for h in best),
        score=sum(h.score for h in best))]


def _renumbered(error, groups):
    """`error` with a leading "input N" (a sentence) made "input L
    (sentence S)" of the line `L` that sentence came from."""
    message = str(error)
    match = re.match(r"input (\d+)\b", message)
    if not match or type(error) not in (ValueError, TypeError):
        return error
    number = int(match.group(1))
    for line, group in enumerate(groups, 1):
        if number <= len(group):
            where = f"input {line}" + (f" (sentence {number})"
                                       if len(group) > 1 else "")
            return type(error)(where + message[match.end():])
        number -= len(group)
    return error


def merge_results(results, joiner):
    """One line's `gnmt_tf.serving.client.TranslationResult` from its sentences':
    the first failure, else the translations joined and the scores
    added."""
    failed = next((r for r in results if r.error), None)
    if failed is not None:
        return failed
    scores = [r.score for r in results]
    return dataclasses.replace(
        results[0], source=" ".join(r.source for r in results),
        translation=joiner.join(r.translation or "" for r in results),
        score=None if None in scores else sum(scores))


def add_argument(parser):
    """Adds --no-split-sentences (`from_args` reads it)."""
    parser.add_argument(
        "--no-split-sentences", dest="split_sentences", action="store_false",
        help="translate each input line as one sentence; by default a line "
             "of several sentences is split, its sentences translated and "
             "joined back into one output line (not with --n-best > 1, "
             "--constraints, --glossary-constraints, --plot-attention, "
             "--pipeline or --rescore: lines go whole there)")


def from_args(args, model=None, task=None):
    """The `SentenceLines` for the flags in `args`, or None where lines go
    whole (`--no-split-sentences`, n-best lists, per-line constraints,
    attention plots).

    Args:
      args: the parsed flags.
      model: a `Seq2SeqModel` or a host translator (its `fixed_task`
        gives a GNMT model's languages), or None.
      task: dict. The task arguments (`src_lang`, `tgt_lang`), or None.
    """
    if not getattr(args, "split_sentences", True) or any(
            getattr(args, flag, None) for flag in (
                "constraints", "glossary_constraints", "plot_attention")):
        return None
    if (getattr(args, "n_best", None) or 1) > 1:
        return None
    fixed = {} if model is None else model.fixed_task
    languages = {**(fixed or {}), **(task or {})}
    return SentenceLines(languages.get("src_lang"),
                         languages.get("tgt_lang"))


def per_line(lines, translate_sentences, merge=None):
    """`translate_sentences` over the sentences of each line (`lines` a
    `SentenceLines`; `merge` as `SentenceLines.wrap`'s), or as it is when
    `lines` is None."""
    if lines is None:
        return translate_sentences
    return lines.wrap(translate_sentences, merge)

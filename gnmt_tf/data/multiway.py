"""Multi-direction, multi-scene data, for models with task inputs (the
task-space Transformer).

A *task example* is a sentence pair plus its task: source language, target
language and a set of scene tags. This module reads them from

- Multi30k (Elliott et al. 2016): 4-way parallel captions (en, de, fr, cs;
  `test_2017_flickr` has en, de, fr only), so every ordered pair of
  languages is a direction, 12 in all, tagged `caption`;
- the WMT22 general test sets: `generaltest2022.{de-fr,fr-de}.tsv`, whose
  `domain` column (conversation, ecommerce, news, social) gives the scene
  tag, and the plain `generaltest2022.{en-de,de-en}.{src,ref.A}.*` files
  (no domain labels, so no tags by default);

and turns them into a `tf.data.Dataset` whose batches mix directions, with
the same token-based length bucketing as `gnmt_tf.data.datasets`.

Directions are written `src-tgt` (`en-de`); a direction spec is `all`, a
comma-separated list (`en-de,en-fr`), or `all-except:fr-cs,cs-fr` (every
direction but those, e.g. to hold them out for zero-shot tests).

Imports no TensorFlow until `make_task_dataset` is called.
"""

import dataclasses
import itertools
import pathlib
from typing import Iterable, List, Sequence, Tuple

from gnmt_tf.data import corpus

MULTI30K_LANGUAGES = ("en", "de", "fr", "cs")
MULTI30K_SPLITS = ("train", "val", "test_2016_flickr", "test_2017_flickr")
MULTI30K_TAGS = ("caption",)
WMT22_PREFIX = "generaltest2022"
WMT22_TSV_DIRECTIONS = (("de", "fr"), ("fr", "de"))
WMT22_TEXT_DIRECTIONS = (("en", "de"), ("de", "en"))
WMT22_TSV_COLUMNS = ("domain", "docid", "segid", "source", "reference")
ALL_EXCEPT = "all-except:"

Direction = Tuple[str, str]


@dataclasses.dataclass
class TaskExamples:
    """Sentence pairs with their tasks, as parallel lists (one entry each).

    Attributes:
        sources, targets: list of str, raw sentences.
        src_langs, tgt_langs: list of str, language codes.
        tags: list of tuples of str, the scene tags of each example.
    """

    sources: List[str] = dataclasses.field(default_factory=list)
    targets: List[str] = dataclasses.field(default_factory=list)
    src_langs: List[str] = dataclasses.field(default_factory=list)
    tgt_langs: List[str] = dataclasses.field(default_factory=list)
    tags: List[Tuple[str, ...]] = dataclasses.field(default_factory=list)

    def __len__(self):
        return len(self.sources)

    def add(self, sources, targets, src_lang, tgt_lang, tags):
        """Appends aligned `sources`/`targets`; `tags` is one tuple for all
        of them or a list with one tuple per pair."""
        if len(sources) != len(targets):
            raise ValueError(f"{src_lang}-{tgt_lang}: {len(sources)} source "
                             f"but {len(targets)} target sentences")
        n = len(sources)
        if isinstance(tags, tuple) or not tags:
            tags = [tuple(tags)] * n
        if len(tags) != n:
            raise ValueError(f"{len(tags)} tag sets for {n} sentence pairs")
        self.sources.extend(sources)
        self.targets.extend(targets)
        self.src_langs.extend([src_lang] * n)
        self.tgt_langs.extend([tgt_lang] * n)
        self.tags.extend(tuple(t) for t in tags)
        return self

    def extend(self, other: "TaskExamples"):
        for field in dataclasses.fields(self):
            getattr(self, field.name).extend(getattr(other, field.name))
        return self

    def directions(self) -> dict:
        """`{(src, tgt): number of examples}`, in order of appearance."""
        counts = {}
        for key in zip(self.src_langs, self.tgt_langs):
            counts[key] = counts.get(key, 0) + 1
        return counts

    def select(self, indices) -> "TaskExamples":
        return TaskExamples(*([getattr(self, f.name)[i] for i in indices]
                              for f in dataclasses.fields(self)))


# --- Directions --------------------------------------------------------------


def all_directions(languages: Sequence[str]) -> List[Direction]:
    """Every ordered pair of distinct languages (12 for four languages)."""
    return [(s, t) for s, t in itertools.permutations(languages, 2)]


def _parse_pair(item, languages):
    src, sep, tgt = item.strip().partition("-")
    if not sep or not src or not tgt:
        raise ValueError(f"direction {item!r} is not of the form src-tgt "
                         "(e.g. en-de)")
    for lang in (src, tgt):
        if lang not in languages:
            raise ValueError(f"unknown language {lang!r} in direction "
                             f"{item!r}; known languages: {list(languages)}")
    if src == tgt:
        raise ValueError(f"direction {item!r} translates a language into "
                         "itself")
    return src, tgt


def parse_directions(spec, languages=MULTI30K_LANGUAGES) -> List[Direction]:
    """Parses a direction spec into a list of `(src, tgt)` pairs.

    Args:
        spec: `"all"`, `"en-de,en-fr"`, `"all-except:fr-cs,cs-fr"`, or an
            iterable of `"src-tgt"` strings / `(src, tgt)` pairs.
        languages: the language codes that `all` ranges over.

    Raises:
        ValueError: unknown language, malformed or duplicated direction, or
            a spec that leaves no direction.
    """
    languages = tuple(languages)
    if isinstance(spec, str):
        spec = spec.strip()
        if spec == "all":
            return all_directions(languages)
        if spec.startswith(ALL_EXCEPT):
            excluded = parse_directions(spec[len(ALL_EXCEPT):], languages)
            kept = [d for d in all_directions(languages) if d not in excluded]
            if not kept:
                raise ValueError(f"{spec!r} excludes every direction")
            return kept
        items = [item for item in spec.split(",") if item.strip()]
    else:
        items = list(spec)
    pairs = [_parse_pair("-".join(item) if isinstance(item, (tuple, list))
                         else item, languages)
             for item in items]
    if not pairs:
        raise ValueError("no translation direction given")
    duplicates = sorted({f"{s}-{t}" for s, t in pairs
                         if pairs.count((s, t)) > 1})
    if duplicates:
        raise ValueError(f"duplicated directions: {duplicates}")
    return pairs


def format_directions(directions: Iterable[Direction]) -> str:
    return ",".join(f"{s}-{t}" for s, t in directions)


def directions_languages(directions: Iterable[Direction]) -> List[str]:
    """Languages used by `directions`, in order of first appearance."""
    seen = []
    for pair in directions:
        for lang in pair:
            if lang not in seen:
                seen.append(lang)
    return seen


def parse_tags(tags) -> tuple:
    """`"news,formal"` / `["news"]` / `""` -> tuple of tag names."""
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = tags.split(",")
    return tuple(t.strip() for t in tags if t.strip())


# --- Multi30k ----------------------------------------------------------------


def split_languages(data_dir, split, languages=MULTI30K_LANGUAGES) -> list:
    """The languages of `languages` that `split` has a file for."""
    found = []
    for lang in languages:
        try:
            corpus.split_path(data_dir, split, lang)
            found.append(lang)
        except FileNotFoundError:
            pass
    return found


def read_multiway(data_dir, split, languages) -> dict:
    """Reads `<split>.<lang>[.gz]` for each language: `{lang: lines}`.

    Raises:
        FileNotFoundError: a language has no file for the split.
        ValueError: the languages have different numbers of lines (the
            files must be line-aligned).
    """
    data_dir = corpus.resolve_data_dir(data_dir)
    lines = {lang: corpus.read_lines(corpus.split_path(data_dir, split, lang))
             for lang in languages}
    counts = {lang: len(v) for lang, v in lines.items()}
    if len(set(counts.values())) > 1:
        raise ValueError(f"{split}: languages are not line-aligned: {counts}")
    return lines


def load_multi30k(data_dir, split="train", directions="all",
                  tags=MULTI30K_TAGS, max_lines=None,
                  languages=MULTI30K_LANGUAGES) -> TaskExamples:
    """Multi30k `split` as task examples for `directions`.

    Each language file is read once; direction `s-t` pairs line `i` of
    `<split>.s` with line `i` of `<split>.t`. Examples are grouped by
    direction (shuffling and batching mix them).

    Args:
        data_dir: the Multi30k directory (`--data-dir`, `$GNMT_TF_DATA`).
        split: `train`, `val`, `test_2016_flickr`, `test_2017_flickr`, ...
        directions: a direction spec or list (see `parse_directions`).
        tags: scene tags of every example (Multi30k: `("caption",)`).
        max_lines: int or None. Use only the first lines of each file.
        languages: the language codes `all` ranges over.

    Raises:
        FileNotFoundError: a direction needs a language the split lacks
            (e.g. `cs` in `test_2017_flickr`).
    """
    directions = parse_directions(directions, languages)
    needed = directions_languages(directions)
    data_dir = corpus.resolve_data_dir(data_dir)
    missing = [lang for lang in needed
               if lang not in split_languages(data_dir, split, needed)]
    if missing:
        raise FileNotFoundError(
            f"{split} has no {', '.join(missing)} file in {data_dir}; "
            f"directions {format_directions(directions)} need it")
    lines = read_multiway(data_dir, split, needed)
    if max_lines is not None:
        lines = {lang: v[:max_lines] for lang, v in lines.items()}
    examples = TaskExamples()
    for src, tgt in directions:
        examples.add(lines[src], lines[tgt], src, tgt, tuple(tags))
    return examples


def vocabulary_sentences(data_dir, split="train", languages=MULTI30K_LANGUAGES,
                         max_lines=None) -> list:
    """Each sentence of each language once, for a shared vocabulary.

    Training the vocabulary on the `TaskExamples` instead would count a
    sentence once per direction it appears in; this gives each language
    the same weight.
    """
    lines = read_multiway(data_dir, split, languages)
    return [s for lang in languages for s in lines[lang][:max_lines]]


# --- WMT22 -------------------------------------------------------------------


def wmt22_directions(data_dir) -> List[Direction]:
    """The WMT22 general-test directions available under `data_dir`."""
    base = pathlib.Path(data_dir)
    found = [d for d in WMT22_TSV_DIRECTIONS
             if (base / f"{WMT22_PREFIX}.{d[0]}-{d[1]}.tsv").exists()]
    found += [d for d in WMT22_TEXT_DIRECTIONS
              if (base / f"{WMT22_PREFIX}.{d[0]}-{d[1]}.src.{d[0]}").exists()]
    return found


def read_wmt22_tsv(path) -> list:
    """Rows of a WMT22 `.tsv` as dicts with `WMT22_TSV_COLUMNS` keys.

    Raises:
        ValueError: a row without exactly five tab-separated columns (names
            the file and line).
    """
    path = pathlib.Path(path)
    lines = corpus.read_lines(path)
    rows = []
    for number, line in enumerate(lines, 1):
        fields = line.split("\t")
        if number == 1 and fields == list(WMT22_TSV_COLUMNS):
            continue  # header
        if len(fields) != len(WMT22_TSV_COLUMNS):
            raise ValueError(
                f"{path}:{number}: expected {len(WMT22_TSV_COLUMNS)} "
                f"tab-separated columns {WMT22_TSV_COLUMNS}, got {len(fields)}")
        rows.append(dict(zip(WMT22_TSV_COLUMNS, fields)))
    return rows


def load_wmt22(data_dir, direction, tags=None, domains=None) -> TaskExamples:
    """A WMT22 general test set as task examples.

    Args:
        data_dir: directory with the `generaltest2022.*` files.
        direction: `"de-fr"`, `"fr-de"`, `"en-de"` or `"de-en"` (or a pair).
        tags: tuple of tags for every example, or None: for the `.tsv`
            sets, each example's `domain` (conversation, ecommerce, news,
            social); for the plain-text sets, no tags.
        domains: optional iterable; keep only rows of these domains
            (`.tsv` sets only).

    Raises:
        FileNotFoundError: no file for the direction.
        ValueError: malformed rows, or unaligned plain-text files.
    """
    if isinstance(direction, str):
        direction = _parse_pair(direction, ("en", "de", "fr"))
    src, tgt = direction
    base = pathlib.Path(data_dir)
    examples = TaskExamples()
    tsv = base / f"{WMT22_PREFIX}.{src}-{tgt}.tsv"
    if tsv.exists():
        rows = read_wmt22_tsv(tsv)
        if domains is not None:
            domains = set(domains)
            rows = [r for r in rows if r["domain"] in domains]
        row_tags = ([tuple(tags)] * len(rows) if tags is not None
                    else [(r["domain"],) for r in rows])
        return examples.add([r["source"] for r in rows],
                            [r["reference"] for r in rows], src, tgt, row_tags)
    source = base / f"{WMT22_PREFIX}.{src}-{tgt}.src.{src}"
    reference = base / f"{WMT22_PREFIX}.{src}-{tgt}.ref.A.{tgt}"
    if not source.exists() or not reference.exists():
        raise FileNotFoundError(
            f"no WMT22 test set for {src}-{tgt} in {base} (looked for "
            f"{tsv.name} and {source.name} + {reference.name})")
    if domains is not None:
        raise ValueError(f"{source.name} has no domain labels to filter on")
    return examples.add(corpus.read_lines(source), corpus.read_lines(reference),
                        src, tgt, tuple(tags or ()))


# --- Subword ids and the tf.data pipeline ------------------------------------


def target_language_token(language: str) -> str:
    """The `<2xx>` source prefix of Johnson et al. (2017), e.g. `<2de>`."""
    return f"<2{language}>"


def target_language_token_ids(subwords, languages) -> list:
    """Vocabulary ids of the `<2xx>` tokens of `languages`.

    Raises:
        ValueError: the vocabulary lacks one (it would split or become
            `<unk>`); vocabularies made by `train_task_space` have them.
    """
    ids = []
    for lang in languages:
        token = target_language_token(lang)
        piece_id = subwords._sp.PieceToId(token)
        if piece_id == subwords._sp.unk_id() or subwords._sp.IdToPiece(
                piece_id) != token:
            raise ValueError(
                f"the vocabulary {subwords.model_path} has no {token} piece; "
                "train it with the target-language tokens as user-defined "
                "symbols (train_task_space does)")
        ids.append(piece_id)
    return ids


@dataclasses.dataclass
class EncodedExamples:
    """`TaskExamples` as subword ids and model task inputs (parallel lists).

    `source_ids` already carry the target-language token when one is used,
    but not EOS/BOS (the dataset adds those).
    """

    source_ids: list
    target_ids: list
    src_lang: list
    tgt_lang: list
    tags: list


def encode_examples(examples: TaskExamples, subwords, config,
                    use_target_language_token=False) -> EncodedExamples:
    """Tokenises `examples` and maps languages and tags to model inputs.

    Args:
        examples: `TaskExamples`.
        subwords: `gnmt_tf.text.subword.Subwords`.
        config: `gnmt_tf.models.task_space.config.TransformerConfig` (languages, tags).
        use_target_language_token: prepend `<2tgt>` to every source.

    Raises:
        ValueError: a language or tag the config does not know.
    """
    src_lang = [config.language_id(lang) for lang in examples.src_langs]
    tgt_lang = [config.language_id(lang) for lang in examples.tgt_langs]
    vectors = {}
    tags = []
    for tag_set in examples.tags:
        if tag_set not in vectors:
            vectors[tag_set] = config.tag_vector(tag_set)
        tags.append(vectors[tag_set])
    source_ids = subwords.encode(examples.sources)
    if use_target_language_token:
        token_ids = target_language_token_ids(subwords, config.languages)
        source_ids = [[token_ids[t]] + ids
                      for t, ids in zip(tgt_lang, source_ids)]
    return EncodedExamples(source_ids, subwords.encode(examples.targets),
                           src_lang, tgt_lang, tags)


def make_task_dataset(encoded: EncodedExamples, max_tokens, max_length,
                      shuffle=True, shuffle_buffer=30000, repeat=True,
                      seed=None, pad_to_bucket=False, bucket_width=None):
    """The training `tf.data.Dataset` of mixed-direction batches.

    As `gnmt_tf.data.datasets.make_dataset` (EOS appended to sources, BOS
    prepended to decoder inputs, pairs longer than `max_length` dropped,
    permuted once across directions and shuffled, bucketed by length
    (`bucket_width`) with about `max_tokens` padded tokens per batch), plus
    the task inputs of each example.

    Returns:
        A dataset of `(features, labels)`: `features` has `"source_ids"`
        int32 `[B, S]`, `"target_in_ids"` int32 `[B, T]`, `"src_lang"`,
        `"tgt_lang"` int32 `[B]` and `"tags"` int32 `[B, K]`; `labels` int32
        `[B, T]`; 0 = padding.

    Raises:
        ValueError: no pair is left after length filtering.
    """
    import numpy as np
    import tensorflow as tf

    from gnmt_tf.data.datasets import (
                                       batch_by_length, kept_indices, permuted, teacher_forcing_features)

    keep = kept_indices(encoded.source_ids, encoded.target_ids, max_length)
    if not keep:
        raise ValueError(f"no sentence pair fits max_length={max_length} "
                         "subwords; raise it (--set max_length=N "
                         "max_sequence_length=N)")
    if shuffle:  # examples come grouped by direction
        keep = permuted(keep, seed)
    source_ids = [encoded.source_ids[i] for i in keep]
    target_ids = [encoded.target_ids[i] for i in keep]
    columns = teacher_forcing_features(source_ids, target_ids)
    columns.update({
        "src_lang": np.asarray(encoded.src_lang, np.int32)[keep],
        "tgt_lang": np.asarray(encoded.tgt_lang, np.int32)[keep],
        "tags": np.asarray(encoded.tags, np.int32).reshape(
            len(encoded.tags), -1)[keep],
    })
    return batch_by_length(columns, max_tokens, max_length, shuffle,
                           shuffle_buffer, repeat, seed,
                           pad_to_bucket=pad_to_bucket,
                           bucket_width=bucket_width)

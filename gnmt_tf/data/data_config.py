"""Data configuration: the training corpora of a run, in YAML or JSON.

Like OpenNMT-tf's data configuration, a file lists the corpora to train on;
each corpus has a translation direction, a format and a sampling weight:

```yaml
# data.yaml
prepared: prepared/        # where `gnmt-tf data prepare` writes (optional)
corpora:
  - name: europarl         # optional; default corpus0, corpus1, ...
    src_lang: en
    tgt_lang: de
    format: text           # two line-aligned files (.gz allowed)
    source: europarl.en.gz
    target: europarl.de.gz
    weight: 2              # sampled twice as often as a weight-1 corpus
  - src_lang: de
    tgt_lang: en
    format: tsv            # one file, src<TAB>tgt a line
    path: news.de-en.tsv
  - src_lang: en
    tgt_lang: fr
    format: tmx            # a TMX file; <tuv xml:lang> picks the sides
    path: memory.tmx
    tags: [news]           # optional scene tags (task-space models)
```

Relative paths are relative to the file. `load_data_config` checks the
whole file before any work and says what is wrong in one line.
"""

import dataclasses
import json
import pathlib
import re
from typing import Optional, Tuple

from gnmt_tf.checks import check_number

FORMATS = ("text", "tsv", "tmx")
_FILE_KEYS = {"text": ("source", "target"), "tsv": ("path",),
              "tmx": ("path",)}
_KEYS = {"name", "src_lang", "tgt_lang", "format", "weight", "tags",
         "source", "target", "path"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LANGUAGE = re.compile(r"^[A-Za-z]{2,3}([_-][A-Za-z0-9]+)*$")


@dataclasses.dataclass(frozen=True)
class CorpusSpec:
    """One training corpus.

    Attributes:
        name: str. Names the corpus in messages, shards and the manifest.
        src_lang, tgt_lang: str. Language codes of the two sides.
        format: str. One of `FORMATS`.
        files: tuple of Path. `(source, target)` for `text`, `(path,)`
            for `tsv` and `tmx`.
        weight: float > 0. Relative sampling weight in training.
        tags: tuple of str. Scene tags of every pair (task-space models).
    """

    name: str
    src_lang: str
    tgt_lang: str
    format: str
    files: Tuple[pathlib.Path, ...]
    weight: float = 1.0
    tags: Tuple[str, ...] = ()

    @property
    def direction(self) -> str:
        return f"{self.src_lang}-{self.tgt_lang}"

    def to_dict(self) -> dict:
        """JSON-ready form (for the manifest)."""
        return {"name": self.name, "src_lang": self.src_lang,
                "tgt_lang": self.tgt_lang, "format": self.format,
                "files": [str(f) for f in self.files],
                "weight": self.weight, "tags": list(self.tags)}


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """The corpora of a data configuration file.

    Attributes:
        corpora: tuple of `CorpusSpec`, at least one.
        prepared: Path or None. Where prepared shards go by default.
        path: Path or None. The file it was read from.
    """

    corpora: Tuple[CorpusSpec, ...]
    prepared: Optional[pathlib.Path] = None
    path: Optional[pathlib.Path] = None

    def languages(self) -> list:
        """Languages of the corpora, in order of first appearance."""
        seen = []
        for spec in self.corpora:
            for lang in (spec.src_lang, spec.tgt_lang):
                if lang not in seen:
                    seen.append(lang)
        return seen


def load_data_config(path, check_files=True) -> DataConfig:
    """Reads and validates a data configuration file (YAML or JSON).

    Args:
        path: str or Path.
        check_files: bool. Also check that every corpus file exists.

    Raises:
        FileNotFoundError: no such file, or a corpus file is missing.
        ValueError: the file does not parse, or an entry is invalid (an
            unknown format or key, a missing file key, a bad weight, a
            duplicated corpus name); the message names the file and corpus.
    """
    path = pathlib.Path(path)
    data = _parse(path)
    return parse_data_config(data, path.parent, path, check_files)


def parse_data_config(data, base_dir=".", path=None,
                      check_files=True) -> DataConfig:
    """Validates an already parsed data configuration (see
    `load_data_config`); relative paths are taken from `base_dir`."""
    where = str(path) if path else "data config"
    base_dir = pathlib.Path(base_dir)
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping with a 'corpora' "
                         f"list, got {type(data).__name__}")
    unknown = sorted(set(data) - {"corpora", "prepared"})
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} "
                         "(expected corpora, prepared)")
    entries = data.get("corpora")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{where}: 'corpora' must be a non-empty list of "
                         "corpora")
    corpora = tuple(_corpus(entry, i, base_dir, where, check_files)
                    for i, entry in enumerate(entries))
    names = [spec.name for spec in corpora]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{where}: duplicated corpus name(s) "
                         f"{', '.join(duplicates)}")
    prepared = data.get("prepared")
    if prepared is not None and not isinstance(prepared, str):
        raise ValueError(f"{where}: 'prepared' must be a directory path")
    return DataConfig(corpora,
                      _resolve(base_dir, prepared) if prepared else None,
                      pathlib.Path(path) if path else None)


def _parse(path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except ValueError as e:  # json.JSONDecodeError
            raise ValueError(f"{path}: not valid JSON: {e}") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"{path}: not valid YAML: {first}") from None


def _resolve(base_dir, value) -> pathlib.Path:
    value = pathlib.Path(value).expanduser()
    return value if value.is_absolute() else base_dir / value


def _corpus(entry, index, base_dir, where, check_files) -> CorpusSpec:
    label = f"{where}: corpus {index}"
    if not isinstance(entry, dict):
        raise ValueError(f"{label}: expected a mapping, got "
                         f"{type(entry).__name__}")
    name = entry.get("name", f"corpus{index}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{label}: name {name!r} must be letters, digits, "
                         "'_', '-' or '.'")
    label = f"{where}: corpus {name!r}"
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ValueError(f"{label}: unknown key(s) {', '.join(unknown)}")
    langs = []
    for key in ("src_lang", "tgt_lang"):
        value = entry.get(key)
        if not isinstance(value, str) or not _LANGUAGE.match(value):
            raise ValueError(f"{label}: {key} must be a language code such "
                             f"as 'en', got {value!r}")
        langs.append(value)
    if langs[0] == langs[1]:
        raise ValueError(f"{label}: src_lang and tgt_lang are both "
                         f"{langs[0]!r}")
    fmt = entry.get("format")
    if fmt not in FORMATS:
        raise ValueError(f"{label}: unknown format {fmt!r}; expected one "
                         f"of {', '.join(FORMATS)}")
    wanted = _FILE_KEYS[fmt]
    stray = sorted((set(entry) & {"source", "target", "path"}) - set(wanted))
    if stray:
        raise ValueError(f"{label}: format {fmt} takes "
                         f"{' and '.join(wanted)}, not {', '.join(stray)}")
    files = []
    for key in wanted:
        value = entry.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{label}: format {fmt} needs '{key}' (a file "
                             "path)")
        file = _resolve(base_dir, value)
        if check_files and not file.is_file():
            raise FileNotFoundError(f"{label}: {key} file {file} does not "
                                    "exist")
        files.append(file)
    weight = entry.get("weight", 1.0)
    try:
        check_number("weight", weight, above=0)
    except ValueError as e:
        raise ValueError(f"{label}: {e}") from None
    tags = entry.get("tags", ())
    if isinstance(tags, str):
        tags = [t for t in tags.split(",")]
    if not isinstance(tags, (list, tuple)) or not all(
            isinstance(t, str) for t in tags):
        raise ValueError(f"{label}: tags must be a list of strings")
    return CorpusSpec(name, langs[0], langs[1], fmt, tuple(files),
                      float(weight), tuple(t.strip() for t in tags
                                           if t.strip()))

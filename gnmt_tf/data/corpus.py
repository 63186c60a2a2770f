"""Reading parallel text files: plain or gzip, one sentence a line, UTF-8."""

import gzip
import os
import pathlib

ENV_DATA_DIR = "GNMT_TF_DATA"


def resolve_data_dir(data_dir=None) -> pathlib.Path:
    """Returns `data_dir`, else `$GNMT_TF_DATA`, else the Multi30k download
    cache (`gnmt-tf data download multi30k`, when complete), checking that
    the directory exists.

    Raises:
      FileNotFoundError: none of them is there, or the directory given is
        missing.
    """
    from gnmt_tf.data import download

    value = data_dir or os.environ.get(ENV_DATA_DIR)
    if not value:
        cached = download.cached_multi30k()
        if cached is None:
            raise FileNotFoundError(
                f"no data directory: pass --data-dir, set {ENV_DATA_DIR}, or "
                "run `gnmt-tf data download multi30k` (into "
                f"{download.multi30k_cache()})")
        return cached
    path = pathlib.Path(value)
    if not path.is_dir():
        raise FileNotFoundError(f"data directory {path} does not exist")
    return path


def split_path(data_dir, split: str, lang: str) -> pathlib.Path:
    """Finds `<split>.<lang>` or `<split>.<lang>.gz` under `data_dir`."""
    base = pathlib.Path(data_dir)
    for name in (f"{split}.{lang}", f"{split}.{lang}.gz"):
        if (base / name).exists():
            return base / name
    raise FileNotFoundError(f"no {split}.{lang}[.gz] in {base}")


def read_lines(path) -> list:
    """Reads a UTF-8 text file (gzip if it ends in .gz) into a list of lines.

    Raises:
      ValueError: the file is not valid UTF-8 (names the file and line).
    """
    path = pathlib.Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        return decode_lines(f.read(), str(path))


def decode_lines(raw: bytes, name: str) -> list:
    """Splits UTF-8 bytes into lines; invalid UTF-8 raises ValueError naming
    `name` and the 1-based line number."""
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out = []
    for number, line in enumerate(lines, 1):
        try:
            out.append(line.decode("utf-8").rstrip("\r"))
        except UnicodeDecodeError as e:
            raise ValueError(f"{name}:{number}: invalid UTF-8 ({e.reason})") from None
    return out


def read_parallel(data_dir, split: str, src_lang: str, tgt_lang: str):
    """Reads a split as two aligned lists of sentences.

    Raises:
      ValueError: the two sides have different numbers of lines.
    """
    src = read_lines(split_path(data_dir, split, src_lang))
    tgt = read_lines(split_path(data_dir, split, tgt_lang))
    if len(src) != len(tgt):
        raise ValueError(
            f"{split}: {len(src)} {src_lang} lines but {len(tgt)} {tgt_lang} lines")
    return src, tgt

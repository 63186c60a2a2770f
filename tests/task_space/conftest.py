"""Fixtures for the task-space tests: a tiny synthetic 4-way corpus."""

import gzip
import random

import pytest

# One concept per row: en, de, fr, cs.
LEXICON = [
    ("a", "ein", "un", "jeden"),
    ("dog", "Hund", "chien", "pes"),
    ("cat", "Katze", "chat", "kočka"),
    ("man", "Mann", "homme", "muž"),
    ("runs", "rennt", "court", "běží"),
    ("sleeps", "schläft", "dort", "spí"),
    ("red", "roter", "rouge", "červený"),
    ("big", "großer", "grand", "velký"),
    ("ball", "Ball", "balle", "míč"),
    ("park", "Park", "parc", "park"),
]
LANGUAGES = ("en", "de", "fr", "cs")


def synthetic_lines(num_lines, seed):
    """`{lang: lines}`, line-aligned across the four languages."""
    rng = random.Random(seed)
    lines = {lang: [] for lang in LANGUAGES}
    for _ in range(num_lines):
        words = [rng.randrange(len(LEXICON)) for _ in range(rng.randint(2, 4))]
        for column, lang in enumerate(LANGUAGES):
            lines[lang].append(" ".join(LEXICON[w][column] for w in words))
    return lines


def write_multiway(directory, split, lines, compress=True):
    for lang, text in lines.items():
        data = "".join(line + "\n" for line in text).encode("utf-8")
        if compress:
            (directory / f"{split}.{lang}.gz").write_bytes(gzip.compress(data))
        else:
            (directory / f"{split}.{lang}").write_bytes(data)


@pytest.fixture(scope="session")
def multiway_dir(tmp_path_factory):
    """Multi30k-like directory: train (200 lines), val (20), and
    test_2017_flickr (10) without Czech, as Multi30k."""
    directory = tmp_path_factory.mktemp("multiway")
    write_multiway(directory, "train", synthetic_lines(200, seed=1))
    write_multiway(directory, "val", synthetic_lines(20, seed=2),
                   compress=False)
    test = synthetic_lines(10, seed=3)
    del test["cs"]
    write_multiway(directory, "test_2017_flickr", test)
    return directory

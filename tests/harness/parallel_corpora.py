"""Tiny corpora in every format of a data configuration, for the data
tests."""

import gzip
import pathlib

# Six pairs: one kept, then one of each cleaning reason, in `REASONS` order
# (empty, too long, length ratio, source == target, duplicate), and a second
# kept pair.
PAIRS = [
    ("A man rides a bike.", "Ein Mann fährt Fahrrad."),
    ("", "Leer."),
    ("A dog runs on the grass by the lake.",
     "Ein Hund rennt auf dem Gras am See und " + "sehr " * 20 + "lang."),
    ("Hi.", "Ein sehr langer deutscher Satz."),
    ("Berlin", "Berlin"),
    ("A man rides a bike.", "Ein Mann fährt Fahrrad."),
    ("Two cats\tsleep.", "Zwei  Katzen schlafen."),
]
KEPT = [("A man rides a bike.", "Ein Mann fährt Fahrrad."),
        ("Two cats sleep.", "Zwei Katzen schlafen.")]
COUNTS = {"read": 7, "bad_input": 0, "empty": 1, "too_long": 1,
          "length_ratio": 1, "source_is_target": 1, "wrong_language": 0,
          "duplicate": 1, "kept": 2}
MAX_LENGTH_CHARS = 60


def write_text_pair(directory, name, pairs, gz=False):
    """`name.en[.gz]` and `name.de[.gz]`; returns their paths."""
    directory = pathlib.Path(directory)
    paths = []
    for side, lang in enumerate(("en", "de")):
        path = directory / f"{name}.{lang}{'.gz' if gz else ''}"
        data = "".join(p[side].replace("\t", " ") + "\n" for p in pairs)
        data = data.encode("utf-8")
        path.write_bytes(gzip.compress(data) if gz else data)
        paths.append(path)
    return paths


def write_tsv(path, pairs):
    path = pathlib.Path(path)
    path.write_text("".join(f"{s.replace(chr(9), ' ')}\t{t}\n"
                            for s, t in pairs), encoding="utf-8")
    return path


def write_tmx(path, pairs, broken=False):
    from xml.sax.saxutils import escape

    units = "".join(
        f'  <tu>\n    <tuv xml:lang="en-US"><seg>{escape(s)}</seg></tuv>\n'
        f'    <tuv xml:lang="de"><seg>{escape(t)}</seg></tuv>\n  </tu>\n'
        for s, t in pairs)
    if broken:
        units += '  <tu><tuv xml:lang="en"><seg>oops</tuv></tu>\n'
    path = pathlib.Path(path)
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n'
                    '<tmx version="1.4">\n<header srclang="en"/>\n<body>\n'
                    f"{units}</body>\n</tmx>\n", encoding="utf-8")
    return path

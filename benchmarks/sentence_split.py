"""Sentence splitters compared: paragraphs of Multi30k test_2016_flickr.

Paragraphs are made by joining 2 to 6 consecutive sentences (sizes drawn
with a fixed seed) per language; a paragraph counts when a splitter gives
back exactly its sentences. Compared: `pipeline.sentence_split` (sentencex
plus our rules), sentencex alone, and pysbd (which has no Czech rules:
Czech runs with its Slovak ones, the closest it has). Writes
`benchmarks/results/sentence_split.json`.

    python benchmarks/sentence_split.py --data-dir ../shared/data/multi30k
"""

import argparse
import gzip
import json
import pathlib
import random
import sys
import time

# The repository root first: benchmarks/pipeline.py would otherwise shadow
# the `pipeline` package.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import pysbd  # noqa: E402
import sentencex  # noqa: E402

from results_file import command_line, write_text_atomic  # noqa: E402

from pipeline.sentence_split import split_sentences  # noqa: E402

LANGUAGES = ("en", "de", "fr", "cs")
PYSBD_LANGUAGE = {"cs": "sk"}


# Hand-written paragraphs with abbreviations that must not end a sentence.
ABBREVIATIONS = {
    "en": [["Mr. Smith met Dr. Jones at 5 p.m. today.", "They talked."],
           ["See e.g. the U.S. report.", "It is long."]],
    "de": [["Das Haus Nr. 5 ist rot.", "Wir kamen bzw. gingen."],
           ["Wir essen z. B. Äpfel.", "Dann gehen wir."],
           ["Er kam am 3. Juli.", "Sie blieb."]],
    "fr": [["M. Dupont est arrivé.", "Mme. Martin aussi."],
           ["Il habite au n° 5 de la rue.", "C'est loin."]],
    "cs": [["Viz č. 5 a str. 10 dole.", "To je vše."],
           ["Přišel tj. v pondělí.", "Odešel v úterý."]],
}


def paragraphs(sentences, seed=0):
    """Lists of 2-6 consecutive sentences covering `sentences` in order."""
    rng, out, i = random.Random(seed), [], 0
    while i + 2 <= len(sentences):
        size = rng.randint(2, 6)
        out.append(sentences[i:i + size])
        i += size
    return out


def splitters(language):
    pysbd_segmenter = pysbd.Segmenter(
        language=PYSBD_LANGUAGE.get(language, language), clean=False)
    return {
        "pipeline": lambda text: split_sentences(text, language),
        "sentencex": lambda text: [s.strip() for s in
                                   sentencex.segment(language, text)
                                   if s.strip()],
        "pysbd": lambda text: [s.strip() for s in
                               pysbd_segmenter.segment(text) if s.strip()],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, type=pathlib.Path)
    parser.add_argument("--out", type=pathlib.Path, default=pathlib.Path(
        __file__).parent / "results" / "sentence_split.json")
    args = parser.parse_args()
    results = {"data": "multi30k test_2016_flickr, paragraphs of 2-6 "
                       "consecutive sentences (seed 0)",
               "pysbd_language_for": PYSBD_LANGUAGE, "languages": {},
               "command": command_line("sentence_split.py")}
    totals = {}
    for language in LANGUAGES:
        with gzip.open(args.data_dir / f"test_2016_flickr.{language}.gz",
                       "rt", encoding="utf-8") as f:
            sentences = [line.strip() for line in f if line.strip()]
        paras = paragraphs(sentences)
        # Paragraphs whose every sentence ends in ., ! or ?: the ones a
        # splitter can split at all (some captions have no final period).
        punctuated = [p for p in paras if all(s[-1] in ".!?" for s in p)]
        row = {"paragraphs": len(paras), "punctuated": len(punctuated)}
        for name, split in splitters(language).items():
            start = time.perf_counter()
            exact = [split(" ".join(p)) == p for p in paras]
            seconds = time.perf_counter() - start
            exact_punct = [split(" ".join(p)) == p for p in punctuated]
            row[name] = {"exact": round(sum(exact) / len(paras), 4),
                         "exact_punctuated": round(
                             sum(exact_punct) / len(punctuated), 4),
                         "seconds": round(seconds, 3)}
            totals.setdefault(name, []).extend(exact)
        for name, split in splitters(language).items():
            row[name]["abbreviations_exact"] = round(sum(
                split(" ".join(p)) == p for p in ABBREVIATIONS[language])
                / len(ABBREVIATIONS[language]), 4)
        results["languages"][language] = row
        print(language, json.dumps(row))
    results["sentence_split_exact"] = {
        name: round(sum(v) / len(v), 4) for name, v in totals.items()}
    print(json.dumps(results["sentence_split_exact"]))
    write_text_atomic(args.out, json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

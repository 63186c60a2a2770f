"""Sentence splitters compared: paragraphs of Multi30k splits.

Paragraphs are made by joining 2 to 6 consecutive sentences (sizes drawn
with a fixed seed) per language and split; a paragraph counts when a
splitter gives back exactly its sentences. Two figures per splitter:
``exact`` over all paragraphs, and ``exact_punctuated`` over the paragraphs
whose every sentence ends in ".", "!" or "?" (no splitter can find the
end of a caption without one: 5 % of test_2016_flickr's English captions,
24 % of test_2017_flickr's).
Compared: `gnmt_tf.pipeline.sentence_split` (sentencex plus our rules), sentencex
alone, and pysbd (which has no Czech rules: Czech runs with its Slovak
ones, the closest it has).

`--splits` chooses the Multi30k splits (default test_2016_flickr); a
language a split lacks (Multi30k has no Czech test_2017_flickr) is listed
under ``missing``. Each split is one section of
`benchmarks/results/sentence_split.json` (`results_file.update_section`:
rerunning some splits keeps the others; `--keep-previous-as` archives a
section's last figures inside it). `--show-failures` prints the
punctuated paragraphs that `gnmt_tf.pipeline.sentence_split` gets wrong.

    python benchmarks/sentence_split.py --data-dir ../shared/data/multi30k \\
        --splits val test_2016_flickr test_2017_flickr
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
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import pysbd  # noqa: E402
import sentencex  # noqa: E402

from gnmt_tf.pipeline.sentence_split import split_sentences  # noqa: E402

LANGUAGES = ("en", "de", "fr", "cs")
# Multi30k Task 1 splits; train is for looking at failures, the others are
# the ones to report.
SPLITS = ("train", "val", "test_2016_flickr", "test_2017_flickr")
RESULT = REPO_ROOT / "benchmarks" / "results" / "sentence_split.json"
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


def measure(sentences, language, show_failures=False):
    """The figures of every splitter on the paragraphs of `sentences`."""
    paras = paragraphs(sentences)
    # Paragraphs whose every sentence ends in ., ! or ?: the ones a
    # splitter can split at all (some captions have no final period).
    punctuated = [all(s[-1] in ".!?" for s in p) for p in paras]
    row = {"paragraphs": len(paras), "punctuated": sum(punctuated)}
    for name, split in splitters(language).items():
        start = time.perf_counter()
        got = [split(" ".join(p)) for p in paras]
        seconds = time.perf_counter() - start
        wrong = [g != p for g, p in zip(got, paras)]
        punctuated_wrong = sum(w and q for w, q in zip(wrong, punctuated))
        row[name] = {"exact": round(1 - sum(wrong) / len(paras), 4),
                     "exact_punctuated": round(
                         1 - punctuated_wrong / sum(punctuated), 4),
                     "wrong": sum(wrong),
                     "punctuated_wrong": punctuated_wrong,
                     "seconds": round(seconds, 3)}
        row[name]["abbreviations_exact"] = round(sum(
            split(" ".join(p)) == p for p in ABBREVIATIONS[language])
            / len(ABBREVIATIONS[language]), 4)
        if show_failures and name == "pipeline":
            for p, g, w, q in zip(paras, got, wrong, punctuated):
                if w and q:
                    print(f"  want {p}\n  got  {g}")
    return row


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True, type=pathlib.Path)
    parser.add_argument("--splits", nargs="+", choices=SPLITS,
                        default=["test_2016_flickr"], metavar="SPLIT",
                        help=f"Multi30k splits, of {', '.join(SPLITS)}")
    parser.add_argument("--languages", nargs="+", choices=LANGUAGES,
                        default=list(LANGUAGES), metavar="LANG",
                        help=f"of {', '.join(LANGUAGES)}")
    parser.add_argument("--keep-previous-as", default=None,
                        help="keep each split's previous figures under "
                             "this key inside its section")
    parser.add_argument("--show-failures", action="store_true",
                        help="print the punctuated paragraphs that "
                             "gnmt_tf.pipeline.sentence_split gets wrong")
    parser.add_argument("--out", type=pathlib.Path, default=RESULT)
    args = parser.parse_args(argv)
    if not args.data_dir.is_dir():
        parser.error(f"--data-dir: no directory {args.data_dir}")
    for flag, values in (("--splits", args.splits),
                         ("--languages", args.languages)):
        if len(set(values)) != len(values):
            parser.error(f"{flag}: repeated values {values}")
    for split in args.splits:
        if not any((args.data_dir / f"{split}.{language}.gz").is_file()
                   for language in args.languages):
            parser.error(f"--splits: no {split}.*.gz in {args.data_dir}")
    return args


def main(argv=None):
    # Here, not at the top: benchmarks/pipeline.py loads this file by its
    # path for `paragraphs` and `splitters`, without benchmarks/ on the path.
    from results_file import command_line, update_section

    args = parse_args(argv)
    command = command_line("sentence_split.py", argv)
    for split in args.splits:
        section = {"data": f"multi30k {split}, paragraphs of 2-6 "
                           "consecutive sentences (seed 0)",
                   "pysbd_language_for": PYSBD_LANGUAGE, "languages": {},
                   "missing": []}
        totals = {}  # splitter: [paragraphs, wrong, punctuated, wrong]
        for language in args.languages:
            path = args.data_dir / f"{split}.{language}.gz"
            if not path.is_file():
                section["missing"].append(language)
                print(split, language, f"skipped: no {path.name}")
                continue
            with gzip.open(path, "rt", encoding="utf-8") as f:
                sentences = [line.strip() for line in f if line.strip()]
            if args.show_failures:
                print(split, language, "pipeline's wrong punctuated "
                      "paragraphs:")
            row = measure(sentences, language, args.show_failures)
            section["languages"][language] = row
            print(split, language, json.dumps(row), flush=True)
            for name in splitters(language):
                counts = (row["paragraphs"], row[name]["wrong"],
                          row["punctuated"], row[name]["punctuated_wrong"])
                totals[name] = [t + c for t, c in
                                zip(totals.get(name, [0] * 4), counts)]
        # Over the split's languages, each paragraph weighing the same.
        section["sentence_split_exact"] = {
            name: round(1 - t[1] / t[0], 4) for name, t in totals.items()}
        section["sentence_split_exact_punctuated"] = {
            name: round(1 - t[3] / t[2], 4) for name, t in totals.items()}
        print(split, json.dumps(section["sentence_split_exact_punctuated"]))
        update_section(args.out, split, section, command,
                       keep_previous_as=args.keep_previous_as)


if __name__ == "__main__":
    main()

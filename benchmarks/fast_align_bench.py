"""Benchmark: our NumPy fast_align against the original C++ tool on Multi30k.

Aligns the lower-cased, simply tokenised Multi30k en-de training set (29k
pairs) forward and reverse with `-d -o -v` and symmetrises with
grow-diag-final-and, timing the whole pipeline from the corpus file. If the
path of an original `fast_align` binary (github.com/clab/fast_align, built
outside this repository) is given, it runs on the same file and the link F1
of our alignments against its alignments is reported, after
grow-diag-final-and (the original `atools` when `--atools` is given, else ours
for both).

Without a binary, the conformance fixture `--reference-dir` (default
../shared/data/fast_align_reference, the original's outputs and logs on the
first 2,000 pairs of Multi30k en-de, see its README.md) gives the comparison
instead: ours runs on the fixture's input, and its links and diagonal
tensions are compared with the original's (`reference_fixture` in the JSON).

    python benchmarks/fast_align_bench.py --data-dir ../shared/data/multi30k \\
        [--original /tmp/fast_align_orig/fast_align] [--atools .../atools]

Writes `benchmarks/results/fast_align.json`. Wall times suffer when other jobs
share the CPUs; `cpu_s_*` (user + system time) are steadier.
"""

import argparse
import gzip
import json
import os
import pathlib
import re
import resource
import subprocess
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from gnmt_tf.alignment import pharaoh, symmetrize  # noqa: E402
from gnmt_tf.alignment.fast_align import FastAlign  # noqa: E402

_TOKEN = re.compile(r"\w+|[^\w\s]")


def _read(path: pathlib.Path, limit):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [" ".join(_TOKEN.findall(line.lower())) for line in f]
    return lines[:limit] if limit else lines


def _write_corpus(data_dir, source, target, limit, path):
    src = _read(data_dir / f"train.{source}.gz", limit)
    tgt = _read(data_dir / f"train.{target}.gz", limit)
    if len(src) != len(tgt):
        raise SystemExit(f"{len(src)} {source} lines but {len(tgt)} {target}")
    with open(path, "w", encoding="utf-8") as f:
        for s, t in zip(src, tgt):
            if s and t:
                f.write(f"{s} ||| {t}\n")
    return sum(1 for s, t in zip(src, tgt) if s and t)


def _ours(corpus, iterations, exact_gradient, models):
    times, directions = {}, {}
    cpu = time.process_time()
    for name, reverse in (("forward", False), ("reverse", True)):
        start = time.perf_counter()
        aligner = FastAlign(reverse=reverse, favor_diagonal=True,
                            optimize_tension=True, variational_bayes=True,
                            iterations=iterations,
                            exact_tension_gradient=exact_gradient)
        directions[name] = aligner.fit_align(pharaoh.read_corpus(corpus))
        times[name] = time.perf_counter() - start
        models[name] = {"final_tension": aligner.tension_,
                        "perplexity": aligner.history_[-1]["perplexity"]
                        if aligner.history_ else None}
    start = time.perf_counter()
    sym = symmetrize.symmetrize_corpus(directions["forward"],
                                       directions["reverse"],
                                       "grow-diag-final-and")
    times["symmetrize"] = time.perf_counter() - start
    models["cpu_s"] = time.process_time() - cpu
    return directions, sym, times


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _original(binary, atools, corpus, iterations, workdir):
    times, directions = {}, {}
    cpu = _children_cpu()
    for name, flags in (("forward", []), ("reverse", ["-r"])):
        out = pathlib.Path(workdir, f"{name}.align")
        start = time.perf_counter()
        with open(out, "w") as f:
            subprocess.run([binary, "-i", str(corpus), "-d", "-o", "-v",
                            "-I", str(iterations)] + flags, stdout=f,
                           stderr=subprocess.DEVNULL, check=True)
        times[name] = time.perf_counter() - start
        directions[name] = list(pharaoh.read_alignments(out))
    if atools:
        out = pathlib.Path(workdir, "sym.align")
        start = time.perf_counter()
        with open(out, "w") as f:
            subprocess.run([atools, "-c", "grow-diag-final-and",
                            "-i", str(pathlib.Path(workdir, "forward.align")),
                            "-j", str(pathlib.Path(workdir, "reverse.align"))],
                           stdout=f, check=True)
        times["symmetrize"] = time.perf_counter() - start
        directions["symmetrized"] = list(pharaoh.read_alignments(out))
    times["cpu_s"] = _children_cpu() - cpu
    return directions, times


def _fixture(reference_dir, iterations):
    """Ours on the conformance fixture's input against the original's
    alignments, grow-diag-final-and (atools) and logged tensions."""
    reference_dir = pathlib.Path(reference_dir)
    corpus = reference_dir / "multi30k_train_2k.tok.lc.en-de.txt"
    directions, result = {}, {"dir": str(reference_dir),
                              "f1_vs_original_by_direction": {},
                              "tension_by_iteration": {}}
    for name, reverse in (("forward", False), ("reverse", True)):
        aligner = FastAlign(reverse=reverse, favor_diagonal=True,
                            optimize_tension=True, variational_bayes=True,
                            iterations=iterations)
        directions[name] = aligner.fit_align(pharaoh.read_corpus(corpus))
        original = list(pharaoh.read_alignments(
            reference_dir / f"{name}.align"))
        result["f1_vs_original_by_direction"][name] = _f1(directions[name],
                                                          original)
        log = (reference_dir / f"{name}.log").read_text()
        result["tension_by_iteration"][name] = {
            "ours": [h["tension"] for h in aligner.history_],
            # The original logs a tension only where it re-estimates it.
            "original": [4.0] + [float(t) for t in re.findall(
                r"final tension: (\S+)", log)]}
    sym = symmetrize.symmetrize_corpus(directions["forward"],
                                       directions["reverse"],
                                       "grow-diag-final-and")
    original_sym = list(pharaoh.read_alignments(reference_dir / "gdfa.align"))
    result.update({
        "sentences": len(sym),
        "f1_vs_original": _f1(sym, original_sym),
        "identical_sentences_vs_original": sum(
            set(a) == set(b) for a, b in zip(sym, original_sym)) / len(sym),
    })
    return result


def _f1(ours, reference):
    matches = sum(len(set(a) & set(b)) for a, b in zip(ours, reference))
    predicted = sum(len(a) for a in ours)
    gold = sum(len(b) for b in reference)
    if not matches:
        return 0.0
    precision, recall = matches / predicted, matches / gold
    return 2 * precision * recall / (precision + recall)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"),
                        help="Multi30k directory with train.{en,de}.gz")
    parser.add_argument("--source", default="de")
    parser.add_argument("--target", default="en")
    parser.add_argument("--limit", type=int, default=None,
                        help="use only the first N pairs")
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--exact-tension-gradient", action="store_true",
                        help="run ours with the exact tension gradient")
    parser.add_argument("--original", default=None,
                        help="path of an original fast_align binary")
    parser.add_argument("--atools", default=None,
                        help="path of the original atools binary, for its "
                        "grow-diag-final-and")
    parser.add_argument("--reference-dir", default=str(
        REPO_ROOT.parent / "shared" / "data" / "fast_align_reference"),
                        help="the original's outputs on 2,000 pairs "
                        "(skipped if absent)")
    parser.add_argument("--output", default=str(
        REPO_ROOT / "benchmarks" / "results" / "fast_align.json"))
    args = parser.parse_args(argv)
    if not args.data_dir:
        parser.error("--data-dir (or GNMT_TF_DATA) is required")
    data_dir = pathlib.Path(args.data_dir)

    with tempfile.TemporaryDirectory() as workdir:
        corpus = pathlib.Path(workdir, "corpus.txt")
        size = _write_corpus(data_dir, args.source, args.target, args.limit,
                             corpus)
        models = {}
        directions, sym, times = _ours(corpus, args.iterations,
                                       args.exact_tension_gradient, models)
        wall_ours = sum(times.values())
        cpu_ours = models.pop("cpu_s")
        result = {
            "sentences_per_s": size / wall_ours,
            "wall_s_ours": wall_ours,
            "wall_s_original": None,
            "f1_vs_original": None,
            "command": " ".join([sys.executable] + sys.argv),
            "sentences": size,
            "pair": f"{args.source}-{args.target}",
            "options": f"-d -o -v -I {args.iterations}, grow-diag-final-and",
            "cpu_s_ours": cpu_ours,
            "load_average_1min": os.getloadavg()[0],
            "wall_s_ours_by_step": times,
            "models_ours": models,
            "exact_tension_gradient": args.exact_tension_gradient,
            "links_per_sentence": sum(map(len, sym)) / size,
            "reference_fixture": None,
        }
        if pathlib.Path(args.reference_dir, "gdfa.align").exists():
            result["reference_fixture"] = _fixture(args.reference_dir,
                                                   args.iterations)
        if args.original:
            original, original_times = _original(
                args.original, args.atools, corpus, args.iterations, workdir)
            original_sym = original.get("symmetrized") or \
                symmetrize.symmetrize_corpus(original["forward"],
                                             original["reverse"],
                                             "grow-diag-final-and")
            cpu_original = original_times.pop("cpu_s")
            result.update({
                "cpu_s_original": cpu_original,
                # Without --atools, the original's alignments go through our
                # symmetriser for the F1 and its time excludes that step.
                "wall_s_original": sum(original_times.values()),
                "original_symmetrizer": "atools" if args.atools else "ours",
                "wall_s_original_by_step": original_times,
                "f1_vs_original": _f1(sym, original_sym),
                "f1_vs_original_by_direction": {
                    name: _f1(directions[name], original[name])
                    for name in ("forward", "reverse")},
                "identical_sentences_vs_original": sum(
                    set(a) == set(b) for a, b in zip(sym, original_sym)) / size,
            })
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    staging = output.with_suffix(".tmp")
    staging.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(staging, output)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()

"""Benchmark: how often beam search misses the model's best output.

For short source sentences, exact search (`gnmt_tf.decoding.exact_search`,
depth-first with admissible pruning) finds the output with the highest
unnormalised score (sum of token log-probabilities) under the same output
length limit as beam search (`--max-length-ratio` times the source length).
Beam search runs without length or coverage penalty (so both optimise the
same score) at each beam size. A *search error* is a sentence where beam
search's best score is below the exact one (by more than float32 noise,
`--tolerance`). `search_errors[beam]` is the share of search errors among
the sentences whose exact search finished within `--max-expansions` (proven
optimal); `unproven` counts the others, which are left out.

    python benchmarks/search_errors.py --model-dir MODEL_DIR \\
        [--data-dir ../shared/data/multi30k] [--source en] [--split val] \\
        [--max-subwords 10] [--num-sentences 50] [--max-expansions 2000] \\
        [--beams 1,4,10] [--task tgt_lang=de ...] [--note "..."]

The model directory may be of any model type; `--task name=value` gives the
task arguments (default: the model's `default_task`; a multi-valued one
takes comma-separated names). Writes `benchmarks/results/search_errors.json`
(`--output`).
"""

import argparse
import gzip
import json
import pathlib
import shlex
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)

RESULT = REPO_ROOT / "benchmarks" / "results" / "search_errors.json"


def _sentences(path, subwords, max_subwords, count):
    """The first `count` sentences of `path` with at most `max_subwords`
    subwords (non-blank, no repeats)."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    chosen, seen = [], set()
    for line, ids in zip(lines, subwords.encode(lines)):
        if line and line not in seen and len(ids) <= max_subwords:
            seen.add(line)
            chosen.append(line)
            if len(chosen) == count:
                break
    return chosen


def _task(pairs, default):
    task = dict(default)
    for pair in pairs:
        name, _, value = pair.partition("=")
        task[name] = value.split(",") if "," in value else value
    return task


def measure(translator, sentences, task, beams, max_length_ratio,
            max_expansions, tolerance):
    """Per-sentence exact and beam scores, and the summary."""
    from gnmt_tf.decoding.exact_search import exact_translate
    from gnmt_tf.translator import SearchOptions

    rows = []
    beam_scores = {}
    for beam in beams:
        options = SearchOptions(beam_size=beam, length_penalty=0.0,
                                coverage_penalty=0.0,
                                max_length_ratio=max_length_ratio)
        hyps = translator.translate_nbest(sentences, options, **task)
        beam_scores[beam] = [(h[0].text, h[0].score) for h in hyps]
    for i, sentence in enumerate(sentences):
        start = time.perf_counter()
        exact = exact_translate(translator, sentence,
                                max_length_ratio=max_length_ratio,
                                max_expansions=max_expansions, **task)
        rows.append({
            "source": sentence, "exact": exact.text, "exact_score": exact.score,
            "optimal": exact.optimal, "expansions": exact.expansions,
            "seconds": round(time.perf_counter() - start, 3),
            "beam": {str(b): {"text": beam_scores[b][i][0],
                              "score": beam_scores[b][i][1]} for b in beams}})
        print(f"{i + 1}/{len(sentences)} optimal={exact.optimal} "
              f"expansions={exact.expansions} score={exact.score:.3f}",
              flush=True)
    proven = [r for r in rows if r["optimal"]]
    errors = {}
    for beam in beams:
        missed = [r for r in proven if r["beam"][str(beam)]["score"]
                  < r["exact_score"] - tolerance]
        errors[str(beam)] = {
            "share": round(len(missed) / len(proven), 4) if proven else None,
            "count": len(missed)}
    return rows, errors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--data-dir", default=str(
        REPO_ROOT.parent / "shared" / "data" / "multi30k"))
    parser.add_argument("--source", default="en")
    parser.add_argument("--split", default="val")
    parser.add_argument("--max-subwords", type=int, default=10)
    parser.add_argument("--num-sentences", type=int, default=50)
    parser.add_argument("--max-expansions", type=int, default=2000)
    parser.add_argument("--max-length-ratio", type=float, default=2.0)
    parser.add_argument("--beams", default="1,4,10")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--task", action="append", default=[])
    parser.add_argument("--note", default="")
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)

    from gnmt_tf.translator import Translator

    translator = Translator.from_model_dir(args.model_dir)
    task = _task(args.task, translator.model.default_task)
    beams = [int(b) for b in args.beams.split(",")]
    path = pathlib.Path(args.data_dir) / f"{args.split}.{args.source}.gz"
    sentences = _sentences(path, translator.subwords, args.max_subwords,
                           args.num_sentences)
    start = time.perf_counter()
    rows, errors = measure(translator, sentences, task, beams,
                           args.max_length_ratio, args.max_expansions,
                           args.tolerance)
    proven = sum(r["optimal"] for r in rows)
    result = {
        "search_errors": {b: e["share"] for b, e in errors.items()},
        "search_error_counts": {b: e["count"] for b, e in errors.items()},
        "sentences": len(rows),
        "proven_optimal": proven,
        "unproven": len(rows) - proven,
        "definition": (
            "share of the sentences whose exact (dfs) search finished within "
            "max_expansions where beam search's best unnormalised score "
            "(sum of log-probs; no length or coverage penalty; same max "
            "length) is below the exact best by more than tolerance"),
        "model_dir": str(args.model_dir),
        "task": task,
        "data": str(path),
        "max_subwords": args.max_subwords,
        "max_expansions": args.max_expansions,
        "max_length_ratio": args.max_length_ratio,
        "tolerance": args.tolerance,
        "exact_outputs_empty": sum(
            1 for r in rows if r["optimal"] and r["exact"] == ""),
        "seconds": round(time.perf_counter() - start, 1),
        "note": args.note,
        "command": "python benchmarks/search_errors.py " + " ".join(
            shlex.quote(a) for a in (argv if argv is not None
                                     else sys.argv[1:])),
        "per_sentence": rows,
    }
    pathlib.Path(args.output).write_text(
        json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps({k: result[k] for k in (
        "search_errors", "sentences", "proven_optimal", "unproven",
        "exact_outputs_empty", "seconds")}, indent=2))


if __name__ == "__main__":
    main()

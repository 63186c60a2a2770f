"""Benchmark: the batch-decoding pipeline (`gnmt-tf translate --pipeline`,
SGNMT §3.1) against plain sequential batches, on a 10,000-sentence file.

Both runs go through `gnmt-tf translate` in one process, one after the
other, with the same model, search, batch size and windows; each search
function is traced on a short warm-up file first, so neither run pays for
tracing; by default they run in ABBA order (plain, pipeline, pipeline,
plain) and the means are reported. `--pipeline-retries 0` (the default here) makes the pipeline do
exactly the plain run's work (it then writes the same file, which is
checked). `--stages` adds a third run: the pipeline's stages called one
after another in one thread, which separates what the threads gain from
what the stages' host-side tokenisation gains. The section records sentences/s of each and their ratio. Writes
the `batch_pipeline_speedup` section of `benchmarks/results/decoding.json`.

    python benchmarks/decoding_pipeline.py --model-dir MODEL_DIR \\
        [--data-dir ../shared/data/multi30k] [--lines 10000] \\
        [--batch-size 64] [--beam-size 1] [--retries 0] [--note "..."]
"""

import argparse
import gzip
import pathlib
import sys
import tempfile
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.append(str(REPO_ROOT / "benchmarks"))  # results_file, after the packages

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)

from results_file import command_line, update_section  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "decoding.json"


def _stages_in_one_thread(model_dir, source, target, batch_size, beam_size,
                          window):
    """The pipeline's stages (host tokenisation, search on ids, host
    detokenisation) called one after another in one thread: what the
    pipeline gains by its threads alone, apart from its stages."""
    from gnmt_tf.batch_translation import TranslationStages
    from gnmt_tf.cli.translate import format_results
    from gnmt_tf.translator import SearchOptions, Translator

    global _TRANSLATOR
    if _TRANSLATOR is None:
        _TRANSLATOR = Translator.from_model_dir(model_dir)
    options = SearchOptions(beam_size=beam_size)
    stages = TranslationStages(_TRANSLATOR, options, max_retries=0)
    lines = pathlib.Path(source).read_text().splitlines()
    start = time.monotonic()
    out = []
    for first in range(0, len(lines), window):
        works = stages.prepare(lines[first:first + window], first)
        results = {w.index: stages.empty_result(w) for w in works if w.empty}
        full = sorted((w for w in works if not w.empty),
                      key=lambda w: w.length)
        for b in range(0, len(full), batch_size):
            batch = full[b:b + batch_size]
            for work, result in zip(batch, stages.compute(batch)):
                results[work.index] = stages.finish(work, result)
        for index in sorted(results):
            out += format_results([results[index]], options, index)
    pathlib.Path(target).write_text("".join(line + "\n" for line in out))
    return time.monotonic() - start


_TRANSLATOR = None


def _translate(model_dir, source, target, batch_size, beam_size, pipeline,
               retries):
    from gnmt_tf.cli.main import main as cli_main

    if pipeline == "stages":
        return _stages_in_one_thread(model_dir, source, target, batch_size,
                                     beam_size, 16 * batch_size)

    args = ["translate", "--model", str(model_dir), "--input", str(source),
            "--output", str(target), "--batch-size", str(batch_size),
            "--beam-size", str(beam_size)]
    if pipeline:
        args += ["--pipeline", "--pipeline-retries", str(retries)]
    start = time.monotonic()
    if cli_main(args) != 0:
        raise SystemExit(f"gnmt-tf {' '.join(args)} failed")
    return time.monotonic() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--data-dir",
                        default=str(REPO_ROOT.parent / "shared" / "data"
                                    / "multi30k"))
    parser.add_argument("--source", default="en")
    parser.add_argument("--lines", type=int, default=10000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--beam-size", type=int, default=1)
    parser.add_argument("--retries", type=int, default=0)
    parser.add_argument("--rounds", type=int, choices=(1, 2), default=2,
                        help="1: plain then pipeline; 2: plain, pipeline, "
                             "pipeline, plain (means reported)")
    parser.add_argument("--stages", action="store_true",
                        help="also time the pipeline's stages called in "
                             "one thread (`stages_one_thread`)")
    parser.add_argument("--note", default="")
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)

    with gzip.open(pathlib.Path(args.data_dir) / f"train.{args.source}.gz",
                   "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for _, line in zip(range(args.lines), f)]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        source, warm = tmp / "source.txt", tmp / "warm.txt"
        source.write_text("".join(line + "\n" for line in lines))
        warm.write_text("".join(line + "\n" for line in lines[:256]))
        modes = {"plain": False, "stages_one_thread": "stages",
                 "pipeline": True}
        if not args.stages:
            del modes["stages_one_thread"]
        for mode in modes.values():  # trace each search function
            _translate(args.model_dir, warm, tmp / "warm.out",
                       args.batch_size, args.beam_size, mode, args.retries)
        runs = {name: [] for name in modes}
        # ABBA order, so a load that drifts during the runs favours none.
        order = list(modes) + (list(reversed(modes)) if args.rounds == 2
                               else [])
        for name in order:
            runs[name].append(_translate(
                args.model_dir, source, tmp / f"{name}.out", args.batch_size,
                args.beam_size, modes[name], args.retries))
            print(f"{name}: {len(lines)} sentences in {runs[name][-1]:.1f} s",
                  flush=True)
        same = all((tmp / f"{name}.out").read_text()
                   == (tmp / "plain.out").read_text() for name in modes)
    seconds = {name: sum(times) / len(times) for name, times in runs.items()}
    rates = {name: round(len(lines) / s, 1) for name, s in seconds.items()}
    section = {
        "sentences": len(lines),
        "input": f"first {len(lines)} lines of train.{args.source}.gz "
                 "(Multi30k)",
        "model": args.note or str(args.model_dir),
        "search": ("greedy" if args.beam_size == 1
                   else f"beam {args.beam_size}"),
        "batch_size": args.batch_size,
        "pipeline_retries": args.retries,
        "seconds_per_run": {k: [round(v, 1) for v in times]
                            for k, times in runs.items()},
        "run_order": order,
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
        "sentences_per_s": rates,
        "speedup": round(rates["pipeline"] / rates["plain"], 3),
        **({"speedup_over_stages_one_thread": round(
            rates["pipeline"] / rates["stages_one_thread"], 3)}
           if "stages_one_thread" in rates else {}),
        "same_output": same,
        "machine": "2 CPU cores shared with other jobs (load average "
                   "15-20 during the runs)",
    }
    update_section(args.output, "batch_pipeline_speedup", section,
                   command_line("decoding_pipeline.py", argv))
    print(section)


if __name__ == "__main__":
    main()

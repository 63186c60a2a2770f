"""Benchmark: the shipped models (`gnmt_tf/pretrained/`), scored as shipped.

Three stages:

    # Average a finished run's last checkpoints into a shipped model
    # (float16 weights.npz; refuses to overwrite one unless --replace,
    # which moves the old one's scores to the card's History), then score
    # it; --exports then adds what `exports` makes.
    python benchmarks/model_zoo.py package runs/zoo/transformer \\
        --name multi30k-transformer --last 5 --exports

    # A shipped model's alignment head, float32 and int8 TFLite exports,
    # made again from its weights (`zoo_exports.py`; tens of minutes).
    python benchmarks/model_zoo.py exports multi30k-transformer

    # Score the shipped models again (minutes; no training).
    python benchmarks/model_zoo.py --evaluate-only

Scores are cased, detokenised sacreBLEU and chrF (beam 4, GNMT length
penalty α 0.6 unless given) on Multi30k val, test_2016_flickr and
test_2017_flickr (no Czech) for every direction the model was trained on,
and on the WMT22 general test (out of domain) where it has the direction.
WMT22 segments longer than the model's source limit are left out and
counted. Each model's scores go to its `scores.json` (with `package`) and to
`benchmarks/results/model_zoo.json` (keys read by the release checks; see
issue 14), with the commands that produced them.
"""

import argparse
import contextlib
import dataclasses
import json
import os
import pathlib
import platform
import shlex
import shutil
import sys
import tempfile
import time

# The packages before benchmarks/, whose alignment.py and pipeline.py
# would shadow them (this script runs with benchmarks/ as sys.path[0]).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import gnmt_tf  # noqa: F401
from gnmt_tf.flags.arg_types import (beam_size, non_negative_float,
                                     positive_int)
import zoo_cards
import zoo_exports

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE / "results" / "model_zoo.json"
SHARED = HERE.parent.parent / "shared" / "data"
SPLITS = zoo_cards.SPLITS
# WMT22 general test files per direction: (source, reference) or a TSV.
WMT22 = {"en-de": ("generaltest2022.en-de.src.en",
                   "generaltest2022.en-de.ref.A.de"),
         "de-en": ("generaltest2022.de-en.src.de",
                   "generaltest2022.de-en.ref.A.en"),
         "de-fr": "generaltest2022.de-fr.tsv",
         "fr-de": "generaltest2022.fr-de.tsv"}


def model_directions(model):
    """`[(src, tgt)]` a model was trained on (or fixed to)."""
    if model.trained_tasks:
        pairs = [(t.get("src_lang"), t.get("tgt_lang"))
                 for t in model.trained_tasks]
        if all(src and tgt for src, tgt in pairs):
            return list(dict.fromkeys(pairs))
    fixed = model.fixed_task or {}
    return [(fixed["src_lang"], fixed["tgt_lang"])]


def task_arguments(model, src, tgt):
    """Keyword task arguments for a direction (none for a fixed model)."""
    names = {t.name for t in model.task_inputs()}
    task = {k: v for k, v in (("src_lang", src), ("tgt_lang", tgt))
            if k in names}
    if "tags" in names:
        task["tags"] = model.default_task.get("tags", ())
    return task


def read_wmt22(wmt_dir, direction):
    """`(sources, references)` of WMT22 for a direction, or None."""
    files = WMT22.get(direction)
    if files is None or not pathlib.Path(wmt_dir).is_dir():
        return None
    if isinstance(files, tuple):
        src, ref = (pathlib.Path(wmt_dir, f).read_text(encoding="utf-8")
                    .splitlines() for f in files)
        return src, ref
    rows = [line.split("\t") for line in pathlib.Path(wmt_dir, files)
            .read_text(encoding="utf-8").splitlines()]
    rows = [r for r in rows if len(r) == 5 and r[3].strip()]
    return [r[3] for r in rows], [r[4] for r in rows]


def score(translator, sources, references, options, task, batch_size):
    from gnmt_tf.evaluation import score_corpus

    hypotheses = translator.translate(sources, options, batch_size, **task)
    scores = score_corpus(hypotheses, references)
    return {"bleu": round(scores.bleu, 2), "chrf": round(scores.chrf, 2),
            "signature": scores.bleu_signature, "sentences": len(sources)}


def evaluate(model_dir, data_dir, wmt_dir, options, batch_size=64,
             limit=None, log=sys.stderr, splits=SPLITS, directions=None):
    """Scores one model on every split and direction it has (or on the
    given `splits` and `directions`; `wmt_dir` None skips WMT22)."""
    from gnmt_tf.data import corpus
    from gnmt_tf.progress import progress
    from gnmt_tf.translator import Translator

    translator = Translator.from_model_dir(model_dir)
    model = translator.model
    result = {"sacrebleu": {}, "chrf": {}, "signatures": {}, "wmt22": {}}
    pairs = [(src, tgt) for src, tgt in model_directions(model)
             if directions is None or f"{src}-{tgt}" in directions]
    for src, tgt in progress(pairs, desc="directions"):
        direction, task = f"{src}-{tgt}", task_arguments(model, src, tgt)
        for split in splits:
            try:
                sources = corpus.read_lines(
                    corpus.split_path(data_dir, split, src))[:limit]
                references = corpus.read_lines(
                    corpus.split_path(data_dir, split, tgt))[:limit]
            except FileNotFoundError:
                continue  # test_2017_flickr has no Czech
            start = time.time()
            row = score(translator, sources, references, options, task,
                        batch_size)
            result["sacrebleu"].setdefault(direction, {})[split] = row["bleu"]
            result["chrf"].setdefault(direction, {})[split] = row["chrf"]
            result["signatures"]["bleu"] = row["signature"]
            print(f"{model_dir} {direction} {split}: BLEU {row['bleu']} "
                  f"chrF {row['chrf']} ({time.time() - start:.0f} s)",
                  file=log, flush=True)
        wmt = read_wmt22(wmt_dir, direction) if wmt_dir else None
        if wmt is not None:
            lengths = translator.subwords.encode(wmt[0])
            keep = [i for i, ids in enumerate(lengths)
                    if 0 < len(ids) <= translator.max_source_length][:limit]
            row = score(translator, [wmt[0][i] for i in keep],
                        [wmt[1][i] for i in keep], options, task, batch_size)
            row["segments_total"] = len(wmt[0])
            result["wmt22"][direction] = row
            print(f"{model_dir} {direction} wmt22: BLEU {row['bleu']} "
                  f"({len(keep)} of {len(wmt[0])} segments)", file=log,
                  flush=True)
    return result


def cpu_name():
    """The CPU model (platform.processor() is empty on Linux)."""
    from cpu_flags import cpu_model  # this script's folder

    return cpu_model() or platform.machine()


def update_results(name, scores, command, path=RESULTS):
    """Merges one model's scores into `model_zoo.json`, atomically."""
    from gnmt_tf.io_utils import write_text_atomic

    results = json.loads(path.read_text()) if path.exists() else {}
    results.setdefault("models", {})[name] = scores
    results.setdefault("commands", {})[name] = command
    results["machine"] = {"cpu": cpu_name(), "cores": os.cpu_count(),
                          "python": platform.python_version()}
    write_text_atomic(path, json.dumps(results, indent=2) + "\n")


def hardware():
    """The machine line of a model card."""
    return f"{os.cpu_count()} CPU cores ({cpu_name()})"


@contextlib.contextmanager
def replacing(target, replace):
    """Moves a shipped model at `target` aside while its replacement is
    made (`replace`; else it stays and the averaging refuses to overwrite
    it), yielding its `(scores, card text)` or None; puts it back if the
    replacement fails, deletes it once it succeeds."""
    if not (replace and target.exists()):
        yield None
        return
    aside = pathlib.Path(tempfile.mkdtemp(prefix=".replaced-",
                                          dir=target.parent))
    old = aside / target.name
    os.rename(target, old)
    try:
        card = old / "MODEL_CARD.md"
        yield (json.loads((old / "scores.json").read_text()),
               card.read_text() if card.is_file() else "")
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        os.rename(old, target)
        raise
    finally:
        shutil.rmtree(aside, ignore_errors=True)


def package(args, options, command, exports=None):
    """Averages a run into `gnmt_tf/pretrained/<name>` and scores it; with
    `args.replace`, in place of the shipped model of that name, whose
    scores go to the new card's History; then, given `exports` (a
    `zoo_exports.ExportSettings`), makes the exports. The old model comes
    back if any of it fails."""
    from gnmt_tf import pretrained
    from gnmt_tf.io_utils import write_text_atomic
    from gnmt_tf.model_dir import read_config
    from gnmt_tf.training.averaging import average_checkpoints
    from gnmt_tf.training.init_from import training_history

    target = pretrained.PRETRAINED_DIR / args.name
    if target.exists() and not args.replace:
        raise FileExistsError(f"{args.name} is shipped already; --replace "
                              f"replaces it")
    with replacing(target, args.replace) as previous:
        average_checkpoints(args.run_dir, target, args.last,
                            weights_only=True)
        # All the training the weights had, a run started with
        # --init-from included (`gnmt_tf.training.init_from`).
        history = training_history(pathlib.Path(args.run_dir),
                                   read_config(args.run_dir))
        scores = evaluate(target, args.data_dir, args.wmt22_dir, options,
                          args.batch_size)
        scores["train_hours"] = round(history["train_seconds"] / 3600, 2)
        scores["train_steps"] = history["steps"]
        scores["train_target_tokens"] = history["target_tokens"]
        scores["size_mb"] = pretrained.size_mb(target)
        scores["search"] = dataclasses.asdict(options)
        scores["card"] = {"description": args.description or "",
                          "train_command": args.train_command,
                          "package_command": command, "last": args.last}
        write_text_atomic(target / pretrained.SCORES_FILE,
                          json.dumps(scores, indent=2) + "\n")
        zoo_cards.write_card(
            target, args.name, hardware(),
            history=zoo_cards.replaced_version(*previous) if previous
            else "")
        if exports is not None:
            ship_exports(target, args.name, exports)
    return {args.name: scores}


def ship_exports(model_dir, name, settings):
    """`zoo_exports.ship_exports`, then the card written again with the
    new sections (a card `package` did not write is left as it is)."""
    zoo_exports.ship_exports(model_dir, settings)
    scores = json.loads((model_dir / "scores.json").read_text())
    if "card" in scores:
        zoo_cards.write_card(model_dir, name, hardware())
    else:
        print(f"note: {model_dir}/MODEL_CARD.md was not written by "
              f"`package`; left as it is", file=sys.stderr)


def compare_with_shipped(name, scores, log=sys.stdout):
    """Prints a partial evaluation next to the shipped `scores.json`."""
    from gnmt_tf import pretrained

    shipped = pretrained.describe(name)["scores"].get("sacrebleu", {})
    for direction, splits in scores["sacrebleu"].items():
        for split, bleu in splits.items():
            was = shipped.get(direction, {}).get(split)
            print(f"{name} {direction} {split}: {bleu:.2f} (shipped "
                  f"scores.json: {was})", file=log)


def export_settings(args, parser):
    """The `zoo_exports.ExportSettings` of the flags (a bad value is a
    usage error)."""
    try:
        return zoo_exports.settings_from_args(args)
    except ValueError as e:
        parser.error(str(e))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", nargs="?", choices=["package", "exports"])
    parser.add_argument("run_dir", nargs="?",
                        help="package: the run; exports: the shipped model "
                             "(a name or a model directory)")
    parser.add_argument("--name", help="package: the shipped model's name")
    parser.add_argument("--last", type=positive_int, default=5,
                        help="package: checkpoints to average")
    parser.add_argument("--train-command",
                        help="package: the command that trained the run "
                             "(for the model card)")
    parser.add_argument("--description", help="package: the card's summary")
    parser.add_argument("--replace", action="store_true",
                        help="package: replace the shipped model of that "
                             "name (its scores go to the card's History)")
    parser.add_argument("--exports", action="store_true",
                        help="package: then make the exports (as the "
                             "exports stage)")
    zoo_exports.add_arguments(parser)
    parser.add_argument("--evaluate-only", action="store_true",
                        help="score the shipped models as they are")
    parser.add_argument("--models", help="comma-separated names (default: "
                        "every shipped model)")
    parser.add_argument("--data-dir", default=str(SHARED / "multi30k"))
    parser.add_argument("--wmt22-dir", default=str(SHARED / "wmt22"))
    parser.add_argument("--beam-size", type=beam_size,
                        help="default: 4 (package), the shipped model's "
                             "(--evaluate-only)")
    parser.add_argument("--length-penalty", type=non_negative_float,
                        help="α; default: 0.6 (package), the shipped "
                             "model's (--evaluate-only)")
    parser.add_argument("--batch-size", type=positive_int, default=64)
    parser.add_argument("--limit", type=positive_int,
                        help="first N sentences per split (quick checks; "
                             "not written to the results file)")
    parser.add_argument("--splits", default=",".join(SPLITS),
                        help="--evaluate-only: comma-separated splits (a "
                             "quick reproduction: test_2016_flickr); not "
                             "written to the results file unless all")
    parser.add_argument("--directions",
                        help="--evaluate-only: comma-separated directions "
                             "(default: all the model has)")
    parser.add_argument("--skip-wmt22", action="store_true",
                        help="--evaluate-only: leave WMT22 out")
    args = parser.parse_args(argv)
    from gnmt_tf import pretrained
    from gnmt_tf.translator import SearchOptions

    def search_options(shipped=None):
        """The flags' search settings, else the shipped model's, else
        beam 4 and α 0.6."""
        search = (shipped or {}).get("search", {})
        return SearchOptions(
            beam_size=args.beam_size or search.get("beam_size", 4),
            length_penalty=(args.length_penalty
                            if args.length_penalty is not None
                            else search.get("length_penalty", 0.6)))

    options = search_options()
    command = "python benchmarks/model_zoo.py " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    partial = False
    if args.stage == "package":
        if not (args.run_dir and args.name):
            parser.error("package needs RUN_DIR and --name")
        all_scores = package(
            args, options, command,
            export_settings(args, parser) if args.exports else None)
    elif args.stage == "exports":
        if not args.run_dir:
            parser.error("exports needs the model's name or directory")
        try:
            model_dir = pretrained.locate(args.run_dir)
        except (FileNotFoundError, ValueError) as e:
            parser.error(str(e))
        ship_exports(model_dir, model_dir.name,
                     export_settings(args, parser))
        return 0
    elif args.evaluate_only:
        names = args.models.split(",") if args.models else pretrained.names()
        all_scores = {}
        splits = tuple(args.splits.split(","))
        unknown = set(splits) - set(SPLITS)
        if unknown:
            parser.error(f"unknown splits {sorted(unknown)}; known: "
                         f"{', '.join(SPLITS)}")
        partial = (args.limit is not None or set(splits) != set(SPLITS)
                   or args.directions or args.skip_wmt22)
        for name in names:
            shipped = pretrained.describe(name)
            scores = evaluate(
                name, args.data_dir,
                None if args.skip_wmt22 else args.wmt22_dir,
                search_options(shipped["scores"]),
                args.batch_size, args.limit, splits=splits,
                directions=args.directions.split(",") if args.directions
                else None)
            for key in ("train_hours", "train_steps", "search"):
                if key in shipped["scores"]:
                    scores[key] = shipped["scores"][key]
            scores["size_mb"] = shipped["size_mb"]
            all_scores[name] = scores
    else:
        parser.error("give --evaluate-only or the package stage")
    for name, scores in all_scores.items():
        print(f"\n{name} (BLEU / chrF)\n{zoo_cards.markdown_table(scores)}")
        if partial:
            compare_with_shipped(name, scores)
        else:
            update_results(name, scores, command)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, ValueError) as e:  # a missing run, a name taken, ...
        sys.exit(f"model_zoo.py: error: {e}")

"""`gnmt-tf quickstart`: a shipped model translating, then scored.

By default it loads the shipped `multi30k-transformer` (inside the package:
no network), translates a few sentences in three directions (en->de, en->fr,
de->en) and a small HTML page through the document pipeline (markup kept),
then scores the model with sacreBLEU on Multi30k test_2016_flickr en->de
(`--max-lines N`: the first N sentences only).

`--train` runs the training demo instead: a SentencePiece vocabulary and a
small GNMT trained on Multi30k en->de for `--minutes`, then beam search and
sacreBLEU on test_2016_flickr.

Multi30k comes from `--data-dir`, `$GNMT_TF_DATA` or the download cache; when
none is given and the cache is empty it is downloaded there first (SHA-256
verified; `--no-download` refuses instead).
"""

import dataclasses
import os
import sys
import time

from gnmt_tf.flags.arg_types import (beam_size, non_negative_int,
                                     positive_float, positive_int)

DEFAULT_MODEL = "multi30k-transformer"
# The document pipeline, loaded by name: `gnmt_tf` imports no gateway module
# itself (as `gnmt-tf translate --format html`).
SENTENCES = {
    "en": ["A black dog is running through the snow.",
           "Two children are playing football in a park."],
    "de": ["Eine Frau fährt mit dem Fahrrad über eine Brücke."],
}
DIRECTIONS = (("en", "de"), ("en", "fr"), ("de", "en"))
PAGE = ("<h1>At the beach</h1>\n"
        "<p>A <b>brown dog</b> runs along the beach. "
        "A man is throwing a <i>red ball</i>.</p>\n")
SCORE_SPLIT = "test_2016_flickr"
SCORE_DIRECTION = ("en", "de")


def register(subparsers):
    parser = subparsers.add_parser(
        "quickstart",
        help="translate with a shipped model and score it on Multi30k "
             "(--train: train a small GNMT instead)")
    parser.add_argument("--model", default=DEFAULT_MODEL,
                        help="a shipped model's name or a model directory "
                             f"(default {DEFAULT_MODEL})")
    parser.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"))
    parser.add_argument("--max-lines", type=positive_int, default=None,
                        help="score the first N sentences of "
                             f"{SCORE_SPLIT} only (default: all)")
    parser.add_argument("--beam-size", type=beam_size, default=None,
                        help="beam size (default: the shipped model's "
                             "scoring search, 4; with --train 5)")
    parser.add_argument(
        "--no-download", dest="download", action="store_false",
        help="fail instead of downloading Multi30k when no data directory "
             "is given and the download cache is empty")
    train = parser.add_argument_group("training demo (--train)")
    train.add_argument("--train", action="store_true",
                       help="train a small GNMT on Multi30k en->de for "
                            "--minutes, then translate and score it")
    train.add_argument("--model-dir", default="runs/quickstart")
    train.add_argument("--minutes", type=positive_float, default=5.0,
                       help="training time budget (longer trains better)")
    train.add_argument("--preset", default="gnmt_small")
    train.add_argument("--show", type=non_negative_int, default=5,
                       help="translations to print")
    parser.set_defaults(func=run)


def quickstart_data(data_dir=None, download=True, progress=sys.stderr):
    """The Multi30k directory to use: `data_dir`, `$GNMT_TF_DATA` or the
    download cache (see `gnmt_tf.data.corpus.resolve_data_dir`); when none
    is given and the cache is incomplete, downloads Multi30k into the cache
    first (if `download`).

    Raises:
      UsageError: the download failed.
      FileNotFoundError: a given directory is missing, or no data and
        `download` is False.
    """
    from gnmt_tf.errors import UsageError
    from gnmt_tf.data import corpus
    from gnmt_tf.data import download as downloads

    if (data_dir or os.environ.get(corpus.ENV_DATA_DIR) or not download
            or downloads.cached_multi30k() is not None):
        return corpus.resolve_data_dir(data_dir)
    cache = downloads.multi30k_cache()
    if progress:
        print(f"      downloading Multi30k into {cache}", file=progress,
              flush=True)
    try:
        return downloads.download_multi30k(progress=progress)
    except downloads.DownloadError as e:
        raise UsageError(f"{e} (pass --data-dir or set "
                         f"{corpus.ENV_DATA_DIR} to use a local copy)") \
            from None


def direction_task(model, src_lang, tgt_lang):
    """The task arguments that make `model` translate `src_lang` ->
    `tgt_lang` (with its default scene tags), or None when it cannot."""
    names = [t.name for t in model.task_inputs()]
    if not names:
        fixed = model.fixed_task or {}
        ok = (fixed.get("src_lang"), fixed.get("tgt_lang")) == (src_lang,
                                                                tgt_lang)
        return {} if ok else None
    trained = model.trained_tasks
    if trained and {"src_lang": src_lang, "tgt_lang": tgt_lang} not in [
            {k: t.get(k) for k in ("src_lang", "tgt_lang")} for t in trained]:
        return None
    task = {"src_lang": src_lang, "tgt_lang": tgt_lang,
            "tags": list(model.default_task.get("tags", ()))}
    return {k: v for k, v in task.items() if k in names}


def search_options(model_name, beam_size=None):
    """The search the shipped model was scored with (its `scores.json`),
    else `SearchOptions()`'s; `beam_size` overrides the beam."""
    from gnmt_tf import pretrained
    from gnmt_tf.translation import SearchOptions

    search = {}
    if str(model_name) in pretrained.names():
        search = pretrained.describe(model_name)["scores"].get("search", {})
    fields = {f.name for f in dataclasses.fields(SearchOptions)}
    kwargs = {k: v for k, v in search.items() if k in fields}
    if beam_size is not None:
        kwargs["beam_size"] = beam_size
    return SearchOptions(**kwargs)


def card_bleu(model_name):
    """The shipped model's own test_2016_flickr en->de BLEU, or None."""
    from gnmt_tf import pretrained

    if str(model_name) not in pretrained.names():
        return None
    scores = pretrained.describe(model_name)["scores"].get("sacrebleu", {})
    return scores.get("-".join(SCORE_DIRECTION), {}).get(SCORE_SPLIT)


def load(model_name, options, out=sys.stdout):
    """`(translator, pipeline)`: the model behind the document pipeline
    (with its alignment head, when it has one), or without it and
    `pipeline` None when the pipeline's packages are missing (the
    `gateway` extra)."""
    from gnmt_tf.translator import Translator

    try:
        from gnmt_tf.gateway.pipelines import Pipeline

        pipeline = Pipeline.from_model_dir(model_name, options)
        return pipeline.backend.translator, pipeline
    except ModuleNotFoundError as e:
        if "gnmt-tf[" not in str(e):
            raise
        print(f"      (no document pipeline: {e})", file=out, flush=True)
        return Translator.from_model_dir(model_name), None


def run(args):
    if args.train:
        return run_training(args)
    out = sys.stdout
    start = time.perf_counter()
    options = search_options(args.model, args.beam_size)
    print(f"[1/4] loading {args.model}", flush=True)
    translator, pipeline = load(args.model, options, out)
    model = translator.model
    print(f"      loaded in {time.perf_counter() - start:.0f} s", flush=True)

    print(f"[2/4] translating sentences (beam {options.beam_size})",
          flush=True)
    shown = 0
    for src_lang, tgt_lang in DIRECTIONS:
        task = direction_task(model, src_lang, tgt_lang)
        if task is None:
            continue
        sources = SENTENCES[src_lang]
        t0 = time.perf_counter()
        hyps = translator.translate(sources, options, **task)
        seconds = time.perf_counter() - t0
        print(f"  {src_lang}->{tgt_lang}")
        for source, hyp in zip(sources, hyps):
            print(f"    {source}\n    => {hyp}")
        print(f"    ({len(sources)} sentences in {seconds:.1f} s)")
        shown += 1
    if not shown:
        print("  (the model translates none of "
              + ", ".join(f"{s}->{t}" for s, t in DIRECTIONS) + ")")
    sys.stdout.flush()

    src_lang, tgt_lang = SCORE_DIRECTION
    task = direction_task(model, src_lang, tgt_lang)
    print(f"[3/4] translating an HTML page {src_lang}->{tgt_lang} through "
          "the document pipeline (markup kept)", flush=True)
    if pipeline is None:
        print("      skipped: pip install 'gnmt-tf[gateway]' for the "
              "document pipeline")
    elif task is not None:
        t0 = time.perf_counter()
        page = pipeline.translate_document(PAGE, src_lang, tgt_lang,
                                           task.get("tags", ()),
                                           format="html")
        seconds = time.perf_counter() - t0
        print("".join(f"    {line}\n" for line in PAGE.splitlines())
              + "    =>\n"
              + "".join(f"    {line}\n" for line in page.splitlines())
              + f"    ({seconds:.1f} s)", flush=True)

    if task is None:
        raise ValueError(f"{args.model} does not translate "
                         f"{src_lang}->{tgt_lang}, which is scored")
    return score(args, translator, task, options)


def score(args, translator, task, options):
    """Step 4: sacreBLEU on the scored split."""
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import score_corpus

    src_lang, tgt_lang = SCORE_DIRECTION
    data_dir = quickstart_data(args.data_dir, args.download)
    src, ref = corpus.read_parallel(data_dir, SCORE_SPLIT, src_lang, tgt_lang)
    total = len(src)
    if args.max_lines:
        src, ref = src[:args.max_lines], ref[:args.max_lines]
    print(f"[4/4] sacreBLEU on {SCORE_SPLIT} {src_lang}->{tgt_lang}: "
          f"{len(src)} of {total} sentences from {data_dir} "
          f"(beam {options.beam_size}, alpha {options.length_penalty})",
          flush=True)
    t0 = time.perf_counter()
    hyps = translator.translate(src, options, **task)
    seconds = time.perf_counter() - t0
    print(score_corpus(hyps, ref).format())
    print(f"      {len(src) / seconds:.1f} sentences/s")
    expected = card_bleu(args.model)
    if expected is not None:
        subset = "" if len(src) == total else \
            " (on all of them; a subset scores differently)"
        print(f"      the model card says BLEU {expected:.2f}{subset}")
    print("\nNext: gnmt-tf translate --model multi30k-transformer "
          "--src-lang en --tgt-lang fr --tags caption < input.txt\n"
          "      gnmt-tf models; gnmt-tf quickstart --train (see docs/cli.md)")
    return 0


def run_training(args):
    """The training demo: a small GNMT on Multi30k en->de."""
    from gnmt_tf.data import corpus
    from gnmt_tf.evaluation import score_corpus
    from gnmt_tf.model_dir import load_model
    from gnmt_tf.models.gnmt.presets import get_preset
    from gnmt_tf.config import apply_overrides
    from gnmt_tf.models.gnmt.training import train_gnmt
    from gnmt_tf.translator import SearchOptions, Translator

    beam_size = args.beam_size or 5
    data_dir = quickstart_data(args.data_dir, args.download)
    model_config, train_config = get_preset(args.preset)
    train_config = apply_overrides(train_config, [f"max_minutes={args.minutes}"])
    print(f"[1/3] training {args.preset} en->de for up to {args.minutes} min "
          f"in {args.model_dir}", flush=True)
    result = train_gnmt(args.model_dir, data_dir, "en", "de", model_config,
                        train_config)
    print(f"      step {result.steps}, {result.target_tokens_per_s:.0f} target tokens/s",
          flush=True)

    print(f"[2/3] translating {SCORE_SPLIT} (beam {beam_size})", flush=True)
    src, ref = corpus.read_parallel(data_dir, SCORE_SPLIT, "en", "de")
    if args.max_lines:
        src, ref = src[:args.max_lines], ref[:args.max_lines]
    model, subwords, _ = load_model(args.model_dir)
    hyps = Translator(model, subwords).translate(
        src, SearchOptions(beam_size=beam_size))

    print(f"[3/3] sacreBLEU on {SCORE_SPLIT}")
    print(score_corpus(hyps, ref).format())
    for s, h, r in list(zip(src, hyps, ref))[:args.show]:
        print(f"\n  SRC {s}\n  HYP {h}\n  REF {r}")
    return 0

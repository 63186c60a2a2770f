"""The backends `gnmt-tf translate` dispatches to, each made into a `Job`
that `gnmt_tf.cli.translate.run` streams the input through:

- `server_job`: ``--server`` (a `gnmt_tf.serving.client.TranslationClient`);
- `host_job`: ``--tflite`` / ``--onnx`` (a
  `gnmt_tf.host_translator.HostTranslator`);
- `model_job`: ``--model`` (a `gnmt_tf.translator.Translator`, ensembles and
  predictors included, with every host-side search, ``--rescore`` and
  ``--pipeline``).

Each answers the one translator protocol (`gnmt_tf.translation`); what
differs is how a backend is opened and what it reports per line.
"""

import dataclasses
import sys
from typing import Callable, Optional

from gnmt_tf.cli import sentence_lines, streaming, task_flags
from gnmt_tf.flags.predictors import predictor_settings
from gnmt_tf.flags.search import given_search_flags, search_options


def refuse_host_decoding(args, where):
    """Raises for the host-side search flags where only an export's own
    search runs (`where`: e.g. "--server")."""
    refused = [f"--{name.replace('_', '-')}" for name in
               ("constraints", "glossary_constraints", "sepbeam_model")
               if getattr(args, name, None)]
    decoder = getattr(args, "decoder", None)
    if decoder not in (None, "beam", "greedy"):
        refused.insert(0, f"--decoder {decoder}")
    if refused:
        raise ValueError(f"{', '.join(refused)} cannot be used with {where}: "
                         "those searches run on the host over a model "
                         "directory's steps (translate with --model)")


def served_search_options(args):
    """The `search_options` of `gnmt_tf.serving.client.TranslationClient` for the
    search flags given with `--server`, or None when none are given (the
    export's `serving_default` then searches with its own options).

    An export's `translate_with_options` takes the beam size, alpha and beta
    (defaults for those not given); it returns one translation per sentence
    and keeps the export's pruning and early stopping, so `--n-best` > 1,
    `--beam-width` and `--early-stopping` are refused.

    Raises:
      ValueError: a flag that a server cannot honour, or a bad value.
    """
    given = given_search_flags(args)
    if not given:
        return None
    options = search_options(args)  # validates the values
    refused = [f"--{dest.replace('_', '-')}" for dest in
               ("beam_width", "early_stopping") if dest in given]
    if options.decoder not in ("beam", "greedy"):
        refused.append(f"--decoder {options.decoder}")
    if options.num_hypotheses > 1:
        refused.insert(0, "--n-best > 1")
    if refused:
        raise ValueError(
            f"{', '.join(refused)} cannot be used with --server: the "
            "export's translate_with_options signature takes only "
            "--beam-size, --alpha and --beta and returns one translation "
            "per sentence (export with these options instead, or translate "
            "with --model)")
    from gnmt_tf.serving.search_options import check_search_options

    served = {"beam_size": 1 if options.decoder == "greedy"
              else options.beam_size,
              "length_penalty": options.length_penalty,
              "coverage_penalty": options.coverage_penalty}
    check_search_options(served)  # what the server checks, before a request
    return served


# Flags that only the in-process search honours: with any of them,
# `--model` never takes its cached TFLite export.
_IN_PROCESS_FLAGS = ("shortlist", "replace_unk", "plot_attention", "pipeline",
                     "rescore", "constraints", "glossary_constraints",
                     "sepbeam_model")


def engine(args):
    """The engine `--model` translates with (`gnmt_tf.search_engine`):
    `--engine`, else ``xla`` for `--xla`, else `$GNMT_TF_ENGINE` or
    ``auto``.

    Raises:
      ValueError: `--xla` with another `--engine`, or a bad variable.
    """
    from gnmt_tf import search_engine

    chosen = getattr(args, "engine", None)
    if getattr(args, "xla", False):
        if chosen not in (None, "xla"):
            raise ValueError(f"--xla is --engine xla: not with --engine "
                             f"{chosen}")
        return "xla"
    return chosen or search_engine.default_engine()


def host_path_refusal(args):
    """Why `--model` cannot translate through its cached float32 TFLite
    export (the flag in the way, for messages), or None when it can: one
    model, no predictors, float32, the beam or greedy decoder with GNMT's
    early stopping, and none of `_IN_PROCESS_FLAGS`."""
    # The flags as given: `predictor_settings` would parse them with
    # TensorFlow, which this path exists to leave unloaded.
    if len(getattr(args, "model", None) or []) != 1:
        return "several --model"
    for name in ("predictors", "weights", "lm", "ensemble_mode",
                 "predictor_config"):
        if getattr(args, name, None):
            return f"--{name.replace('_', '-')}"
    if getattr(args, "precision", "float32") != "float32":
        return "--precision"
    for name in _IN_PROCESS_FLAGS:
        if getattr(args, name, None):
            return f"--{name.replace('_', '-')}"
    options = search_options(args)
    if options.decoder not in ("beam", "greedy"):
        return f"--decoder {options.decoder}"
    if options.early_stopping != "gnmt":
        return f"--early-stopping {options.early_stopping}"
    return None


def load_translator(args):
    """`(Translator, name)` of the model flags: a plain model directory,
    or a `PredictorModel` when several models or any predictor flag are
    given. `name` (the first model) is for messages.

    Raises:
      ValueError: no model, or a bad predictor combination.
    """
    from gnmt_tf.translator import Translator

    models, predictors, weights, lm, mode = predictor_settings(args)
    if not models:
        raise ValueError("give --model DIR (or --server HOST:PORT, "
                         "--tflite FILE or --onnx DIR)")
    chosen = engine(args)
    xla = chosen == "xla"
    if (len(models) == 1 and predictors is None and weights is None
            and lm is None and mode == "loglinear"):
        return Translator.from_model_dir(
            models[0], precision=getattr(args, "precision", "float32"),
            engine=chosen), models[0]
    for flag, given in (("--precision", getattr(args, "precision", "float32")
                         != "float32"), ("--xla", xla)):
        if given:
            raise ValueError(f"{flag} needs one --model and no predictor "
                             "flags")
    from gnmt_tf.predictor_model import load_predictors

    model, subwords = load_predictors(models, predictors, weights, lm, mode)
    return Translator(model, subwords), models[0]


def vocabulary_tools(args, subwords):
    """`(shortlist, unk_replacer)` for the --shortlist / --replace-unk flags
    (None for a flag not given).

    Raises:
      ValueError: a bad table file.
      OSError: an unreadable one.
    """
    from gnmt_tf.text.lexical_table import read_lexical_table

    shortlist = replacer = None
    tables = {}

    def table(path):
        if path not in tables:
            tables[path] = read_lexical_table(path)
        return tables[path]

    if getattr(args, "shortlist", None):
        from gnmt_tf.decoding.shortlist import Shortlist

        shortlist = Shortlist.from_table(
            table(args.shortlist), subwords, top_k=args.shortlist_top_k,
            frequent=args.shortlist_frequent)
    if getattr(args, "replace_unk", None):
        from gnmt_tf.unk_replacement import UnkReplacer

        replacer = UnkReplacer(subwords, None if args.replace_unk == "copy"
                               else table(args.replace_unk))
    return shortlist, replacer


def format_results(results, options, first=0):
    """The best translation per input, or `i ||| text ||| score` n-best
    lines when `options.num_hypotheses > 1` (`i` counts from `first`)."""
    if options.num_hypotheses == 1:
        return [hyps[0].text for hyps in results]
    return [f"{i} ||| {h.text} ||| {h.score:.4f}"
            for i, hyps in enumerate(results, first) for h in hyps]


def served_task_inputs(args):
    """`src_lang` / `tgt_lang` / `tags` request inputs for a task-space
    export, from the flags given (none for a GNMT export)."""
    inputs = {key: getattr(args, key, None)
              for key in ("src_lang", "tgt_lang", "tags")}
    if not any(inputs.values()):
        return None
    if not (inputs["src_lang"] and inputs["tgt_lang"]):
        raise ValueError("a task-space server needs both --src-lang and "
                         "--tgt-lang")
    inputs["tags"] = inputs["tags"] or ""
    return inputs


def _one_line(message):
    """A server error on one line: the code and TensorFlow's "assertion
    failed: ..." line when there is one, else all of it, whitespace
    collapsed."""
    code = message.split(":", 1)[0]
    for line in message.splitlines():
        if "assertion failed:" in line:
            return f"{code}: {line.strip()}"
    return " ".join(message.split())


def _served_lines(sentences, results, first):
    """Output lines of a chunk of `TranslationResult`s: failed lines come
    out empty and are listed on stderr (status 1)."""
    del sentences
    lines, status = [], 0
    for number, result in enumerate(results, first + 1):
        lines.append(result.translation or "")
        if result.error:
            print(f"line {number}: {result.error}", file=sys.stderr)
            status = 1
    return lines, status


def server_job(args):
    """`--server`: a `TranslationClient` over gRPC. Failed lines come out
    empty and are listed on stderr (exit code 1), the others are kept.
    Search flags go to the export's `translate_with_options` (see
    `served_search_options`)."""
    from gnmt_tf.serving.client import TranslationClient, TranslationError

    refuse_host_decoding(args, "--server")
    options = served_search_options(args)
    client = TranslationClient(args.server, args.model_name,
                               task_inputs=served_task_inputs(args),
                               search_options=options)
    if client.search_options:
        try:  # one probe request: refused options fail once
            client.check_request_inputs()
        except TranslationError as e:
            client.close()
            flags = (f"--beam-size {options['beam_size']} --alpha "
                     f"{options['length_penalty']} --beta "
                     f"{options['coverage_penalty']}")
            raise ValueError(f"{args.server} refused {flags}: "
                             f"{_one_line(str(e))}") from None
    return Job(lines=sentence_lines.from_args(
                    args, task=served_task_inputs(args)),
                translate_chunk=client.translate_detailed,
                format_chunk=_served_lines,
                merge=sentence_lines.merge_results, close=client.close)


def _rescore(args, translator, options, task):
    """`--rescore`: the n-best file re-ranked by forced decoding."""
    from gnmt_tf.data.corpus import read_lines
    from gnmt_tf.io_utils import write_text_atomic
    from gnmt_tf.rescoring import parse_nbest, rescore_nbest

    with open(args.rescore, encoding="utf-8") as f:
        entries = parse_nbest(f)
    sources = list(read_lines(args.input))
    given = given_search_flags(args)
    rescored = rescore_nbest(translator, sources, entries,
                             given.get("alpha", 0.0), given.get("beta", 0.0),
                             args.batch_size, **task)
    text = "".join(f"{e.index} ||| {e.text} ||| {e.score:.4f}\n"
                   for e in rescored)
    if args.output:
        write_text_atomic(args.output, text)
    else:
        sys.stdout.write(text)
    return 0


def host_job(args, flag, path=None):
    """`--tflite FILE` / `--onnx DIR` (`flag`): a
    `gnmt_tf.host_translator.HostTranslator` over the export (at `path`
    instead, for `--model`'s cached export)."""
    refuse_host_decoding(args, f"--{flag}")
    options = search_options(args)
    if options.early_stopping != "gnmt":
        raise ValueError(f"--{flag} searches with --early-stopping gnmt only")
    from gnmt_tf.host_translator import HostTranslator

    path = path or getattr(args, flag)
    # No automatic choice here: the 1-thread gain at batch 1 was measured
    # for TensorFlow's search; TFLite's host search was faster with 2
    # (`benchmarks/results/task_space_decode_speed.json`).
    threads = getattr(args, "threads", None)
    translator = (HostTranslator.from_onnx(path, num_threads=threads)
                  if flag == "onnx"
                  else HostTranslator.from_tflite(
                      path, num_threads=threads,
                      workers=getattr(args, "workers", None)))
    task = task_flags.task_arguments(args, translator, path)
    translator.task_arrays(**task)  # a bad task fails before reading input
    return Job(
        lines=sentence_lines.from_args(args, translator, task),
        translate_chunk=lambda sentences: translator.translate_nbest(
            sentences, options, **task),
        format_chunk=lambda sentences, results, first: (
            format_results(results, options, first), 0),
        vocabulary=translator.vocabulary_path)


@dataclasses.dataclass
class Job:
    """What `run` streams for a backend: input lines (split into sentences
    by `lines`, a `SentenceLines` or None) through `translate_chunk`, its
    results through `format_chunk` (`(lines, status)`); `merge` joins a
    line's sentence results (`SentenceLines.wrap`'s); `vocabulary` is the
    model's SentencePiece file, for the unknown-script warning; `finish`
    runs after the last chunk, `close` at the end."""

    lines: object
    translate_chunk: Callable
    format_chunk: Callable
    merge: Optional[Callable] = None
    vocabulary: object = None
    finish: Callable = lambda: None
    close: Callable = lambda: None


def model_job(args):
    """`--model` (one or several, with predictors): a `Translator` in
    process, with every host-side search; `--rescore` and `--pipeline` run
    here and give their exit status instead of a job."""
    if engine(args) in ("xla", "auto"):
        from gnmt_tf import xla_cache

        xla_cache.enable()  # before TensorFlow loads (importing gnmt_tf
        # did, unless the variable was changed since)
    options = search_options(args)
    if getattr(args, "rescore", None) and not getattr(args, "input", None):
        raise ValueError("--rescore needs --input: the source sentences")
    constraints = lexical_constraints(args)
    sepbeam_models = getattr(args, "sepbeam_model", None) or []
    if sepbeam_models and options.decoder != "sepbeam":
        raise ValueError("--sepbeam-model needs --decoder sepbeam")
    weights = _sepbeam_weights(args)
    from gnmt_tf import cpu_settings

    cpu_settings.apply(args.batch_size, getattr(args, "threads", None))
    translator, name = load_translator(args)
    translator.shortlist, translator.unk_replacer = vocabulary_tools(
        args, translator.subwords)
    from gnmt_tf.predictor_model import PredictorModel

    plot_dir = getattr(args, "plot_attention", None)
    if plot_dir and isinstance(translator.model, PredictorModel):
        raise ValueError("--plot-attention needs one model, not a predictor "
                         "combination")
    if plot_dir:
        from gnmt_tf.cli.attention_plots import AttentionPlots

        plots = AttentionPlots(plot_dir, args.plot_attention_count)
    task = task_flags.task_arguments(args, translator.model, name)
    translator.task_ids(**task)  # a bad task fails before reading input
    if getattr(args, "rescore", None):
        refuse_host_decoding(args, "--rescore")
        return _rescore(args, translator, options, task)

    from gnmt_tf.translator import Translator

    members = [Translator.from_model_dir(path) for path in sepbeam_models]
    read = [0]  # input lines translated so far

    def translate_chunk(sentences):
        first, read[0] = read[0], read[0] + len(sentences)
        return translator.translate_nbest(
            sentences, options, args.batch_size,
            constraints=constraints and constraints.for_lines(first,
                                                              sentences),
            members=members, member_weights=weights, **task)

    if getattr(args, "pipeline", False):
        return _translate_with_pipeline(args, translator, options, task)

    def format_chunk(sentences, results, first):
        if plot_dir:
            plots.add(translator, sentences, results, first, **task)
        return format_results(results, options, first), 0

    return Job(
        lines=sentence_lines.from_args(args, translator.model, task),
        translate_chunk=translate_chunk, format_chunk=format_chunk,
        vocabulary=translator.subwords.model_path,
        finish=lambda: constraints and constraints.check_all_used(read[0]))


def lexical_constraints(args):
    """The `--constraints` or `--glossary-constraints` terms (a
    `LexicalConstraints`), or None."""
    from gnmt_tf.cli.constraints import LexicalConstraints

    terms = getattr(args, "constraints", None)
    glossary = getattr(args, "glossary_constraints", None)
    if terms and glossary:
        raise ValueError("give --constraints or --glossary-constraints, "
                         "not both")
    if terms:
        return LexicalConstraints.from_constraints_file(terms)
    if glossary:
        return LexicalConstraints.from_glossary(glossary)
    return None


def _sepbeam_weights(args):
    if not getattr(args, "sepbeam_weights", None):
        return None
    try:
        weights = [float(w) for w in args.sepbeam_weights.split(",")]
    except ValueError:
        weights = []
    if len(weights) != 1 + len(args.sepbeam_model) or not all(
            w > 0 and w != float("inf") for w in weights):
        raise ValueError(f"--sepbeam-weights needs {1 + len(args.sepbeam_model)} "
                         "comma-separated numbers > 0 (--model first), got "
                         f"{args.sepbeam_weights!r}")
    return weights


def _translate_with_pipeline(args, translator, options, task):
    """`--pipeline`: the batch-decoding pipeline (`gnmt_tf.batch_decoding`)
    over the input, output written line by line in input order, in the
    same windows and batches as plain `translate`."""
    from gnmt_tf.batch_decoding import BatchPipeline
    from gnmt_tf.batch_translation import TranslationStages
    from gnmt_tf.progress import progress

    stages = TranslationStages(translator, options, args.pipeline_retries,
                               **task)
    with streaming.open_input(args.input) as (stream, name), \
            streaming.open_output(args.output) as out, \
            progress(desc="translate", unit=" sentences") as bar:
        pipeline = BatchPipeline(
            stages, args.batch_size,
            streaming.chunk_size(stream, args.batch_size))
        for index, hypotheses in pipeline.run(
                streaming.iter_lines(stream, name)):
            lines = format_results([hypotheses], options, index)
            out.write("".join(line + "\n" for line in lines))
            out.flush()
            bar.update(1)
    if stages.empty_lines:
        print(f"note: {stages.empty_lines} empty input line(s) give empty "
              "output lines", file=sys.stderr)
    return 0

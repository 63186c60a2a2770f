"""`gnmt-tf translate`: raw sentences in (stdin or file), translations out.

The model is a trained model directory (``--model``), a TF Serving endpoint
(``--server``), an exported TFLite file (``--tflite``) or an ONNX export
directory (``--onnx``); the two exports are searched on the host by
`gnmt_tf.host_translator`. Task-space models take ``--src-lang``,
``--tgt-lang`` and ``--tags`` with each. Input is read and output written
a chunk at a time (`gnmt_tf.cli.streaming`); a line of several sentences
is split into them and their translations joined back into one output
line (`gnmt_tf.cli.sentence_lines`; `--no-split-sentences` turns it off).

With a document-pipeline flag (``--format``, ``--src-lang auto``,
``--glossary``, ``--qe``, ``--min-quality``) the whole input is one document
(plain text or HTML) run through the document pipeline (normalisation,
language detection, sentence splitting, markup kept) by
`gnmt_tf.gateway.cli`, imported only then.

Several ``--model`` flags make an ensemble; ``--predictors`` /
``--weights`` / ``--lm`` / ``--ensemble-mode`` (or ``--predictor-config``)
combine models, an n-gram LM and a word-count bonus log-linearly
(`gnmt_tf.predictor_model`); ``--rescore NBEST`` re-ranks an n-best list
under that combination by forced decoding (`gnmt_tf.rescoring`).
"""

import dataclasses
import sys
from typing import Callable, Optional

from gnmt_tf.cli import sentence_lines, streaming, task_flags, unknown_script
from gnmt_tf.config import PRECISIONS
from gnmt_tf.flags.arg_types import (non_negative_int, positive_int,
                                     probability)
# Re-exported: the commands built on `translate` take its flag groups from here.
from gnmt_tf.flags.predictors import (add_predictor_arguments,  # noqa: F401
                                      predictor_settings)
from gnmt_tf.flags.search import (add_search_arguments,  # noqa: F401
                                  given_search_flags, search_options)



def _refuse_host_decoding(args, where):
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


def register(subparsers):
    parser = subparsers.add_parser(
        "translate", help="translate raw text, line by line (a line of "
                          "several sentences split into them)")
    parser.add_argument("--model", action="append",
                        help="trained model directory, or the name of a "
                             "shipped model (gnmt-tf models); repeat it for "
                             "an ensemble")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="translate through a TF Serving gRPC endpoint instead")
    parser.add_argument("--model_name", "--model-name", dest="model_name",
                        default="gnmt", help="served model name (with --server)")
    parser.add_argument(
        "--tflite", metavar="FILE",
        help="translate with an exported .tflite model instead (gnmt-tf "
             "export tflite; its spm.model and model.json next to it), or "
             "a shipped model's int8 export by the model's name")
    parser.add_argument(
        "--onnx", metavar="DIR",
        help="translate with an ONNX export directory instead (gnmt-tf "
             "export onnx: encode.onnx, decode_step.onnx, spm.model, "
             "model.json; needs onnxruntime)")
    parser.add_argument("--input", "-i", help="input file (default: stdin)")
    parser.add_argument("--output", "-o", help="output file (default: stdout)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    parser.add_argument(
        "--threads", type=positive_int, default=None, metavar="N",
        help="CPU threads per op (default with --model: 1 at --batch-size "
             "1, where it measured 1.26x faster, else TensorFlow's choice, "
             "see gnmt_tf.cpu_settings; with --tflite: every core, up "
             "to 4; with --onnx: the runtime's choice)")
    parser.add_argument(
        "--precision", choices=PRECISIONS,
        default="float32",
        help="with one --model (a Transformer): compute in bfloat16, "
             "faster where the CPU has bfloat16 matmuls (AVX-512 BF16, "
             "AMX), at a small BLEU cost (docs/benchmarks.md: bfloat16)")
    parser.add_argument(
        "--xla", action="store_true",
        help="with one --model: compile the whole search with XLA (beam "
             "or greedy; no --shortlist). Same translations, faster (see "
             "docs/benchmarks.md: the whole search compiled by XLA), but "
             "each new batch shape compiles first (seconds)")
    parser.add_argument(
        "--plot-attention", metavar="DIR",
        help="write attention heatmaps (PNG) of the first sentences here "
             "(with --model; needs matplotlib)")
    parser.add_argument("--plot-attention-count", type=positive_int,
                        default=10, metavar="N",
                        help="sentences --plot-attention draws (default 10)")
    parser.add_argument(
        "--pipeline", action="store_true",
        help="translate with the batch-decoding pipeline (with --model): "
             "a scheduler, a compute and a post-processing thread, for "
             "large files; same output, in input order")
    parser.add_argument(
        "--pipeline-retries", type=non_negative_int, default=1, metavar="N",
        help="with --pipeline: times a translation cut at its length limit "
             "is redone with the limit doubled (default 1; 0 = never, "
             "which gives exactly plain translate's output)")
    add_search_arguments(parser)
    parser.add_argument(
        "--constraints", metavar="FILE",
        help="lexically constrained decoding: one line per input line, "
             "tab-separated target terms that must appear in its "
             "translation (an empty line: none)")
    parser.add_argument(
        "--glossary-constraints", metavar="FILE",
        help="'source term<TAB>target term' lines: the target term of "
             "every source term found in an input line (whole words, any "
             "case) must appear in its translation")
    parser.add_argument(
        "--sepbeam-model", metavar="DIR", action="append", default=[],
        help="with --decoder sepbeam: another model directory (same "
             "target vocabulary), repeatable; each model keeps its own beam")
    parser.add_argument(
        "--sepbeam-weights", metavar="W,W,...",
        help="weights of --model and each --sepbeam-model in the final "
             "ranking (default equal)")
    add_predictor_arguments(parser)
    parser.add_argument(
        "--rescore", metavar="NBEST",
        help="instead of translating, score the 'i ||| text ||| score' "
             "lines of NBEST (--n-best output) as translations of the "
             "--input sentences under the model(s) and predictors (forced "
             "decoding, GNMT score with --alpha/--beta, default 0) and print "
             "them re-ranked, best first per sentence")
    add_vocabulary_arguments(parser)
    task_flags.add_task_arguments(parser)
    sentence_lines.add_argument(parser)
    add_document_arguments(parser)
    parser.set_defaults(func=run)


def add_document_arguments(parser):
    """The document-pipeline flags (any of them selects the document
    mode; `--src-lang auto` too)."""
    group = parser.add_argument_group(
        "document pipeline", "translate the whole input as one document "
        "(needs --tgt-lang; --src-lang auto detects the language)")
    group.add_argument("--format", choices=["text", "html"], default=None,
                       help="the input is plain text (paragraphs separated "
                            "by blank lines) or HTML (markup kept)")
    group.add_argument("--languages", metavar="CODES",
                       help="comma-separated codes the model knows (with "
                            "--server; default: --src-lang,--tgt-lang)")
    group.add_argument("--glossary", metavar="TSV",
                       help="terms to translate as given: SOURCE<TAB>TARGET"
                            "[<TAB>LANG-PAIR[<TAB>TAGS]] a line")
    group.add_argument("--qe", action="store_true",
                       help="estimate the quality of each sentence")
    group.add_argument("--min-quality", type=probability, default=None,
                       metavar="X",
                       help="flag sentences whose estimated quality (0-1) is "
                            "below X (a warning says how many)")


def document_mode(args) -> bool:
    """Whether a document-pipeline flag was given."""
    return bool(getattr(args, "format", None)
                or getattr(args, "src_lang", None) == "auto"
                or getattr(args, "glossary", None)
                or getattr(args, "qe", False)
                or getattr(args, "min_quality", None) is not None)


def _translate_document(args):
    """Runs the document pipeline (`gnmt_tf.gateway.cli`)."""
    from gnmt_tf.gateway import cli as document_cli

    options = None
    if getattr(args, "model", None):
        options = search_options(args)
        if options.num_hypotheses > 1:
            raise ValueError("--n-best > 1 cannot be used with a document")
    elif given_search_flags(args):
        raise ValueError("search flags cannot be used with --server and a "
                         "document: the export's translate_with_alignment "
                         "searches with its own options")
    return document_cli.run_translate_document(args, options)


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
    xla = getattr(args, "xla", False)
    if (len(models) == 1 and predictors is None and weights is None
            and lm is None and mode == "loglinear"):
        return Translator.from_model_dir(
            models[0], precision=getattr(args, "precision", "float32"),
            jit_compile_search=xla), models[0]
    for flag, given in (("--precision", getattr(args, "precision", "float32")
                         != "float32"), ("--xla", xla)):
        if given:
            raise ValueError(f"{flag} needs one --model and no predictor "
                             "flags")
    from gnmt_tf.predictor_model import load_predictors

    model, subwords = load_predictors(models, predictors, weights, lm, mode)
    return Translator(model, subwords), models[0]


def add_vocabulary_arguments(parser):
    """Adds --shortlist and --replace-unk (`vocabulary_tools` reads them)."""
    parser.add_argument(
        "--shortlist", metavar="TABLE",
        help="search each batch over a reduced output vocabulary: the "
             "--shortlist-top-k translations of its source pieces in TABLE "
             "(gnmt-tf lexical-table) plus the --shortlist-frequent most "
             "frequent target pieces (with --model)")
    parser.add_argument("--shortlist-top-k", type=non_negative_int, default=20,
                        metavar="K", help="translations per source piece (20)")
    parser.add_argument("--shortlist-frequent", type=non_negative_int,
                        default=1000, metavar="N",
                        help="most frequent target pieces always kept (1000)")
    parser.add_argument(
        "--replace-unk", metavar="TABLE|copy",
        help="replace each output <unk> by the TABLE translation of the "
             "source token it attends to most (a source <unk> first, when "
             "there is one), else a copy of it; 'copy' always copies (with "
             "--model)")


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


def check_files(args):
    """Checks `--output` before any work (see `gnmt_tf.io_utils`)."""
    from gnmt_tf.io_utils import check_output_file

    source = getattr(args, "input", None)
    check_output_file(getattr(args, "output", None), {"--input": source},
                      reads_stdin=not source)


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


def _server_job(args):
    """`--server`: a `TranslationClient` over gRPC. Failed lines come out
    empty and are listed on stderr (exit code 1), the others are kept.
    Search flags go to the export's `translate_with_options` (see
    `served_search_options`)."""
    from gnmt_tf.serving.client import TranslationClient, TranslationError

    _refuse_host_decoding(args, "--server")
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
    return _Job(lines=sentence_lines.from_args(
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


def _host_job(args, flag):
    """`--tflite FILE` / `--onnx DIR` (`flag`): a
    `gnmt_tf.host_translator.HostTranslator` over the export."""
    _refuse_host_decoding(args, f"--{flag}")
    options = search_options(args)
    if options.early_stopping != "gnmt":
        raise ValueError(f"--{flag} searches with --early-stopping gnmt only")
    if options.decoder == "greedy":
        options = dataclasses.replace(options, beam_size=1)
    from gnmt_tf.host_translator import HostTranslator

    path = getattr(args, flag)
    # No automatic choice here: the 1-thread gain at batch 1 was measured
    # for TensorFlow's search; TFLite's host search was faster with 2
    # (`benchmarks/results/task_space_decode_speed.json`).
    threads = getattr(args, "threads", None)
    translator = (HostTranslator.from_onnx(path, num_threads=threads)
                  if flag == "onnx"
                  else HostTranslator.from_tflite(path, num_threads=threads))
    task = task_flags.task_arguments(args, translator, path)
    translator.task_arrays(**task)  # a bad task fails before reading input
    return _Job(
        lines=sentence_lines.from_args(args, translator, task),
        translate_chunk=lambda sentences: translator.translate_nbest(
            sentences, options, **task),
        format_chunk=lambda sentences, results, first: (
            format_results(results, options, first), 0),
        vocabulary=translator.vocabulary_path)


@dataclasses.dataclass
class _Job:
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


def run(args):
    check_files(args)
    _check_flag_combinations(args)
    if document_mode(args):
        return _translate_document(args)
    backend = next((flag for flag in ("server", "tflite", "onnx")
                    if getattr(args, flag, None)), "model")
    job = _host_job(args, backend) if backend in ("tflite", "onnx") else (
        _server_job(args) if backend == "server" else _model_job(args))
    if isinstance(job, int):  # --rescore, --pipeline: done
        return job
    try:
        format_chunk, check = job.format_chunk, None
        if job.vocabulary is not None:
            format_chunk, check = unknown_script.checking(job.vocabulary,
                                                          format_chunk)
        status = streaming.translate_stream(
            args.input, args.output, getattr(args, "batch_size", 32),
            sentence_lines.per_line(job.lines, job.translate_chunk,
                                    job.merge), format_chunk)
        job.finish()
        if check is not None:
            check.report()
        return status
    finally:
        job.close()


def _check_flag_combinations(args):
    """Raises for flags that exclude each other, before any work."""
    if getattr(args, "precision", "float32") != "float32" and (
            not getattr(args, "model", None) or args.server
            or document_mode(args)):
        raise ValueError("--precision needs --model (not --server, --tflite "
                         "or --onnx) and plain text")
    if document_mode(args):
        if getattr(args, "plot_attention", None):
            raise ValueError("--plot-attention cannot be used with a "
                             "document")
        _refuse_host_decoding(args, "a document (--format, --src-lang auto, "
                              "--glossary, --qe, --min-quality)")
        return
    plot_dir = getattr(args, "plot_attention", None)
    if plot_dir and (args.server or getattr(args, "tflite", None)
                     or getattr(args, "onnx", None)):
        raise ValueError("--plot-attention needs --model (the attention "
                         "comes from a forced pass of the model)")
    if getattr(args, "pipeline", False) and (
            plot_dir or args.server or not getattr(args, "model", None)):
        raise ValueError("--pipeline translates with --model DIR (not "
                         "--server, --tflite or --onnx) and without "
                         "--plot-attention")
    if getattr(args, "pipeline", False):
        _refuse_host_decoding(args, "--pipeline")
    for flag in ("shortlist", "replace_unk", "xla"):
        if getattr(args, flag, None) and not getattr(args, "model", None):
            raise ValueError(f"--{flag.replace('_', '-')} needs --model")
    if getattr(args, "xla", False) and (args.server or getattr(
            args, "shortlist", None)):
        raise ValueError("--xla compiles the in-process search: not with "
                         "--server or --shortlist")
    if args.server:
        return
    given = [flag for flag in ("model", "tflite", "onnx")
             if getattr(args, flag, None)]
    if len(given) > 1:
        raise ValueError(f"give one of --model, --tflite and --onnx, not "
                         f"{' and '.join('--' + flag for flag in given)}")


def _model_job(args):
    """`--model` (one or several, with predictors): a `Translator` in
    process, with every host-side search; `--rescore` and `--pipeline` run
    here and give their exit status instead of a job."""
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
        _refuse_host_decoding(args, "--rescore")
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

    return _Job(
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

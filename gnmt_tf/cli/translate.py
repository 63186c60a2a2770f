"""`gnmt-tf translate`: raw sentences in (stdin or file), translations out.

The model is a trained model directory (``--model``), a TF Serving endpoint
(``--server``) or an exported TFLite file (``--tflite``, searched on the host
by `export.tflite_translator`); task-space models take ``--src-lang``,
``--tgt-lang`` and ``--tags`` with each.
"""

import sys

from gnmt_tf.cli.arg_types import finite_float, positive_float, positive_int


def add_search_arguments(parser):
    parser.add_argument("--beam-size", type=positive_int, default=5,
                        help="1 = greedy search")
    parser.add_argument("--alpha", type=finite_float, default=0.6,
                        help="GNMT length-normalisation exponent")
    parser.add_argument("--beta", type=finite_float, default=0.0,
                        help="GNMT coverage-penalty weight")
    parser.add_argument("--beam-width", type=positive_float, default=None,
                        help="GNMT pruning: drop candidates this far below the best")
    parser.add_argument("--early-stopping", default="gnmt",
                        choices=["gnmt", "exact", "none"])
    parser.add_argument("--n-best", type=positive_int, default=1,
                        help="print N hypotheses per input as 'i ||| text ||| score'")


def search_options(args):
    from gnmt_tf.translator import SearchOptions

    if args.beam_size < 1:
        raise ValueError("--beam-size must be >= 1")
    if not 1 <= args.n_best <= args.beam_size:
        raise ValueError("--n-best must be between 1 and --beam-size")
    return SearchOptions(beam_size=args.beam_size, length_penalty=args.alpha,
                         coverage_penalty=args.beta, beam_width=args.beam_width,
                         num_hypotheses=args.n_best,
                         early_stopping=args.early_stopping)


def register(subparsers):
    parser = subparsers.add_parser(
        "translate", help="translate raw text, one sentence a line")
    parser.add_argument("--model", help="trained model directory")
    parser.add_argument("--server", metavar="HOST:PORT",
                        help="translate through a TF Serving gRPC endpoint instead")
    parser.add_argument("--model_name", "--model-name", dest="model_name",
                        default="gnmt", help="served model name (with --server)")
    parser.add_argument(
        "--tflite", metavar="FILE",
        help="translate with an exported .tflite model instead (gnmt-tf "
             "export tflite; its spm.model, and task.json for task-space "
             "models, next to it)")
    parser.add_argument("--input", "-i", help="input file (default: stdin)")
    parser.add_argument("--output", "-o", help="output file (default: stdout)")
    parser.add_argument("--batch-size", type=positive_int, default=32)
    add_search_arguments(parser)
    from gnmt_tf.cli.train import _optional_task_space_arguments

    _optional_task_space_arguments(parser, "add_translate_arguments")
    parser.set_defaults(func=run)


def read_input(path):
    from gnmt_tf.data.corpus import decode_lines, read_lines

    if path:
        return read_lines(path)
    return decode_lines(sys.stdin.buffer.read(), "<stdin>")


def note_empty_lines(sentences):
    """Tells on stderr how many inputs are blank (they give blank outputs)."""
    empty = sum(1 for s in sentences if not s.strip())
    if empty:
        print(f"note: {empty} empty input line(s) give empty output lines",
              file=sys.stderr)


def write_results(results, options, path):
    """Writes the best translation per input, or `i ||| text ||| score`
    n-best lines when `options.num_hypotheses > 1`."""
    if options.num_hypotheses == 1:
        lines = [hyps[0].text for hyps in results]
    else:
        lines = [f"{i} ||| {h.text} ||| {h.score:.4f}"
                 for i, hyps in enumerate(results) for h in hyps]
    write_output(lines, path)


def check_files(args):
    """Checks `--output` before any work (see `gnmt_tf.io_utils`)."""
    from gnmt_tf.io_utils import check_output_file

    check_output_file(getattr(args, "output", None),
                      {"--input": getattr(args, "input", None)})


def write_output(lines, path):
    """Writes one line per item to `path` (complete or not at all) or to
    stdout."""
    text = "".join(line + "\n" for line in lines)
    if path:
        from gnmt_tf.io_utils import write_text_atomic

        write_text_atomic(path, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


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


def _translate_through_server(args):
    """Translates via gRPC; failed lines come out empty and are listed on
    stderr (exit code 1), the others are kept."""
    from serving.client import PartialTranslationError, translate_lines

    try:
        lines = translate_lines(args.server, args.model_name,
                                read_input(args.input),
                                task_inputs=served_task_inputs(args))
        status = 0
    except PartialTranslationError as e:
        lines, status = [], 1
        for number, result in enumerate(e.results, 1):
            lines.append(result.translation or "")
            if result.error:
                print(f"line {number}: {result.error}", file=sys.stderr)
    write_output(lines, args.output)
    return status


def _translate_with_tflite(args):
    """Translates with `export.tflite_translator.open_translator`."""
    options = search_options(args)
    if options.early_stopping != "gnmt":
        raise ValueError("--tflite searches with --early-stopping gnmt only")
    from export.tflite_translator import TFLiteTranslator, open_translator

    translator = open_translator(args.tflite)
    task = {key: getattr(args, key, None)
            for key in ("src_lang", "tgt_lang", "tags")}
    search = dict(beam_size=options.beam_size,
                  length_penalty=options.length_penalty,
                  coverage_penalty=options.coverage_penalty,
                  num_hypotheses=options.num_hypotheses,
                  max_length_ratio=options.max_length_ratio,
                  beam_width=options.beam_width)
    if type(translator) is TFLiteTranslator:
        if any(value is not None for value in task.values()):
            raise ValueError("--src-lang, --tgt-lang and --tags are for "
                             f"task-space models; {args.tflite} is GNMT")
        run_search = translator.translate_nbest
    else:
        if not (task["src_lang"] and task["tgt_lang"]):
            raise ValueError(
                "--src-lang and --tgt-lang are required for a task-space "
                f"model (its languages: {list(translator.config.languages)})")
        translator.task_inputs(**task)  # bad task: fail before reading input
        from task_space.zero_shot import check_direction

        check_direction(translator.directions, translator.config.languages,
                        task["src_lang"], task["tgt_lang"],
                        getattr(args, "allow_zero_shot", False), args.tflite)

        def run_search(sentences, **search):
            return translator.translate_nbest(sentences, **task, **search)
    sentences = read_input(args.input)
    note_empty_lines(sentences)
    write_results(run_search(sentences, **search), options, args.output)
    return 0


def check_gnmt_task_flags(args, payload):
    """Refuses the task-space flags a GNMT model directory cannot honour:
    `--tags`, and `--src-lang` / `--tgt-lang` other than its one direction.

    Raises:
      ValueError: naming the flag and the model's direction.
    """
    src, tgt = payload.get("src_lang"), payload.get("tgt_lang")
    trained = f"{src}->{tgt}" if src and tgt else "one direction"
    if getattr(args, "tags", None) is not None:
        raise ValueError(f"--tags is for task-space models; {args.model} is "
                         f"a GNMT model ({trained})")
    for flag, key, value in (("--src-lang", "src_lang", src),
                             ("--tgt-lang", "tgt_lang", tgt)):
        asked = getattr(args, key, None)
        if asked is not None and asked != value:
            raise ValueError(f"{args.model} is a GNMT model that translates "
                             f"{trained} only; it cannot honour {flag} "
                             f"{asked}")


def run(args):
    check_files(args)
    if args.server:
        return _translate_through_server(args)
    if args.tflite:
        if args.model:
            raise ValueError("give --model or --tflite, not both")
        return _translate_with_tflite(args)
    if not args.model:
        raise ValueError("give --model DIR (or --server HOST:PORT, or "
                         "--tflite FILE)")
    from gnmt_tf.model_dir import read_config
    from task_space.registry import MODEL_TYPES as TASK_SPACE_TYPES

    payload = read_config(args.model)
    if payload.get("model_type") in TASK_SPACE_TYPES:
        from task_space.cli import translate_from_args

        return translate_from_args(args)
    check_gnmt_task_flags(args, payload)
    options = search_options(args)
    sentences = read_input(args.input)

    from gnmt_tf.model_dir import load_model
    from gnmt_tf.translator import Translator

    model, subwords, _ = load_model(args.model)
    translator = Translator(model, subwords)
    note_empty_lines(sentences)
    results = translator.translate_nbest(sentences, options, args.batch_size)
    write_results(results, options, args.output)
    return 0

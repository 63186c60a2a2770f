"""The exporters: one class a format, looked up by name.

`gnmt-tf export FORMAT` finds its `Exporter` in `EXPORTERS` (as
OpenNMT-tf's exporters): each adds its own flags and runs its own export,
importing TensorFlow only then. Formats: ``savedmodel``
(`gnmt_tf.export.savedmodel`), ``tflite`` (`gnmt_tf.export.tflite`; ``--int8`` from a QAT
model directory), ``qat`` (`gnmt_tf.export.qat`, the quantization-aware fine-tuning
that ``tflite --int8`` converts), ``tensorrt`` (`gnmt_tf.export.tensorrt`; exits
with code 2 saying what is missing without a GPU and TensorRT) and
``onnx`` (`gnmt_tf.export.onnx_export`). A new format is a new class added to
`EXPORTERS`; the step functions the host-search formats share live in
`gnmt_tf.export.step_functions`, so no exporter calls another.
"""

import abc
import sys

from gnmt_tf.flags.arg_types import (non_negative_int, number,
                                     positive_float, positive_int)
from gnmt_tf.flags.predictors import add_predictor_arguments, predictor_settings
from gnmt_tf.flags.search import add_search_arguments, search_options


class Exporter(abc.ABC):
    """One export format.

    Attributes:
      name: the `gnmt-tf export` action.
      help: its one-line description.
    """

    name: str
    help: str

    @abc.abstractmethod
    def add_arguments(self, parser):
        """Adds the format's flags to its `argparse` subparser."""

    @abc.abstractmethod
    def run(self, args) -> int:
        """Exports what the parsed `args` ask for; returns the exit code.

        Raises:
          ValueError, FileNotFoundError: bad flags or inputs (the CLI
            prints them as one line and exits with code 2).
        """


def _beam_sizes(text):
    try:
        sizes = tuple(int(k) for k in text.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--beam-sizes must be comma-separated positive "
                         f"integers, got {text!r}")
    return sizes


class SavedModelExporter(Exporter):
    name = "savedmodel"
    help = "SavedModel for tensorflow_model_server"

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True, action="append",
                            help="trained model directory; repeat it to "
                                 "export an ensemble as one SavedModel")
        parser.add_argument("--out", required=True,
                            help="BASE/NAME/VERSION directory to create")
        add_search_arguments(parser)  # serving_default's search
        add_predictor_arguments(parser)  # nmt and wc only (no lm)
        parser.add_argument(
            "--shortlist", metavar="TABLE",
            help="search each request over a vocabulary shortlist built in the "
                 "graph from TABLE (gnmt-tf lexical-table; see gnmt-tf "
                 "translate --shortlist)")
        parser.add_argument("--shortlist-top-k", type=non_negative_int,
                            default=20, metavar="K")
        parser.add_argument("--shortlist-frequent", type=non_negative_int,
                            default=1000, metavar="N")
        parser.add_argument(
            "--beam-sizes", default="1,2,4",
            help="comma-separated beam sizes translate_with_options accepts "
                 "(the default beam size is always added)")
        parser.add_argument("--max-source-length", type=positive_int,
                            default=250,
                            help="reject longer inputs (subwords)")
        parser.add_argument(
            "--warmup", help="file of warm-up sentences, one a line "
                             "(default: two built-in sentences)")
        parser.add_argument(
            "--xla", action="store_true",
            help="compile the searches with XLA (one model, no --shortlist): "
                 "faster (docs/benchmarks.md: XLA), each new batch shape "
                 "compiles on its first request; tensorflow_model_server needs "
                 "--xla_cpu_compilation_enabled=true")
        parser.add_argument(
            "--no-alignment-signature", dest="alignment_signature",
            action="store_false",
            help="leave out translate_with_alignment (scores, subwords and "
                 "alignment for the document pipeline's gateway)")

    def run(self, args) -> int:
        from gnmt_tf.export.savedmodel import export_savedmodel

        options = search_options(args)
        warmup = None
        if args.warmup:
            from gnmt_tf.data.corpus import read_lines

            warmup = [s for s in read_lines(args.warmup) if s.strip()]
        models, predictors, weights, lm, mode = predictor_settings(args)
        if lm is not None:
            raise ValueError("--lm cannot be exported: the lm predictor "
                             "runs kenlm in Python, which "
                             "tensorflow_model_server cannot run")
        shortlist = None
        if args.shortlist:
            shortlist = (args.shortlist, args.shortlist_top_k,
                         args.shortlist_frequent)
        path = export_savedmodel(models, args.out, options, warmup,
                                 _beam_sizes(args.beam_sizes),
                                 args.max_source_length,
                                 predictors=predictors, weights=weights,
                                 ensemble_mode=mode,
                                 alignment_signature=args.alignment_signature,
                                 shortlist=shortlist,
                                 jit_compile_search=args.xla)
        print(f"exported SavedModel to {path}", file=sys.stderr)
        return 0


class TFLiteExporter(Exporter):
    name = "tflite"
    help = "encode + decode_step TFLite models for on-device search"

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True, help="trained model directory")
        parser.add_argument("--out", required=True, help="output directory")
        parser.add_argument(
            "--quantization", default="float32",
            choices=["float32", "dynamic_range", "float16"],
            help="weight format (dynamic_range: int8 weights, float "
                 "activations; from a QAT model directory, its fine-tuned "
                 "weights, so the int8 weights were trained for quantization)")
        parser.add_argument(
            "--max-source-length", type=number(integer=True, minimum=2),
            default=None,
            help="longest source in subwords, end token included (with "
                 "--fixed-shapes also decode_step's attention-memory length; "
                 "default 128, task-space models: their max_sequence_length + 1, "
                 "+ 2 with a <2xx> source token)")
        parser.add_argument(
            "--max-target-length", type=positive_int, default=None,
            help="task-space models: a fixed KV cache of this length, the "
                 "longest output in subwords with the end token (default: a "
                 "growing cache; with --fixed-shapes max_sequence_length, at "
                 "most 128)")
        parser.add_argument(
            "--fixed-shapes", action="store_true",
            help="decode_step with fixed shapes, for runtimes that cannot "
                 "resize inputs: the state at --max-source-length positions and "
                 "a KV cache of --max-target-length (default: any source length "
                 "and a growing cache, faster)")
        parser.add_argument(
            "--cache-block", type=positive_int, default=None,
            help="task-space models: grow the KV cache this many positions at a "
                 "time instead of one, so the interpreter reallocates its "
                 "tensors every N steps, not every step: faster one sentence at "
                 "a time (a batch-1 int8 step 1.2-1.6x), slower in large "
                 "batches; e.g. 16")
        parser.add_argument(
            "--search-beam-size", type=positive_int, action="append",
            default=[], metavar="K",
            help="also export one sentence's whole beam search with K beams "
                 "as a signature (repeat for several K): translating one "
                 "sentence at a time with beam K then takes one interpreter "
                 "call, not one per output token (faster at batch 1; not with "
                 "--int8 or --fixed-shapes); e.g. 4")
        parser.add_argument(
            "--int8", action="store_true",
            help="int8 weights and activations (model_int8.tflite) from a QAT "
                 "model directory (gnmt-tf export qat)")

    def run(self, args) -> int:
        from gnmt_tf.export.tflite import export_tflite

        quantization = args.quantization
        if args.int8:
            if quantization != "float32":
                raise ValueError("--int8 and --quantization exclude each other")
            quantization = "int8"
        paths = export_tflite(args.model, args.out, quantization,
                              args.max_source_length, args.max_target_length,
                              args.fixed_shapes,
                              cache_block=args.cache_block,
                              search_beam_sizes=args.search_beam_size)
        for path in paths.values():
            print(f"wrote {path}", file=sys.stderr)
        return 0


class QATExporter(Exporter):
    name = "qat"
    help = "quantization-aware fine-tuning (for export tflite --int8)"

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True,
                            help="trained float model directory (GNMT or "
                                 "task-space Transformer)")
        parser.add_argument("--out", required=True,
                            help="QAT model directory to write (or resume)")
        parser.add_argument("--data-dir", help="training data (default $GNMT_TF_DATA, "
                                               "else the Multi30k download cache)")
        parser.add_argument("--steps", type=positive_int, default=1000,
                            help="fine-tuning steps")
        parser.add_argument("--minutes", type=positive_float,
                            help="wall-time budget in minutes")
        parser.add_argument("--learning-rate", type=positive_float,
                            help="peak learning rate (default: a tenth of the "
                                 "float run's)")
        parser.add_argument("--calibration-batches", type=non_negative_int,
                            default=20,
                            help="batches that set the initial activation ranges")

    def run(self, args) -> int:
        from gnmt_tf.export.qat import qat_finetune

        qat_finetune(args.model, args.out, args.data_dir, args.steps,
                     args.minutes, args.learning_rate,
                     args.calibration_batches)
        print(f"wrote QAT model directory {args.out}", file=sys.stderr)
        return 0


class TensorRTExporter(Exporter):
    name = "tensorrt"
    help = ("TF-TRT optimised SavedModel (needs a GPU and "
                         "TensorRT)")

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True,
                            help="SavedModel version directory "
                                 "(gnmt-tf export savedmodel)")
        parser.add_argument("--out", required=True,
                            help="directory for the converted SavedModel")
        parser.add_argument("--precision", default="FP16",
                            choices=["FP32", "FP16", "INT8"])
        parser.add_argument("--calibration",
                            help="source sentences (one a line) for INT8")

    def run(self, args) -> int:
        from gnmt_tf.export.tensorrt import convert_tensorrt, tensorrt_problem

        problem = tensorrt_problem()
        if problem:
            print(f"gnmt-tf export tensorrt: {problem}", file=sys.stderr)
            return 2
        sentences = ()
        if args.calibration:
            from gnmt_tf.data.corpus import read_lines

            sentences = read_lines(args.calibration)
        convert_tensorrt(args.model, args.out, args.precision, sentences)
        print(f"wrote TF-TRT SavedModel {args.out}", file=sys.stderr)
        return 0


class ONNXExporter(Exporter):
    name = "onnx"
    help = ("encode.onnx + decode_step.onnx (tf2onnx) for trtexec "
                     "/ ONNX Runtime")

    def add_arguments(self, parser):
        parser.add_argument("--model", required=True,
                            help="trained model directory (any type, or QAT)")
        parser.add_argument("--out", required=True, help="output directory")
        parser.add_argument("--opset", type=positive_int, default=17)

    def run(self, args) -> int:
        import importlib.util

        if importlib.util.find_spec("tf2onnx") is None:
            print("gnmt-tf export onnx: tf2onnx is not installed: pip "
                  "install 'gnmt-tf[onnx]'", file=sys.stderr)
            return 2
        from gnmt_tf.export.onnx_export import export_onnx

        for path in export_onnx(args.model, args.out, args.opset).values():
            print(f"wrote {path}", file=sys.stderr)
        return 0


EXPORTERS = {exporter.name: exporter for exporter in (
    SavedModelExporter(), TFLiteExporter(), QATExporter(),
    TensorRTExporter(), ONNXExporter())}

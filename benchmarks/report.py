"""docs/benchmarks.md, generated from benchmarks/results/*.json.

Every benchmark writes its figures, and the command that produced them, to
a JSON file under `benchmarks/results/` (`benchmarks/results_file.py`). This
script turns those files into one Markdown document, a section per file, so
no figure in the docs is typed by hand and none can go stale:

    python benchmarks/report.py            # rewrite docs/benchmarks.md
    python benchmarks/report.py --check    # exit 1 when it is out of date

(`make docs` runs the first.) The layout is generic, read from the JSON's
shape: the commands (`command`, `commands`, `*_command`) as shell blocks;
numbers, flags and short strings as a two-column table; a dict of records
(dicts of numbers) as one table, a row per key; sibling records with the
same keys (`sacrebleu`, `size_mb`, ... per export format) side by side;
lists of records as tables; everything else as subsections. Earlier runs
kept in a file (`earlier*` keys) and long tables are folded (`<details>`).
Floats are shown with 4 decimals at most (4 significant digits below 1).
"""

import argparse
import difflib
import json
import math
import pathlib
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from gnmt_tf.io_utils import write_text_atomic  # noqa: E402

RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
DOC_PATH = REPO_ROOT / "docs" / "benchmarks.md"

# What each results file measures: a title and one sentence. Prose only; every
# figure comes from the JSON. A file missing here gets its name as title.
TITLES = {
    "alignment": ("Placeholders and the alignment head",
                  "Placeholder restoration through the convolutional "
                  "alignment head against attention argmax, and its "
                  "alignment error rate."),
    "backend_engines": ("Engines of the in-process front ends",
                        "The shipped model through `Translator` and the "
                        "gateway's `ModelBackend`: the default engine "
                        "(its TFLite export) against the XLA search, one "
                        "sentence a call and a batch."),
    "batch_padding": ("Padding in training batches",
                      "How much of a training batch is padding, per "
                      "length-bucket width."),
    "beam_translate": ("Batch translation with Apache Beam",
                       "`gnmt-tf translate-beam` on the DirectRunner "
                       "against plain `gnmt-tf translate`."),
    "bfloat16_decoding": ("Decoding in bfloat16",
                          "`--precision mixed_bfloat16` against float32 on "
                          "the shipped Transformer: speed and BLEU."),
    "decode_step_profile": ("Where a beam-search step spends its time",
                            "The task-space Transformer's in-graph search, "
                            "step by step."),
    "decoding": ("Decoders and decoding techniques",
                 "GNMT pruning, constrained decoding, search errors, RL "
                 "refinement, the batch-decoding pipeline, ensembles and the "
                 "n-gram LM predictor, shortlists, UNK replacement and "
                 "recomputation: one key per benchmark."),
    "export": ("Export of GNMT: SavedModel against TFLite",
               "BLEU, size, latency and throughput of each export format of "
               "`gnmt_small`, and the host-side search."),
    "export_transformer": ("Export of the Transformer",
                           "BLEU, size, latency and throughput of each export "
                           "format of the shipped task-space Transformer."),
    "fast_align": ("fast_align re-implementation",
                   "Our NumPy fast_align against the original C++ tool on "
                   "Multi30k."),
    "first_sentence_latency": ("First-sentence latency",
                               "One line through `gnmt-tf translate --model "
                               "multi30k-transformer` from a fresh process, "
                               "engine by engine, and its parts."),
    "gnmt_ablation": ("GNMT training choices",
                      "Training choices compared at equal steps, and whether "
                      "the attention aligns."),
    "growing_cache": ("Growing KV cache",
                      "The Transformer's KV cache grown a position per step "
                      "against a fixed-size one."),
    "model_zoo": ("Shipped models",
                  "The models under `gnmt_tf/pretrained/`, scored as shipped "
                  "(sacreBLEU and chrF), what the packaging choices were "
                  "worth, and the zero-shot directions."),
    "savedmodel_speed": ("SavedModel exports against each other",
                         "Two exports of the same model translating the "
                         "same sentences in process, taking turns."),
    "multi_vs_bilingual": ("One 12-direction model against bilingual models",
                           "The first shipped `multi30k-transformer` against "
                           "bilingual `transformer_small` models trained with "
                           "the same settings and steps, scored the same way."),
    "multi30k_gnmt": ("GNMT on Multi30k en→de",
                      "`gnmt_small` trained within a CPU time budget."),
    "one_query_attention": ("One-query attention",
                            "A decoding step's attention as products and sums "
                            "against einsums."),
    "pipeline": ("Document pipeline",
                 "Language identification, sentence splitting, HTML, "
                 "glossaries, quality estimation and throughput of the "
                 "document pipeline."),
    "search_errors": ("Search errors of beam search",
                      "How often beam search misses the model's best output "
                      "(exact depth-first search)."),
    "data_path_parity": ("Streaming data path against the in-memory reader",
                         "The same Multi30k en-de training through both data "
                         "paths, two seeds each: val BLEU, and the seed "
                         "spread it is compared with."),
    "data_scale": ("Training data at scale",
                   "The streaming data path from 1k to 5M synthetic sentence "
                   "pairs: prepare speed and memory, time to the first "
                   "training step, peak memory and tokens/s of training."),
    "gateway_faults": ("The gateway under abuse",
                       "Well-behaved clients of the HTTP gateway, without and "
                       "with abusive clients (huge chunked bodies, huge "
                       "lines, deeply nested JSON, clients that disconnect): "
                       "failed requests, latency, memory."),
    "sentence_split": ("Sentence splitters",
                       "Exact-split rate on paragraphs of Multi30k sentences "
                       "(val, test_2016_flickr, test_2017_flickr, train)."),
    "serving_faults": ("Serving under faults",
                       "The local server under a soak with faults."),
    "serving_load": ("Serving under load",
                     "The local gRPC server under concurrent load, with and "
                     "without batching; hot reload; memory over long runs."),
    "serving_load_toy": ("Serving under load (toy model)",
                         "The load benchmark on a toy model."),
    "streaming_memory": ("Streaming memory of `gnmt-tf translate`",
                         "Peak memory on a large input, from a file and "
                         "from a pipe."),
    "streaming_memory_long": ("Streaming memory on a long input",
                              "The same on a longer input."),
    "task_space": ("Task-space Transformer on Multi30k",
                   "One Transformer for 12 directions against bilingual "
                   "models; zero-shot directions; decoding speed."),
    "task_space_decode_speed": ("Task-space Transformer decoding speed",
                                "Beam-search decoding speed against "
                                "CTranslate2, setting by setting."),
    "task_space_decode_speed_default_xeon": (
        "Task-space Transformer decoding speed on an Intel Xeon",
        "The default path against CTranslate2 float32 on a 2-core Intel "
        "Xeon (the main decoding-speed file is from an AMD EPYC)."),
    "tflite_cache_block": ("TFLite KV cache grown in blocks",
                           "`export tflite --cache-block N` against a cache "
                           "grown a position per step."),
    "tflite_search_parts": ("Where a TFLite translation spends its time",
                            "The host-side search over TFLite, part by part."),
    "tflite_search_parts_int8": (
        "Where an int8 TFLite translation spends its time",
        "The shipped Transformer's float32 and int8-weight exports, part by "
        "part, the host search against its previous version."),
    "tflite_step_inputs": ("How the TFLite search feeds a step",
                           "Ways of passing `decode_step`'s inputs."),
    "tflite_step_invoke": ("TFLite `decode_step` invoke time",
                           "`Invoke` alone, TFLite files side by side."),
    "tflite_step_split": ("Inside a TFLite step",
                          "Where a host search's TFLite step spends its "
                          "time."),
    "thread_settings": ("TensorFlow CPU thread settings",
                        "oneDNN and thread-pool settings for beam-search "
                        "decoding."),
    "training_speed": ("Training speed",
                       "Target tokens per second, ours against OpenNMT-tf "
                       "and Keras LSTMs."),
    "transformer_ablation": ("Transformer training choices",
                             "Training choices of a bilingual "
                             "`transformer_small`, one at a time at equal "
                             "budget."),
    "xla_search": ("The whole search compiled by XLA",
                   "`--xla` against the plain search."),
    "xla_train_step": ("XLA training step",
                       "The training step with and without `jit_compile`."),
}

_LONG_TEXT = 80      # longer strings are notes, not table cells
_MAX_COLUMNS = 12    # wider dicts of records are subsections instead
_FOLD_ROWS = 25      # longer tables of records are folded
_FOLD_FIGURES = 60   # longer key-value tables are folded
_MAX_HEADING = 5     # deeper sections get a bold caption


def is_command_key(key) -> bool:
    return key in ("command", "commands") or str(key).endswith("_command")


def _is_scalar(value) -> bool:
    return value is None or isinstance(value, (bool, int, float)) or (
        isinstance(value, str) and len(value) <= _LONG_TEXT)


def _is_scalar_list(value) -> bool:
    return isinstance(value, list) and all(_is_scalar(v) for v in value)


def _cell_value(value) -> bool:
    return _is_scalar(value) or _is_scalar_list(value)


def _flatten(record, prefix=""):
    """`{"a.b": scalar}` of a dict whose leaves are cell values, or None
    when it holds anything else (a long string, a command, a list of
    dicts)."""
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if is_command_key(key):
            return None
        if _cell_value(value) or isinstance(value, str):
            flat[name] = value
        elif isinstance(value, dict) and value:
            inner = _flatten(value, f"{name}.")
            if inner is None:
                return None
            flat.update(inner)
        else:
            return None
    return flat


def _is_record(value) -> bool:
    return isinstance(value, dict) and bool(value) and _flatten(value) \
        is not None and len(_flatten(value)) <= _MAX_COLUMNS


def format_value(value) -> str:
    """A cell: floats to 4 decimals (4 significant digits below 1), lists
    comma-separated, None as a dash; `|` escaped."""
    if value is None:
        text = "–"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            text = str(value)
        elif value == int(value) and abs(value) < 1e15:
            text = str(int(value))
        elif abs(value) >= 1:
            text = f"{value:.4f}".rstrip("0").rstrip(".")
        else:
            text = f"{value:.4g}"
    elif isinstance(value, list):
        text = ", ".join(format_value(v) for v in value) or "[]"
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _fold(summary, lines, rows, limit=_FOLD_ROWS):
    if rows <= limit:
        return lines
    return ["<details><summary>" + summary + f" ({rows} rows)</summary>",
            "", *lines, "", "</details>"]


def _heading(level, title):
    if level <= _MAX_HEADING:
        return ["#" * level + " " + title, ""]
    return [f"**{title}**", ""]


def _commands(data):
    """`[(label, command)]` of a dict's own command keys."""
    found = []
    for key, value in data.items():
        if not is_command_key(key):
            continue
        if isinstance(value, str):
            found.append((None if key == "command" else key, value))
        elif isinstance(value, dict):
            found += [(str(k), v) for k, v in value.items()
                      if isinstance(v, str)]
    return found


def _records_table(name, records):
    """A dict of records (or a list of them) as one table: a row per key
    (or item), a column per flattened field."""
    if isinstance(records, dict):
        labels, items = [str(k) for k in records], list(records.values())
    else:
        labels, items = None, records
    flats = [_flatten(r) for r in items]
    columns = list(dict.fromkeys(c for f in flats for c in f))
    header = ([""] if labels else []) + columns
    rows = []
    for i, flat in enumerate(flats):
        row = [format_value(flat[c]) if c in flat else "" for c in columns]
        rows.append(([labels[i]] if labels else []) + row)
    return _fold(f"<code>{name}</code>", _table(header, rows), len(rows))


def _sibling_groups(records):
    """Records of one dict grouped by their field names, each group of two
    or more a table with a column per record."""
    groups = {}
    for key, record in records.items():
        groups.setdefault(tuple(_flatten(record)), []).append(key)
    return [keys for keys in groups.values() if len(keys) > 1]


def render_dict(data, level, title=None):
    """Markdown lines for one dict (a section)."""
    lines = _heading(level, title) if title else []
    for label, command in _commands(data):
        if label:
            lines.append(f"Command (`{label}`):")
            lines.append("")
        lines += ["```bash", command, "```", ""]

    earlier = {k: v for k, v in data.items()
               if str(k).startswith("earlier") and not is_command_key(k)}
    body = {k: v for k, v in data.items()
            if k not in earlier and not is_command_key(k)}
    scalars = {k: v for k, v in body.items() if _cell_value(v)}
    notes = {k: v for k, v in body.items()
             if isinstance(v, str) and not _cell_value(v)}
    records = {k: v for k, v in body.items()
               if k not in scalars and _is_record(v)}
    side_by_side = _sibling_groups(records) if len(records) > 1 else []
    grouped = {k for keys in side_by_side for k in keys}
    # A lone small record joins the key-value table with dotted names.
    for key, record in records.items():
        if key not in grouped:
            for name, value in _flatten(record, f"{key}.").items():
                scalars[name] = value
    rest = {k: v for k, v in body.items()
            if k not in scalars and k not in notes and k not in records}

    if scalars:
        rows = [[f"`{k}`", format_value(v)] for k, v in scalars.items()]
        lines += _fold("figures", _table(["key", "value"], rows), len(rows),
                       _FOLD_FIGURES)
        lines.append("")
    for keys in side_by_side:
        first = records[keys[0]]
        fields = list(_flatten(first))
        flats = {k: _flatten(records[k]) for k in keys}
        rows = [[f"`{f}`"] + [format_value(flats[k][f]) for k in keys]
                for f in fields]
        lines += _fold(", ".join(f"<code>{k}</code>" for k in keys),
                       _table([""] + [f"`{k}`" for k in keys], rows),
                       len(rows))
        lines.append("")
    for key, value in rest.items():
        lines += _render_value(key, value, level + 1)
    for key, value in notes.items():
        lines += [f"*{key}*: " + value.replace("\n", " "), ""]
    if earlier:
        inner = []
        for key, value in earlier.items():
            inner += _render_value(key, value, level + 1)
        lines += ["<details><summary>Earlier runs kept in this file: "
                  + ", ".join(f"<code>{k}</code>" for k in earlier)
                  + "</summary>", "", *inner, "</details>", ""]
    return lines


def _render_value(key, value, level):
    """A non-scalar entry: a table of records, a list, or a subsection."""
    if isinstance(value, dict) and value and all(
            _is_record(v) for v in value.values()) and len(value) > 1:
        columns = {c for v in value.values() for c in _flatten(v)}
        if len(columns) <= _MAX_COLUMNS:
            return (_heading(level, f"`{key}`")
                    + _records_table(key, value) + [""])
    if isinstance(value, list) and value and all(
            _is_record(v) for v in value):
        columns = {c for v in value for c in _flatten(v)}
        if len(columns) <= _MAX_COLUMNS + 4:
            return (_heading(level, f"`{key}`")
                    + _records_table(key, value) + [""])
    if isinstance(value, dict):
        return render_dict(value, level, f"`{key}`")
    if isinstance(value, list):
        lines = _heading(level, f"`{key}`")
        for i, item in enumerate(value):
            if isinstance(item, dict):
                lines += render_dict(item, level + 1, f"`{key}[{i}]`")
            else:
                lines += [f"- {format_value(item)}"]
        return lines + [""]
    return [f"`{key}`: {format_value(value)}", ""]


def _anchor(title: str) -> str:
    """GitHub's heading anchor."""
    text = "".join(c for c in title.lower()
                   if c.isalnum() or c in " -_→").replace("→", "")
    return text.replace(" ", "-")


def render(results_dir=RESULTS_DIR) -> str:
    """The whole document for the JSON files in `results_dir`."""
    results_dir = pathlib.Path(results_dir)
    paths = sorted(results_dir.glob("*.json"))
    sections, contents = [], []
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        title, about = TITLES.get(path.stem, (path.stem, ""))
        contents.append(f"- [{title}](#{_anchor(title)}) "
                        f"(`{path.name}`)")
        lines = ["## " + title, ""]
        if about:
            lines += [about, ""]
        lines += [f"Source: `benchmarks/results/{path.name}`.", ""]
        if not isinstance(data, dict):
            data = {"results": data}
        if not _commands(data):
            lines += ["The file records no command of its own; its "
                      "subsections name theirs.", ""]
        lines += render_dict(data, 2)
        sections.append("\n".join(lines).rstrip() + "\n")
    head = [
        "<!-- Generated by benchmarks/report.py from benchmarks/results/"
        "*.json: do not edit. Run `make docs` after a benchmark writes "
        "its JSON. -->",
        "",
        "# Benchmarks",
        "",
        "Every figure below is read from a JSON file that a script under "
        "`benchmarks/` wrote, with the command that produced it. Rerun the "
        "command to measure again, then `make docs` to regenerate this page "
        "(`tests/benchmarks_report_test.py` fails while it is out of date). "
        "Most runs are on a shared 2-core CPU machine, so speeds vary with "
        "its load; each file records its machine and settings. Paths such "
        "as `/work/zoo/...` are the measuring machine's own (model copies, "
        "work folders).",
        "",
        "The shipped models' scores (their `scores.json` and model cards) "
        "come from `python benchmarks/model_zoo.py --evaluate-only`; "
        "`python benchmarks/model_zoo.py --evaluate-only --splits "
        "test_2016_flickr --directions en-de,en-fr --skip-wmt22` is a quick "
        "check against them.",
        "",
        *contents,
        "",
    ]
    return "\n".join(head) + "\n" + "\n".join(sections)


def check(results_dir=RESULTS_DIR, doc_path=DOC_PATH):
    """`(up_to_date, diff)`: whether `doc_path` is what `render` gives, and
    a unified diff (empty when it is)."""
    expected = render(results_dir)
    doc_path = pathlib.Path(doc_path)
    actual = doc_path.read_text(encoding="utf-8") if doc_path.exists() \
        else ""
    if actual == expected:
        return True, ""
    diff = "".join(difflib.unified_diff(
        actual.splitlines(True), expected.splitlines(True),
        str(doc_path), "regenerated", n=1))
    return False, diff


def write(results_dir=RESULTS_DIR, doc_path=DOC_PATH):
    """Writes the document atomically."""
    write_text_atomic(doc_path, render(results_dir))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=pathlib.Path, default=RESULTS_DIR,
                        help="folder of the results JSON files")
    parser.add_argument("--out", type=pathlib.Path, default=DOC_PATH,
                        help="the document to write or check")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the document "
                             "differs from the JSON files")
    args = parser.parse_args(argv)
    if args.check:
        ok, diff = check(args.results, args.out)
        if not ok:
            sys.stdout.write(diff[:20000])
            print(f"{args.out} is out of date: run `make docs`",
                  file=sys.stderr)
            return 1
        return 0
    write(args.results, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

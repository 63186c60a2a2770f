"""Benchmark: the decoders of issue 15 on a trained model, three sections of
`benchmarks/results/decoding.json`.

- `search_errors`: how often beam search (beams 1, 4, 10; no penalties)
  misses the model's best output, against exact depth-first search
  (`--decoder dfs`), on short sentences; the measurement of
  `benchmarks/search_errors.py`, reused.
- `constrained`: glossary terms from the reference side: for each sentence
  the longest capitalised word of the German reference after its first
  word (German nouns are capitalised), punctuation stripped. Term usage
  rate and BLEU of plain beam search and of lexically constrained search
  (dynamic beam allocation), side by side on the same sentences.
- `gnmt_pruning`: GNMT's pruning (`beam_width`, the paper's two rules) at
  beam 10: time of the in-graph search (`--pruning-batch-size` sentences
  per call; wall clock, or this process's CPU time with `--clock cpu`), its
  decoding steps (summed over batches) and BLEU, without and with pruning,
  measured alternately in one run (each setting traced once before timing;
  the median of the repeats). A batch's loop runs until its last sentence
  stops, so pruning can only save time where it ends searches sooner:
  batch 1 shows that best.

    python benchmarks/decoding_search.py --model-dir MODEL_DIR \\
        [--sections search_errors,constrained,gnmt_pruning] \\
        [--data-dir ../shared/data/multi30k] [--note "..."]

The task arguments default to en->de captions (a task-space model); a GNMT
model dir takes `--task` none (`--no-task`).
"""

import argparse
import gzip
import pathlib
import re
import statistics
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))  # (a PyPI "benchmarks"
# package may shadow this folder)

import gnmt_tf  # noqa: E402,F401  (TF_USE_LEGACY_KERAS before TensorFlow)
from gnmt_tf.flags.arg_types import positive_int  # noqa: E402
import search_errors  # noqa: E402
from results_file import command_line, update_section  # noqa: E402

RESULT = REPO_ROOT / "benchmarks" / "results" / "decoding.json"
TASK = {"src_lang": "en", "tgt_lang": "de", "tags": ["caption"]}


def _lines(path, count):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.rstrip("\n") for line, _ in zip(f, range(count))]


def reference_term(reference):
    """The longest capitalised word after the first, punctuation stripped
    (None if there is none of 3+ letters)."""
    words = [re.sub(r"^\W+|\W+$", "", w) for w in reference.split()[1:]]
    nouns = [w for w in words if len(w) >= 3 and w[0].isupper()]
    return max(nouns, key=len) if nouns else None


def _bleu(hypotheses, references):
    from gnmt_tf.evaluation.sacrebleu_scores import score_corpus

    return round(score_corpus(hypotheses, references).bleu, 2)


def constrained_section(translator, task, data_dir, count, beam):
    from gnmt_tf.translator import SearchOptions

    sources = _lines(data_dir / "test_2016_flickr.en.gz", count)
    references = _lines(data_dir / "test_2016_flickr.de.gz", count)
    terms = [reference_term(r) for r in references]
    options = SearchOptions(beam_size=beam, length_penalty=0.6)
    start = time.perf_counter()
    plain = translator.translate(sources, options, **task)
    plain_seconds = time.perf_counter() - start
    start = time.perf_counter()
    constrained = [h[0].text for h in translator.translate_nbest(
        sources, options, constraints=[[t] if t else [] for t in terms],
        **task)]
    constrained_seconds = time.perf_counter() - start

    def usage(outputs):
        used = [t in o.split() or t in o for o, t in zip(outputs, terms)
                if t]
        return round(sum(used) / len(used), 4)

    return {
        "sentences": count,
        "terms": sum(1 for t in terms if t),
        "term_source": "longest capitalised word (a noun) of the German "
                       "reference after its first word",
        "beam_size": beam,
        "term_usage": {"beam": usage(plain), "constrained": usage(constrained)},
        "bleu": {"beam": _bleu(plain, references),
                 "constrained": _bleu(constrained, references)},
        "seconds": {"beam": round(plain_seconds, 1),
                    "constrained": round(constrained_seconds, 1)},
        "examples": [{"source": s, "term": t, "beam": p, "constrained": c}
                     for s, t, p, c in list(zip(sources, terms, plain,
                                                constrained))[:5]],
    }


def decoding_steps(translator, sources, options, task, batch_size=32):
    """The in-graph beam search's steps (`DecodingResult.num_steps`) summed
    over the batches of `sources` (sorted by length, as `Translator`
    batches them): the loop ends when every sentence of a batch stops, so
    pruning saves time only through these."""
    import tensorflow as tf

    from gnmt_tf.decoding.beam_search import beam_search

    model = translator.model
    names = [t.name for t in translator.task_inputs]

    @tf.function(autograph=False)
    def steps(sentences, *task_ids):
        ids = dict(zip(names, task_ids))
        source_ids, lengths = translator.tokenize(sentences, ids)
        max_lengths = translator.max_lengths(lengths, options)
        state = model.initial_state(model.encode(source_ids, **ids),
                                    tf.reduce_max(max_lengths))
        return beam_search(
            model.step, state, tf.fill(tf.shape(lengths), translator.bos_id),
            translator.eos_id, options.beam_size, max_lengths,
            source_lengths=lengths, length_penalty=options.length_penalty,
            beam_width=options.beam_width).num_steps

    task_ids = translator.task_ids(**task)
    order = sorted(sources, key=lambda s: len(translator.subwords.encode([s])[0]))
    total = 0
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        total += int(steps(tf.constant(chunk), *[
            tf.constant([task_ids[n]] * len(chunk)) for n in names]))
    return total


def pruning_section(translate, count_steps, data_dir, count, beam, widths,
                    repeats, clock=time.perf_counter):
    """Times `translate(sources, beam_width) -> texts` without and with each
    pruning width, alternately; `count_steps(sources, beam_width)` gives the
    work done (a dict of counts)."""
    sources = _lines(data_dir / "test_2016_flickr.en.gz", count)
    references = _lines(data_dir / "test_2016_flickr.de.gz", count)
    settings = {"none": None, **{str(w): w for w in widths}}
    outputs, times = {}, {name: [] for name in settings}
    for name, width in settings.items():  # trace each search once
        outputs[name] = translate(sources[:2], width)
    for _ in range(repeats):
        for name, width in settings.items():
            start = clock()
            outputs[name] = translate(sources, width)
            times[name].append(clock() - start)
    median = {name: statistics.median(t) for name, t in times.items()}
    work = {name: count_steps(sources, width)
            for name, width in settings.items()}
    return {
        "sentences": count,
        "clock": "cpu" if clock is time.process_time else "wall",
        "beam_size": beam,
        "length_penalty": 0.6,
        "seconds_median": {n: round(t, 2) for n, t in median.items()},
        "seconds_all": {n: [round(x, 2) for x in t] for n, t in times.items()},
        "speedup": {n: round(median["none"] / median[n], 3)
                    for n in settings if n != "none"},
        "bleu": {n: _bleu(outputs[n], references) for n in settings},
        **{key: {n: work[n][key] for n in settings}
           for key in work["none"]},
        "outputs_changed": {n: sum(a != b for a, b in zip(outputs["none"],
                                                           outputs[n]))
                            for n in settings if n != "none"},
    }


def in_graph_pruning(translator, task, beam, batch_size):
    """`pruning_section`'s two callables for the in-graph search
    (`Translator`, `batch_size` sentences per call)."""
    from gnmt_tf.translator import SearchOptions

    def options(width):
        return SearchOptions(beam_size=beam, length_penalty=0.6,
                             beam_width=width)

    def translate(sources, width):
        return translator.translate(sources, options(width), batch_size,
                                    **task)

    def count_steps(sources, width):
        return {"decoding_steps": decoding_steps(
            translator, sources, options(width), task, batch_size)}

    return translate, count_steps


def host_pruning(host, task, beam, batch_size):
    """`pruning_section`'s two callables for the host search over a TFLite
    file (`HostTranslator`): it steps live hypotheses only, so its work is
    counted in rows (hypothesis-steps) as well as steps."""
    step = host.runtime.step
    counts = {"decoding_steps": 0, "hypothesis_steps": 0}

    def counting_step(ids, state):
        counts["decoding_steps"] += 1
        counts["hypothesis_steps"] += len(ids)
        return step(ids, state)

    host.runtime.step = counting_step

    def translate(sources, width):
        return [h[0].text for h in host.translate_nbest(
            sources, beam_size=beam, length_penalty=0.6, beam_width=width,
            batch_size=batch_size, **task)]

    def count_steps(sources, width):
        counts.update(decoding_steps=0, hypothesis_steps=0)
        translate(sources, width)
        return dict(counts)

    return translate, count_steps


def search_errors_section(translator, task, data_dir, count, max_expansions,
                          beams):
    sentences = search_errors._sentences(
        data_dir / "val.en.gz", translator.subwords, 10, count)
    start = time.perf_counter()
    rows, errors = search_errors.measure(translator, sentences, task, beams,
                                         2.0, max_expansions, 1e-4)
    proven = sum(r["optimal"] for r in rows)
    return {
        "search_errors": {b: e["share"] for b, e in errors.items()},
        "search_error_counts": {b: e["count"] for b, e in errors.items()},
        "sentences": len(rows),
        "proven_optimal": proven,
        "definition": (
            "share of the proven-optimal sentences (dfs finished within "
            "max_expansions) where beam search's best unnormalised score "
            "(no penalties, same max length) is below dfs's by > 1e-4"),
        "data": "multi30k val.en, sentences of <= 10 subwords",
        "max_expansions": max_expansions,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--data-dir", default=str(
        REPO_ROOT.parent / "shared" / "data" / "multi30k"))
    parser.add_argument("--sections",
                        default="search_errors,constrained,gnmt_pruning")
    parser.add_argument("--no-task", action="store_true",
                        help="a model without task inputs (GNMT)")
    parser.add_argument("--errors-sentences", type=int, default=12)
    parser.add_argument("--max-expansions", type=int, default=300)
    parser.add_argument("--constrained-sentences", type=int, default=40)
    parser.add_argument("--pruning-sentences", type=int, default=100)
    parser.add_argument("--beam", type=int, default=10)
    parser.add_argument("--widths", default="3")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pruning-batch-size", type=positive_int, default=32,
                        help="sentences per search call in gnmt_pruning "
                             "(1: each sentence's search stops on its own)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time gnmt_pruning by wall clock or by this "
                             "process's CPU time (steadier on a shared "
                             "machine)")
    parser.add_argument("--tflite", default=None,
                        help="gnmt_pruning through the host search over "
                             "this TFLite file (one thread) instead of the "
                             "in-graph search")
    parser.add_argument("--section-name", default=None,
                        help="the JSON key to write (default: the "
                             "section's name)")
    parser.add_argument("--keep-previous-as", default=None,
                        help="keep the section's previous value under "
                             "this key inside it")
    parser.add_argument("--note", default="")
    parser.add_argument("--output", default=str(RESULT))
    args = parser.parse_args(argv)

    from gnmt_tf.host_translator import HostTranslator
    from gnmt_tf.translator import Translator

    loaded = []

    def translator():  # loaded once, only by the sections that need it
        if not loaded:
            loaded.append(Translator.from_model_dir(args.model_dir))
        return loaded[0]

    task = {} if args.no_task else TASK
    data_dir = pathlib.Path(args.data_dir)
    command = command_line("decoding_search.py", argv)
    common = {"model_dir": args.model_dir, "note": args.note}
    for section in args.sections.split(","):
        start = time.perf_counter()
        if section == "search_errors":
            value = search_errors_section(translator(), task, data_dir,
                                          args.errors_sentences,
                                          args.max_expansions, [1, 4, 10])
        elif section == "constrained":
            value = constrained_section(translator(), task, data_dir,
                                        args.constrained_sentences, 5)
        elif section == "gnmt_pruning":
            if args.tflite:
                host = HostTranslator.from_tflite(args.tflite, num_threads=1)
                engine = host_pruning(host, task, args.beam,
                                      args.pruning_batch_size)
            else:
                engine = in_graph_pruning(translator(), task, args.beam,
                                          args.pruning_batch_size)
            value = pruning_section(
                *engine, data_dir, args.pruning_sentences, args.beam,
                [float(w) for w in args.widths.split(",")], args.repeats,
                time.process_time if args.clock == "cpu" else time.perf_counter)
            value = dict(value, batch_size=args.pruning_batch_size,
                         engine="tflite" if args.tflite else "in-graph",
                         tflite=args.tflite)
        else:
            parser.error(f"unknown section {section!r}")
        value = dict(value, **common,
                     section_seconds=round(time.perf_counter() - start, 1))
        update_section(args.output, args.section_name or section, value,
                       command, keep_previous_as=args.keep_previous_as)
        print(section, {k: v for k, v in value.items()
                        if k not in ("examples", "note")}, flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: Facebook NMT techniques (vocabulary reduction, UNK replacement,
recomputation).

Three sections of `benchmarks/results/decoding.json`, each run on its own:

- `shortlist`: beam-4 decoding of test_2016_flickr en->de with a trained
  model directory, unrestricted and with per-batch shortlists
  (`gnmt_tf.decoding.shortlist`, table from `gnmt-tf lexical-table`), side
  by side: every batch is decoded by every setting in turn (order rotated
  per batch) so load changes on a shared machine hit them alike. Reports
  the speed-up (sum of per-batch wall times), BLEU of each, the mean
  shortlist size per batch and its coverage of the reference's pieces.
- `unk_replacement`: test sentences with an injected name made of
  characters the vocabulary lacks; counts the output `<unk>`s, how many
  were replaced by exactly the injected name (precision), and how many
  outputs contain the name with and without replacement.
- `recompute`: peak memory (RSS high-water mark of a fresh process per
  setting, `resource.getrusage`) and training step time of `gnmt_8x8` and
  `transformer_base` with and without `recompute`, at a fixed small batch
  and a few steps (CPU: random data, the presets' own sizes).

    python benchmarks/decoding_facebook.py shortlist --model DIR \\
        --table lex.tsv [--settings 20:1000,10:300] [--lines 1000]
    python benchmarks/decoding_facebook.py unk --model DIR [--lines 200]
    python benchmarks/decoding_facebook.py recompute [--batch 4] \\
        [--length 16] [--steps 3]
"""

import argparse
import json
import pathlib
import subprocess
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

from results_file import command_line, update_section  # noqa: E402

RESULTS = REPO_ROOT / "benchmarks" / "results" / "decoding.json"
TASK = {"src_lang": "en", "tgt_lang": "de", "tags": ["caption"]}
# Names whose every character is outside a Latin-script Multi30k vocabulary.
NAMES = ("東京", "李明", "김민준", "☃", "北京", "鈴木", "∰", "王芳")


def _data(data_dir, lines):
    from gnmt_tf.data.corpus import read_lines

    base = pathlib.Path(data_dir)
    sources = read_lines(base / "test_2016_flickr.en.gz")[:lines]
    references = read_lines(base / "test_2016_flickr.de.gz")[:lines]
    return sources, references


def run_shortlist(args):
    import numpy as np
    import sacrebleu
    import tensorflow as tf

    from gnmt_tf.decoding.shortlist import Shortlist, coverage
    from gnmt_tf.text.lexical_table import read_lexical_table
    from gnmt_tf.translator import SearchOptions, Translator

    base = Translator.from_model_dir(args.model)
    model, subwords = base.model, base.subwords
    table = read_lexical_table(args.table)
    settings = [tuple(int(x) for x in s.split(":"))
                for s in args.settings.split(",")]
    translators = {"full": base}
    shortlists = {}
    for top_k, frequent in settings:
        name = f"top{top_k}_freq{frequent}"
        shortlists[name] = Shortlist.from_table(table, subwords, top_k=top_k,
                                                frequent=frequent)
        translators[name] = Translator(model, subwords,
                                       shortlist=shortlists[name])
    sources, references = _data(args.data_dir, args.lines)
    options = SearchOptions(beam_size=4)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    batches = [order[i:i + args.batch_size]
               for i in range(0, len(order), args.batch_size)]
    for translator in translators.values():  # warm-up: tracing
        translator.translate([sources[i] for i in batches[0]], options,
                             batch_size=args.batch_size, **TASK)
    outputs = {name: [""] * len(sources) for name in translators}
    seconds = {name: 0.0 for name in translators}
    names = list(translators)
    for number, batch in enumerate(batches):
        chunk = [sources[i] for i in batch]
        for name in names[number % len(names):] + names[:number % len(names)]:
            start = time.perf_counter()
            texts = translators[name].translate(
                chunk, options, batch_size=args.batch_size, **TASK)
            seconds[name] += time.perf_counter() - start
            for i, text in zip(batch, texts):
                outputs[name][i] = text
    # Shortlist sizes and reference coverage, per batch as decoded.
    sizes = {name: [] for name in shortlists}
    covered = {name: [] for name in shortlists}
    ref_ids = subwords.encode(references)
    ids = base.task_ids(**TASK)
    task = {k: tf.constant([v]) for k, v in ids.items()}
    for batch in batches:
        tokenized = [base.tokenize(tf.constant([sources[i]]),
                                   task)[0][0].numpy() for i in batch]
        width = max(len(t) for t in tokenized)
        source_ids = np.stack([np.pad(t, (0, width - len(t)))
                               for t in tokenized])
        for name, shortlist in shortlists.items():
            rows = shortlist.ids(source_ids).numpy()
            sizes[name].append(len(rows))
            covered[name].append(coverage(
                rows, [t for i in batch for t in ref_ids[i]]))
    bleu = {name: round(sacrebleu.corpus_bleu(outputs[name],
                                              [references]).score, 2)
            for name in translators}
    value = {
        "model": str(args.model), "table": str(args.table),
        "test_set": "test_2016_flickr en->de", "lines": len(sources),
        "beam_size": 4, "batch_size": args.batch_size,
        "vocabulary_size": model.config.vocabulary_size,
        "full": {"seconds": round(seconds["full"], 2),
                 "bleu": bleu["full"]},
        "settings": {},
    }
    for (top_k, frequent), name in zip(settings, shortlists):
        value["settings"][name] = {
            "top_k": top_k, "frequent": frequent,
            "seconds": round(seconds[name], 2),
            "speedup": round(seconds["full"] / seconds[name], 3),
            "bleu": bleu[name],
            "bleu_change": round(bleu[name] - bleu["full"], 2),
            "mean_shortlist_size": round(float(np.mean(sizes[name])), 1),
            "mean_shortlist_fraction": round(
                float(np.mean(sizes[name])) / model.config.vocabulary_size,
                3),
            "reference_piece_coverage": round(
                float(np.mean(covered[name])), 4),
            "identical_outputs": sum(a == b for a, b in zip(
                outputs[name], outputs["full"])),
        }
    print(json.dumps(value, indent=2, ensure_ascii=False))
    update_section(RESULTS, "shortlist", value,
                   command_line("decoding_facebook.py"))


def _bias_unk(model, bias):
    """Adds `bias` to the `<unk>` logit of `model`'s steps (a stand-in for
    a model trained with `<unk>`s; benchmark probe only)."""
    import tensorflow as tf

    from gnmt_tf.text.subword import UNK_ID

    original = type(model).output_logits

    def output_logits(hidden, rows=None):
        logits = original(model, hidden, rows)
        ids = tf.range(model.config.vocabulary_size) if rows is None else rows
        return logits + bias * tf.cast(tf.equal(ids, UNK_ID), logits.dtype)

    model.output_logits = output_logits


def run_unk(args):
    import tensorflow as tf

    from gnmt_tf.text.subword import UNK_ID
    from gnmt_tf.translator import SearchOptions, Translator
    from gnmt_tf.unk_replacement import UnkReplacer

    sources, _ = _data(args.data_dir, args.lines)
    options = SearchOptions(beam_size=4)
    value = {
        "model": str(args.model), "lines": len(sources), "beam_size": 4,
        "injection": "'named <NAME>' after the first two words of each "
                     "test_2016_flickr en sentence; en->de",
        "method": "copy: the source <unk> piece the output <unk> attends "
                  "to most (precision_attention_argmax_only: the attention "
                  "argmax over all source pieces); its surface recovered "
                  "with SentencePiece offsets",
        "unk_logit_bias": {},
    }
    for bias in (float(b) for b in args.unk_bias.split(",")):
        translator = Translator.from_model_dir(args.model)
        subwords = translator.subwords
        if bias:
            _bias_unk(translator.model, bias)
        names = [n for n in NAMES
                 if all(i == UNK_ID for i, _ in subwords.encode_pieces(n)
                        if _.strip("▁"))]
        value["names"] = names
        injected = []
        for number, sentence in enumerate(sources):
            name = names[number % len(names)]
            words = sentence.split()
            # "A man named 東京 ...": the name after the first two words.
            words.insert(2, f"named {name}")
            injected.append((" ".join(words), name))
        texts = [s for s, _ in injected]
        plain = translator.translate(texts, options, **TASK)
        translator.unk_replacer = replacer = UnkReplacer(subwords)
        replaced = translator.translate(texts, options, **TASK)
        # Count <unk>s and score every replacement from the search's details.
        ids = translator.task_ids(**TASK)
        function = translator.search_fn(options, details=True)
        argmax_only = UnkReplacer(subwords, source_unk_first=False)
        unks = correct = correct_argmax = 0
        for start in range(0, len(texts), 32):
            chunk = injected[start:start + 32]
            out = function(tf.constant([s for s, _ in chunk]),
                           *[tf.constant([ids[t.name]] * len(chunk))
                             for t in translator.task_inputs])
            for b, (sentence, name) in enumerate(chunk):
                length = int(out["lengths"][b, 0])
                hyp = (sentence, out["ids"][b, 0, :length].numpy(),
                       out["attention"][b, 0, :length].numpy())
                _, replacements = replacer.replace_detailed(*hyp)
                unks += len(replacements)
                correct += sum(r.replacement == name for r in replacements)
                _, replacements = argmax_only.replace_detailed(*hyp)
                correct_argmax += sum(r.replacement == name
                                      for r in replacements)
        value["unk_logit_bias"][str(bias)] = {
            "output_unks": unks,
            "replaced_correctly": correct,
            "precision": round(correct / unks, 4) if unks else None,
            "precision_attention_argmax_only": (
                round(correct_argmax / unks, 4) if unks else None),
            "outputs_with_name_plain": sum(
                n in t for t, (_, n) in zip(plain, injected)),
            "outputs_with_name_replaced": sum(
                n in t for t, (_, n) in zip(replaced, injected)),
            "outputs_with_unk_mark_plain": sum("⁇" in t for t in plain),
        }
        print(bias, value["unk_logit_bias"][str(bias)], flush=True)
    print(json.dumps(value, indent=2, ensure_ascii=False))
    update_section(RESULTS, "unk_replacement", value,
                   command_line("decoding_facebook.py"))


_STEP_SCRIPT = r"""
import json, resource, sys, time
import gnmt_tf
import tensorflow as tf
import tf_keras as keras
preset, recompute, batch, length, steps = sys.argv[1:6]
batch, length, steps = int(batch), int(length), int(steps)
recompute = recompute == "1"
keras.utils.set_random_seed(0)
if preset.startswith("gnmt"):
    import dataclasses
    from gnmt_tf.models.gnmt.model import GNMT
    from gnmt_tf.models.gnmt.presets import get_preset
    config = dataclasses.replace(get_preset(preset)[0], recompute=recompute)
    model = GNMT(config)
    task = {}
else:
    from gnmt_tf.models.task_space.task_space_transformer import TaskSpaceTransformer
    model = TaskSpaceTransformer.from_preset(preset, recompute=recompute)
    config = model.config
    task = {"src_lang": tf.zeros([batch], tf.int32),
            "tgt_lang": tf.ones([batch], tf.int32),
            "tags": tf.one_hot(tf.zeros([batch], tf.int32),
                               config.num_tags)}
vocab = config.vocabulary_size
inputs = {"source_ids": tf.random.uniform([batch, length], 4, vocab, tf.int32),
          "target_in_ids": tf.random.uniform([batch, length], 4, vocab,
                                             tf.int32), **task}
labels = tf.random.uniform([batch, length], 4, vocab, tf.int32)
model(inputs)
optimizer = keras.optimizers.Adam(1e-4)
optimizer.build(model.trainable_variables)

@tf.function
def train_step():
    with tf.GradientTape() as tape:
        logits = model(inputs, training=True)
        loss = tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

before = rss_mib()
times = []
for _ in range(steps):
    start = time.perf_counter()
    float(train_step())
    times.append(time.perf_counter() - start)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"rss_before_steps_mib": before, "peak_rss_mib": peak,
                  "step_seconds": times}))
"""


def _measure(preset, recompute, args):
    result = subprocess.run(
        [sys.executable, "-c", _STEP_SCRIPT, preset, str(int(recompute)),
         str(args.batch), str(args.length), str(args.steps)],
        capture_output=True, text=True, cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin",
             "TF_CPP_MIN_LOG_LEVEL": "2"})
    if result.returncode:
        raise RuntimeError(f"{preset} recompute={recompute}: "
                           f"{result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_recompute(args):
    value = {"steps": args.steps,
             "note": "CPU, random data, one fresh process per setting; "
                     "step time = median of the steps after the first "
                     "(tracing); peak = RSS high-water mark of the process "
                     "(weights, Adam slots and activations)",
             "models": {}}
    if RESULTS.exists():  # other batch shapes measured before are kept
        previous = json.loads(RESULTS.read_text()).get("recompute", {})
        value["models"].update(previous.get("models", {}))
    for preset in args.presets.split(","):
        runs = {}
        for recompute in (False, True):
            runs[recompute] = _measure(preset, recompute, args)
        plain, checkpointed = runs[False], runs[True]

        def median(xs):
            xs = sorted(xs[1:] or xs)
            return xs[len(xs) // 2]

        activation = {k: r["peak_rss_mib"] - r["rss_before_steps_mib"]
                      for k, r in runs.items()}
        key = (preset if (args.batch, args.length) == (4, 16)
               else f"{preset} at batch {args.batch}x{args.length}")
        value["models"][key] = {
            "batch": args.batch, "length": args.length,
            "command": command_line("decoding_facebook.py"),
            "peak_rss_mib": {"plain": round(plain["peak_rss_mib"], 1),
                             "recompute": round(checkpointed["peak_rss_mib"],
                                                1)},
            "peak_memory_ratio": round(checkpointed["peak_rss_mib"]
                                       / plain["peak_rss_mib"], 3),
            "peak_above_weights_mib": {k and "recompute" or "plain":
                                       round(v, 1)
                                       for k, v in activation.items()},
            "step_seconds": {"plain": round(median(plain["step_seconds"]), 3),
                             "recompute": round(
                                 median(checkpointed["step_seconds"]), 3)},
            "step_time_ratio": round(median(checkpointed["step_seconds"])
                                     / median(plain["step_seconds"]), 3),
        }
        print(key, json.dumps(value["models"][key]), flush=True)
        update_section(RESULTS, "recompute", value,  # after each model
                       command_line("decoding_facebook.py"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="section", required=True)
    data_dir = "/work/shared/data/multi30k"
    shortlist = sub.add_parser("shortlist")
    shortlist.add_argument("--model", required=True)
    shortlist.add_argument("--table", required=True)
    shortlist.add_argument("--settings", default="20:1000")
    shortlist.add_argument("--lines", type=int, default=1000)
    shortlist.add_argument("--batch-size", type=int, default=32)
    shortlist.add_argument("--data-dir", default=data_dir)
    unk = sub.add_parser("unk")
    unk.add_argument("--model", required=True)
    unk.add_argument("--lines", type=int, default=200)
    unk.add_argument("--unk-bias", default="0",
                     help="comma-separated logit biases on <unk> to probe "
                          "with (0 = the model as trained)")
    unk.add_argument("--data-dir", default=data_dir)
    recompute = sub.add_parser("recompute")
    recompute.add_argument("--presets", default="transformer_base,gnmt_8x8")
    recompute.add_argument("--batch", type=int, default=4)
    recompute.add_argument("--length", type=int, default=16)
    recompute.add_argument("--steps", type=int, default=3)
    args = parser.parse_args(argv)
    {"shortlist": run_shortlist, "unk": run_unk,
     "recompute": run_recompute}[args.section](args)


if __name__ == "__main__":
    main()

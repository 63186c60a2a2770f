"""Benchmark: placeholder restoration through the convolutional alignment head.

1. Aligns Multi30k en-de and de-fr (train + test_2016_flickr +
   test_2017_flickr, lower-cased, simply tokenised) with our fast_align
   (`-d -o -v`, both directions, grow-diag-final-and).
2. Builds the restoration test set from test_2016_flickr + test_2017_flickr
   en-de: in every pair, 2-4 content words linked one-to-one to a target
   word are replaced on both sides by placeholders of ONE type (a random type
   per sentence), so each sentence has at least two placeholders of the same
   type and their order matters. The gold source entity of each target
   placeholder is known from the links.
3. Trains a task-space Transformer with the head (joint loss) on Multi30k
   train en-de, de-fr and fr-de, augmented with `augment_with_alignment`
   (real entities) and with the same one-type word replacement (rate
   `--augment-rate`), for `--minutes` of wall time.
4. Measures, on the test set, with the reference (masked) as a forced
   output: the fraction of target placeholders mapped to the right source
   entity by (a) left-to-right order, (b) raw attention argmax (mean over
   layers and heads), (c) the head with a per-type assignment. Forcing the
   reference isolates restoration from translation errors; the model's own
   greedy outputs are measured for how many placeholders it carries
   (`placeholder_carry_rate`).
5. Alignment error rate of the head (probability > 0.5) and of attention
   argmax against fast_align's subword links on the unmasked test pairs
   (held out from translation training; fast_align saw them, as its links
   are the reference).
6. WMT22 de-fr and fr-de: segments with `#NAME#`-style tags are masked to
   our placeholders, translated, restored through the head (missing ones
   repaired), and the fraction of tags kept intact is reported (also what
   the model carried by itself, before repair).

    python benchmarks/alignment.py --data-dir ../shared/data/multi30k \\
        --wmt22-dir ../shared/data/wmt22 --minutes 20
    # later: 40 more minutes of the same model
    python benchmarks/alignment.py ... --minutes 60 --resume

`--smoke` runs a tiny configuration end to end in a few minutes (figures
meaningless). Writes `benchmarks/results/alignment.json` (fast_align speed
and F1s are copied from `benchmarks/results/fast_align.json`).
"""

import argparse
import json
import os
import pathlib
import random
import re
import shutil
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import gnmt_tf  # noqa: E402,F401

import numpy as np  # noqa: E402

from gnmt_tf.alignment.head_training import corpus_links  # noqa: E402
from gnmt_tf.alignment.placeholders import (PLACEHOLDER_TOKENS,  # noqa: E402
                                            PLACEHOLDER_TYPES, Masker,
                                            augment_with_alignment, placeholder)

_TOKEN = re.compile(r"\u27e6[A-Z]+\u27e7|\w+(?:['’-]\w+)*|[^\w\s]")
_STOP = set("""the and with for from that this are while into their his her
its who has have near some two three four front other down over out off
der die das den dem des und mit ein eine einer einem einen eines auf vor
ist sind von zum zur bei aus sich neben les des une avec dans sur pour qui
est sont par aux près devant deux trois""".split())
LANGS = ("en", "de", "fr")


def tokenize(text):
    return _TOKEN.findall(text)


def read(data_dir, split, lang, limit=None):
    from gnmt_tf.data import corpus
    lines = corpus.read_lines(corpus.split_path(data_dir, split, lang))
    return lines[:limit] if limit else lines


def fast_align_links(pairs):
    """grow-diag-final-and links `(i, j)` of token-list pairs."""
    return corpus_links(pairs)


def candidates(source, target, links):
    """One-to-one linked content-word pairs `(i, j)`."""
    by_source, by_target = {}, {}
    for i, j in links:
        by_source.setdefault(i, []).append(j)
        by_target.setdefault(j, []).append(i)
    found = []
    for i, js in by_source.items():
        if len(js) != 1 or len(by_target[js[0]]) != 1:
            continue
        j = js[0]
        s, t = source[i], target[j]
        if (s.isalpha() and t.isalpha() and len(s) >= 3 and len(t) >= 3
                and s.lower() not in _STOP and t.lower() not in _STOP):
            found.append((i, j))
    return found


def replace_words(source, target, chosen, kind):
    """Replaces the chosen `(i, j)` tokens by one placeholder type.

    Returns `(source, target, gold)`: gold[n] = source entity index of the
    n-th target placeholder (entities numbered left to right in the source).
    """
    token = placeholder(kind)
    source, target = list(source), list(target)
    order = sorted(i for i, _ in chosen)
    entity_of = {i: order.index(i) for i in order}
    for i, j in chosen:
        source[i] = target[j] = token
    gold = [entity_of[i] for i, j in sorted(chosen, key=lambda c: c[1])]
    return source, target, gold


def augment_pair(source, target, links, rng, rate, masker):
    augmented = augment_with_alignment(source, target, links, masker=masker,
                                       rate=1.0)
    source, target, links = (augmented.source, augmented.target,
                             augmented.links)
    if rng.random() < rate:
        found = candidates(source, target, links)
        if found:
            k = min(len(found), rng.choice((1, 2, 2, 3, 3, 4)))
            source, target, _ = replace_words(
                source, target, rng.sample(found, k),
                rng.choice(PLACEHOLDER_TYPES))
    return source, target, links


def restoration_test_set(pairs, links, rng):
    rows = []
    for (source, target), pair_links in zip(pairs, links):
        found = candidates(source, target, pair_links)
        if len(found) < 2:
            continue
        k = min(len(found), rng.choice((2, 2, 3, 4)))
        s, t, gold = replace_words(source, target, rng.sample(found, k),
                                   rng.choice(PLACEHOLDER_TYPES))
        rows.append((s, t, gold))
    return rows


def encode_links(subwords, source_text, target_text, word_links):
    from gnmt_tf.alignment.aligned_model import link_pairs, subword_links
    return link_pairs(subword_links(subwords.pieces(source_text),
                                    subwords.pieces(target_text), word_links))


class TokenizingMasker:
    """A masker whose masked text is tokenised like the training data."""

    def __init__(self, masker):
        self.masker = masker

    def mask(self, text):
        masked, entities = self.masker.mask(text)
        return " ".join(tokenize(masked)), entities


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=os.environ.get("GNMT_TF_DATA"))
    parser.add_argument("--wmt22-dir", default=None)
    parser.add_argument("--minutes", type=float, default=20.0)
    parser.add_argument("--max-lines", type=int, default=None,
                        help="first training lines per language (all)")
    parser.add_argument("--vocab-size", type=int, default=6000)
    parser.add_argument("--preset", default="transformer_small")
    parser.add_argument("--set", nargs="*", default=[],
                        help="TransformerConfig overrides key=value")
    parser.add_argument("--max-tokens", type=int, default=3072)
    parser.add_argument("--alignment-weight", type=float, default=0.5)
    parser.add_argument("--augment-rate", type=float, default=0.5)
    parser.add_argument("--no-hard-negatives", action="store_true",
                        help="sample negatives only at random (pure Ctrip)")
    parser.add_argument("--attention-gradient", action="store_true",
                        help="let the alignment loss train the attention")
    parser.add_argument("--decode-lines", type=int, default=200)
    parser.add_argument("--work-dir",
                        default=str(REPO_ROOT / "benchmarks/runs/alignment"))
    parser.add_argument("--out", default=None, help="default: "
                        "benchmarks/results/alignment.json (alignment_smoke"
                        ".json with --smoke)")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny data and model, for a quick check")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--resume", action="store_true",
                        help="keep --work-dir: continue the model's training "
                             "(--minutes counts the earlier runs' time too)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.max_lines = args.max_lines or 1500
        args.vocab_size = min(args.vocab_size, 1500)
        args.preset = "transformer_tiny"
        args.set = args.set or ["hidden_dim=32", "intermediate_dim=64",
                                "max_sequence_length=64"]
        args.decode_lines = min(args.decode_lines, 20)
        args.test_lines = 200
    else:
        args.test_lines = None
    if args.out is None:
        args.out = str(REPO_ROOT / "benchmarks/results" / (
            "alignment_smoke.json" if args.smoke else "alignment.json"))
    started = time.time()
    rng = random.Random(args.seed)
    data_dir = pathlib.Path(args.data_dir)

    import tf_keras as keras

    from gnmt_tf.alignment.aligned_model import (AlignedTranslationModel,
                                                 alignment_error_rate,
                                                 make_aligned_dataset,
                                                 predicted_links, subword_links)
    from gnmt_tf.alignment.conv_alignment_head import ConvAlignmentHead
    from gnmt_tf.alignment.placeholder_translation import (HashPlaceholderMasker,
                                                           PlaceholderTranslator,
                                                           map_placeholders,
                                                           placeholder_positions,
                                                           preserved_fraction)
    from gnmt_tf.config import TrainConfig
    from gnmt_tf.text.subword import Subwords, train_sentencepiece
    from gnmt_tf.training import trainer
    from gnmt_tf.translator import SearchOptions, Translator
    from gnmt_tf.models.task_space.config import TransformerConfig
    from gnmt_tf.models.task_space.task_space_translation_model import (
                                                                        TaskSpaceTranslationModel)

    # --- Data and fast_align links -------------------------------------------
    tests = ("test_2016_flickr", "test_2017_flickr")
    text = {lang: {"train": read(data_dir, "train", lang, args.max_lines)}
            for lang in LANGS}
    for lang in LANGS:
        text[lang]["test"] = [line for split in tests
                              for line in read(data_dir, split, lang,
                                               args.test_lines)]
    tokens = {lang: {split: [tokenize(s) for s in lines]
                     for split, lines in splits.items()}
              for lang, splits in text.items()}
    n_train = len(tokens["en"]["train"])
    t0 = time.time()
    links = {}
    for src, tgt in (("en", "de"), ("de", "fr")):
        pairs = list(zip(tokens[src]["train"] + tokens[src]["test"],
                         tokens[tgt]["train"] + tokens[tgt]["test"]))
        every = fast_align_links(pairs)
        links[(src, tgt)] = {"train": every[:n_train],
                             "test": every[n_train:]}
        links[(tgt, src)] = {split: [[(j, i) for i, j in sentence]
                                     for sentence in value]
                             for split, value in links[(src, tgt)].items()}
    align_seconds = time.time() - t0
    print(f"fast_align: {align_seconds:.0f} s", file=sys.stderr)

    # --- Training data ----------------------------------------------------------
    directions = (("en", "de"), ("de", "fr"), ("fr", "de"))
    training = []  # (src_lang, tgt_lang, source text, target text, links)
    for src, tgt in directions:
        masker = Masker(capitalized_names=(src != "de"))
        for s, t, pair_links in zip(tokens[src]["train"],
                                    tokens[tgt]["train"],
                                    links[(src, tgt)]["train"]):
            if not s or not t:
                continue
            s, t, pair_links = augment_pair(s, t, pair_links, rng,
                                            args.augment_rate, masker)
            training.append((src, tgt, " ".join(s), " ".join(t), pair_links))
    test_rows = restoration_test_set(
        list(zip(tokens["en"]["test"], tokens["de"]["test"])),
        links[("en", "de")]["test"], rng)
    print(f"{len(training)} training pairs, {len(test_rows)} test "
          f"sentences", file=sys.stderr)

    work = pathlib.Path(args.work_dir)
    if work.exists() and not args.resume:
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    spm_path = work / "spm.model"
    if not spm_path.exists():
        vocabulary = sorted({row[2] for row in training}
                            | {row[3] for row in training})
        spm_path = train_sentencepiece(
            vocabulary, work / "spm", args.vocab_size,
            user_defined_symbols=PLACEHOLDER_TOKENS)
    subwords = Subwords(spm_path)
    config = TransformerConfig.from_preset(
        args.preset, vocabulary_size=subwords.vocabulary_size,
        **{k: type(getattr(TransformerConfig.from_preset(args.preset), k))(v)
           for k, v in (item.split("=", 1) for item in args.set)})
    source_ids = subwords.encode([row[2] for row in training])
    target_ids = subwords.encode([row[3] for row in training])
    pair_links = [encode_links(subwords, row[2], row[3], row[4])
                  for row in training]
    task = {"src_lang": [config.language_id(r[0]) for r in training],
            "tgt_lang": [config.language_id(r[1]) for r in training],
            "tags": [config.tag_vector(["caption"])] * len(training)}
    train_config = TrainConfig(
        max_tokens=args.max_tokens, max_length=min(
            64, config.max_sequence_length), learning_rate=1e-3,
        warmup_steps=400 if not args.smoke else 20, label_smoothing=0.1,
        clip_norm=1.0, max_minutes=args.minutes, checkpoint_every=200,
        shuffle_buffer=30000, seed=args.seed)
    dataset = make_aligned_dataset(
        source_ids, target_ids, pair_links, train_config.max_tokens,
        train_config.max_length, task_inputs=task,
        shuffle_buffer=train_config.shuffle_buffer, seed=args.seed)
    keras.utils.set_random_seed(args.seed)
    aligned = AlignedTranslationModel(
        TaskSpaceTranslationModel(config),
        ConvAlignmentHead(filters=(32, 32), name="alignment_head"),
        alignment_weight=args.alignment_weight,
        stop_gradient=not args.attention_gradient,
        mine_hard_negatives=not args.no_hard_negatives)
    trainer.compile_model(aligned, train_config, config.pad_id)
    result = trainer.fit(aligned, train_config, dataset, work / "model",
                         log_every=100)
    print(f"trained {result.steps} steps in {result.seconds:.0f} s",
          file=sys.stderr)

    # --- Restoration accuracy (forced reference) ----------------------------------
    en, de = config.language_id("en"), config.language_id("de")
    caption = config.tag_vector(["caption"])

    def forced(sources, targets, src_id, tgt_id):
        n = len(sources)
        return aligned.forced_alignment(
            subwords.encode(sources), subwords.encode(targets),
            {"src_lang": [src_id] * n, "tgt_lang": [tgt_id] * n,
             "tags": [caption] * n})

    test_sources = [" ".join(s) for s, _, _ in test_rows]
    test_targets = [" ".join(t) for _, t, _ in test_rows]
    probabilities, attention = forced(test_sources, test_targets, en, de)
    correct = {m: 0 for m in ("order", "attention_argmax", "conv_head",
                              "attention_assignment")}
    total = order_differs = differs_total = 0
    correct_differs = {m: 0 for m in correct}
    for n, (_, _, gold) in enumerate(test_rows):
        source_pieces = subwords.pieces(test_sources[n])
        target_pieces = subwords.pieces(test_targets[n])
        if len(placeholder_positions(target_pieces)) != len(gold):
            continue  # a placeholder merged by the tokeniser (never seen)
        total += len(gold)
        differs = gold != sorted(gold)
        order_differs += differs
        differs_total += len(gold) if differs else 0
        for method, scores, how in (
                ("order", None, "order"),
                ("attention_argmax", attention[n], "attention_argmax"),
                ("conv_head", probabilities[n], "conv_head"),
                ("attention_assignment", attention[n], "conv_head")):
            mapping = map_placeholders(scores, source_pieces, target_pieces,
                                       how)
            hits = sum(int(a == b) for a, b in zip(mapping, gold))
            correct[method] += hits
            correct_differs[method] += hits if differs else 0
    accuracy = {m: c / max(total, 1) for m, c in correct.items()}
    accuracy_differs = {m: c / max(differs_total, 1)
                        for m, c in correct_differs.items()}
    print(f"restoration accuracy: {accuracy}", file=sys.stderr)

    # The model's own outputs: how many placeholders it carries.
    translator = Translator(aligned, subwords)
    subset = test_sources[:args.decode_lines]
    outputs = translator.translate(subset, SearchOptions(beam_size=1),
                                   src_lang="en", tgt_lang="de",
                                   tags=["caption"])
    carried = wanted = 0
    for source, output in zip(subset, outputs):
        for token in PLACEHOLDER_TOKENS:
            count = source.count(token)
            wanted += count
            carried += min(count, output.count(token))
    carry_rate = carried / max(wanted, 1)

    # --- Alignment error rate --------------------------------------------------------
    plain_sources = [" ".join(s) for s in tokens["en"]["test"]]
    plain_targets = [" ".join(t) for t in tokens["de"]["test"]]
    keep = [i for i, (s, t) in enumerate(zip(plain_sources, plain_targets))
            if s and t and len(subwords.encode([s])[0]) < 100]
    plain_sources = [plain_sources[i] for i in keep]
    plain_targets = [plain_targets[i] for i in keep]
    probabilities, attention = forced(plain_sources, plain_targets, en, de)
    reference, head_links, argmax_links, head_argmax_links = [], [], [], []
    for n, i in enumerate(keep):
        s_pieces = subwords.pieces(plain_sources[n])
        t_pieces = subwords.pieces(plain_targets[n])
        reference.append(subword_links(s_pieces, t_pieces,
                                       links[("en", "de")]["test"][i]))
        head_links.append(predicted_links(probabilities[n], 0.5,
                                          len(s_pieces), len(t_pieces)))
        rows = attention[n][:len(t_pieces), :len(s_pieces)]
        argmax_links.append([(int(np.argmax(r)), t)
                             for t, r in enumerate(rows)])
        rows = probabilities[n][:len(t_pieces), :len(s_pieces)]
        head_argmax_links.append([(int(np.argmax(r)), t)
                                  for t, r in enumerate(rows)])
    aer = {"conv_head": alignment_error_rate(head_links, reference),
           "attention_argmax": alignment_error_rate(argmax_links, reference),
           "conv_head_row_argmax": alignment_error_rate(head_argmax_links,
                                                        reference),
           "sentences": len(reference)}
    print(f"AER: {aer}", file=sys.stderr)

    # --- WMT22 ---------------------------------------------------------------------
    wmt = {}
    wmt_detail = {}
    if args.wmt22_dir:
        from gnmt_tf.data.multiway import read_wmt22_tsv
        for src, tgt in (("de", "fr"), ("fr", "de")):
            rows = read_wmt22_tsv(pathlib.Path(args.wmt22_dir)
                                  / f"generaltest2022.{src}-{tgt}.tsv")
            sources = [r["source"] for r in rows
                       if re.search(r"#[A-Z][A-Z_]*#", r["source"])]
            path = PlaceholderTranslator(
                translator, aligned,
                TokenizingMasker(HashPlaceholderMasker()),
                method="conv_head", repair=True)
            t0 = time.time()
            results = path.translate_detailed(
                sources, options=SearchOptions(beam_size=1), src_lang=src,
                tgt_lang=tgt, tags=["caption"])
            outputs = [r.translation for r in results]
            key = f"{src}-{tgt}"
            wmt[key] = preserved_fraction(sources, outputs)
            total_tags = sum(len(r.entities) for r in results)
            repaired = sum(r.repaired for r in results)
            wmt_detail[key] = {
                "segments": len(sources), "tags": total_tags,
                "model_carried_fraction": 1.0 - repaired / max(total_tags, 1),
                "seconds": time.time() - t0,
                "examples": [{"source": s, "output": o} for s, o in
                             list(zip(sources, outputs))[:3]]}
            print(f"WMT22 {key}: {wmt[key]:.4f} ({wmt_detail[key]})",
                  file=sys.stderr)

    fast_align_json = REPO_ROOT / "benchmarks/results/fast_align.json"
    fast = {"sentences_per_s": None, "f1_vs_original": None,
            "f1_vs_original_2k_fixture": None}
    if fast_align_json.exists():
        saved = json.loads(fast_align_json.read_text())
        fixture = saved.get("reference_fixture") or {}
        fast = {"sentences_per_s": saved.get("sentences_per_s"),
                "f1_vs_original": saved.get("f1_vs_original"),
                "f1_vs_original_2k_fixture": fixture.get("f1_vs_original")}
    command = "python benchmarks/alignment.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    results = {
        "placeholder_restoration_accuracy": {
            k: accuracy[k] for k in ("order", "attention_argmax",
                                     "conv_head")},
        "wmt22_placeholder_preservation": wmt,
        "fast_align": fast,
        "alignment_error_rate": aer,
        "command": command,
        "smoke": bool(args.smoke),
        "details": {
            "restoration_attention_with_assignment":
                accuracy["attention_assignment"],
            "restoration_placeholders": total,
            "restoration_sentences": len(test_rows),
            "restoration_sentences_order_differs": order_differs,
            "restoration_accuracy_where_order_differs": accuracy_differs,
            "restoration_protocol": "reference forced through the model",
            "placeholder_carry_rate_greedy": carry_rate,
            "carry_rate_sentences": len(subset),
            "wmt22": wmt_detail,
            "train_steps": result.steps, "train_seconds": result.seconds,
            "train_pairs": len(training), "model": config.to_dict(),
            "fast_align_seconds_this_run": align_seconds,
            "wall_seconds": time.time() - started,
            "load_average_1min": os.getloadavg()[0],
            "options": vars(args),
        },
    }
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_suffix(".tmp")
    staging.write_text(json.dumps(results, indent=2, ensure_ascii=False)
                       + "\n")
    os.replace(staging, out)
    print(json.dumps({k: v for k, v in results.items() if k != "details"},
                     indent=2))


if __name__ == "__main__":
    main()

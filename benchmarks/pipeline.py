"""Benchmark: the document pipeline's steps on Multi30k and WMT22.

Writes `benchmarks/results/pipeline.json` with (every figure from one run,
the command recorded):

- `lid_accuracy` (+ `lid_per_language`): lingua restricted to en/de/fr/cs on
  test_2016_flickr sentences of the four languages as one mixed list
  (`--lid-limit` per language).
- `sentence_split_exact`: paragraphs of 2-6 consecutive test_2016_flickr
  sentences per language (`benchmarks/sentence_split.py`'s paragraphs and
  splitters): fraction split back exactly, ours and pysbd / sentencex.
- `html_structure_preserved`: generated HTML and XHTML documents (test
  sentences in block elements with inline `b`, `i`, `a href`, `span class`,
  `img alt`) translated en->de: fraction whose output is well-formed with
  the same element tree (tags and attributes, `alt`/`title` values
  excepted; inline siblings may be reordered, `..._ordered` counts them in
  order). `html_bleu_delta`: BLEU of the text of the HTML output minus the
  BLEU of the same sentences translated as plain text.
- `markup_placement`: each inline element's output words against the
  hull of the output words fast_align links to the words it wrapped in the
  source (exact-span rate and word F1), for the pipeline as run and, when
  the model has an alignment head, for the same model aligning by its
  attention.
- `wmt22_placeholder_preservation`: WMT22 de-fr and fr-de segments with
  `#NAME#`-style tags (`--wmt22-limit` per direction), masked by
  `HashPlaceholderMasker`: fraction of tags intact in the pipeline output,
  and what the model carried by itself (before repair).
- `glossary_term_usage`: test_2016_flickr en->de; a per-sentence glossary of
  content words linked one-to-one to a reference word by fast_align
  (grow-diag-final-and, fitted on Multi30k train + these sentences): the
  fraction of glossary targets in the output with and without the glossary,
  and the BLEU change (an oracle glossary from the reference, so the BLEU
  gain is an upper bound).
- `qe_spearman_chrf`: Spearman between the quality estimate and sentence
  chrF on test_2017_flickr en->de (`--qe-limit` sentences); the weights are
  fit on val en->de (`qe_fit`), and each feature's own Spearman is listed.
- `throughput_docs_per_s` and `cache_hit_speedup`: plain-text documents of
  test_2016_flickr de sentences translated de->en, first cold (model), then
  again (every sentence a cache hit), side by side in one run.
- `batch` (section "batch", not in "all"): `--batch-docs` such documents as
  files, translated de->en by `gnmt-tf translate-documents` (one process)
  and by a loop of `gnmt-tf translate --format text` (one process a
  document), each timed end to end (process start and model load
  included), greedy; the outputs must be identical. Also a rerun of the
  batch job (every document up to date).

Model: a task-space Transformer (`--model-dir`: a directory or the shipped
`multi30k-transformer`; 12 Multi30k directions, tag `caption`), greedy
search; the backend returns `SentenceResult`s with the length-normalised
log-probability and the alignment of a teacher-forced pass: the model's
alignment head (`gnmt-tf add-alignment-head`) when it has one, else the
mean cross-attention over layers and heads.

    python benchmarks/pipeline.py --model-dir multi30k-transformer \\
        --data-dir ../shared/data/multi30k --wmt22-dir ../shared/data/wmt22
"""

import argparse
import collections
import csv
import json
import pathlib
import random
import re
import sys
import time

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import numpy as np  # noqa: E402

from gnmt_tf.io_utils import write_text_atomic  # noqa: E402

OUT = REPO_ROOT / "benchmarks/results/pipeline.json"


def _benchmark(name):
    """Another benchmark script as a module (`benchmarks/` is no package,
    and `alignment` names a package of ours)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"_benchmark_{name}", REPO_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
LANGUAGES = ("en", "de", "fr", "cs")


def read(data_dir, split, lang, limit=None):
    from gnmt_tf.data import corpus

    lines = corpus.read_lines(corpus.split_path(data_dir, split, lang))
    return lines[:limit] if limit else lines


# --- Backend -----------------------------------------------------------------

class ModelBackend:
    """Greedy translation plus a teacher-forced pass for the score and the
    attention: a translate callable returning `SentenceResult`s."""

    def __init__(self, model_dir, batch_size=32):
        from gnmt_tf.translator import SearchOptions, Translator

        self.translator = Translator.from_model_dir(model_dir)
        self.options = SearchOptions(beam_size=1)
        self.batch_size = batch_size
        self.sentences = 0

    def __call__(self, sentences, src_lang, tgt_lang, tags):
        task = dict(src_lang=src_lang, tgt_lang=tgt_lang, tags=list(tags))
        texts = self.translator.translate(list(sentences), self.options,
                                          self.batch_size, **task)
        self.sentences += len(sentences)
        return self.forced(list(sentences), texts, task)

    def forced(self, sources, texts, task):
        import tensorflow as tf

        from gnmt_tf.pipeline.results import SentenceResult

        translator = self.translator
        subwords, model = translator.subwords, translator.model
        eos, bos = translator.eos_id, translator.bos_id
        limit = model.max_target_length or 256
        ids = translator.task_ids(**task)
        src_ids = [s[:limit - 1] + [eos] for s in subwords.encode(sources)]
        tgt_ids = [t[:limit - 1] for t in subwords.encode(texts)]
        out = [SentenceResult(t) for t in texts]
        order = sorted((i for i in range(len(sources)) if texts[i].strip()),
                       key=lambda i: len(src_ids[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            s_len = max(len(src_ids[i]) for i in chunk)
            t_len = max(len(tgt_ids[i]) for i in chunk) + 1
            source = np.zeros((len(chunk), s_len), np.int32)
            target_in = np.zeros((len(chunk), t_len), np.int32)
            target_out = np.zeros((len(chunk), t_len), np.int32)
            for row, i in enumerate(chunk):
                source[row, :len(src_ids[i])] = src_ids[i]
                target_in[row, :len(tgt_ids[i]) + 1] = [bos] + tgt_ids[i]
                target_out[row, :len(tgt_ids[i]) + 1] = tgt_ids[i] + [eos]
            inputs = {"source_ids": tf.constant(source),
                      "target_in_ids": tf.constant(target_in)}
            for spec in translator.task_inputs:
                inputs[spec.name] = tf.constant([ids[spec.name]] * len(chunk),
                                                tf.int32)
            logits, attention = model(inputs, training=False,
                                      return_attention=True)
            log_probs = tf.nn.log_softmax(logits).numpy()
            attention = attention.numpy().mean(axis=1)  # [B, T, S]
            for row, i in enumerate(chunk):
                n = len(tgt_ids[i]) + 1
                token_lp = log_probs[row, np.arange(n), target_out[row, :n]]
                out[i] = SentenceResult(
                    texts[i], float(token_lp.sum() / n),
                    tuple(subwords.id_pieces(src_ids[i])),
                    tuple(subwords.id_pieces(tgt_ids[i])),
                    attention[row, :n - 1, :len(src_ids[i])])
        return out


class Recording:
    """Wraps a translate callable and keeps (input, output text) pairs."""

    def __init__(self, backend):
        self.backend, self.pairs = backend, []

    def __call__(self, sentences, src_lang, tgt_lang, tags):
        out = self.backend(sentences, src_lang, tgt_lang, tags)
        self.pairs += [(s, getattr(r, "text", r))
                       for s, r in zip(sentences, out)]
        return out


# --- Sections ----------------------------------------------------------------

def language_id(args):
    from gnmt_tf.pipeline.language_id import LanguageDetector

    detector = LanguageDetector.for_languages(LANGUAGES)
    mixed = [(s, lang) for lang in LANGUAGES
             for s in read(args.data_dir, "test_2016_flickr", lang,
                           args.lid_limit)]
    random.Random(0).shuffle(mixed)
    right = collections.Counter()
    total = collections.Counter()
    for sentence, lang in mixed:
        total[lang] += 1
        right[lang] += detector.detect(sentence).language == lang
    return {"lid_accuracy": sum(right.values()) / sum(total.values()),
            "lid_per_language": {k: right[k] / total[k] for k in LANGUAGES},
            "lid_sentences": sum(total.values())}


def sentence_split(args):
    split_benchmark = _benchmark("sentence_split")
    paragraphs = split_benchmark.paragraphs
    splitters = split_benchmark.splitters

    figures = {}
    for lang in LANGUAGES:
        groups = paragraphs(read(args.data_dir, "test_2016_flickr", lang))
        for name, split in splitters(lang).items():
            exact = sum(split(" ".join(g)) == [s.strip() for s in g]
                        for g in groups)
            figures.setdefault(name, {})[lang] = exact / len(groups)
    return {"sentence_split_exact": {
        "ours": figures["pipeline"], "pysbd": figures["pysbd"],
        "sentencex": figures["sentencex"]}}


def _html_document(sentences, number, xhtml):
    """A document with one sentence per block element, inline markup and
    attributes; returns (document, the block sentences in order)."""
    rng = random.Random(number)
    blocks = []
    for k, sentence in enumerate(sentences):
        words = sentence.split()
        # Up to two inline elements on separate words, so that a
        # translation may swap them.
        spans = []
        for _ in range(rng.choice([1, 1, 2])):
            if len(words) < 4:
                break
            a = rng.randrange(0, len(words) - 1)
            b = min(len(words) - 1, a + rng.randint(1, 2))
            if all(b <= x or a >= y for x, y, _ in spans):
                spans.append((a, b, rng.choice(
                    ["b", "i", "a", "span", "img", "none"])))
        for a, b, kind in sorted(spans, reverse=True):
            inner = " ".join(words[a:b])
            if kind == "none":
                continue
            if kind == "a":
                inner = f'<a href="https://example.org/{number}/{k}">{inner}</a>'
            elif kind == "span":
                inner = f'<span class="c{k}">{inner}</span>'
            elif kind == "img":
                inner = (inner + f' <img src="p{k}.png" alt="photo"'
                         + (" />" if xhtml else ">"))
            else:
                inner = f"<{kind}>{inner}</{kind}>"
            words = words[:a] + [inner] + words[b:]
        text = " ".join(words)
        tag = ["p", "li", "h2", "td"][k % 4]
        if tag == "li":
            text = f"<ul><li>{text}</li></ul>"
        elif tag == "td":
            text = f"<table><tr><td>{text}</td></tr></table>"
        else:
            text = f'<{tag} id="b{k}">{text}</{tag}>'
        blocks.append(text)
    body = "".join(blocks)
    if xhtml:
        return ('<?xml version="1.0" encoding="utf-8"?>\n'
                '<html xmlns="http://www.w3.org/1999/xhtml"><head><title>'
                f'Doc {number}</title></head><body><div class="doc">{body}'
                "</div></body></html>")
    return f'<div class="doc" data-n="{number}">{body}</div>'


def _tree(element, ordered):
    """The element tree as nested tuples (translated attributes out)."""
    attributes = tuple(sorted((k, v) for k, v in element.attrib.items()
                              if k not in ("alt", "title")))
    children = [_tree(c, ordered) for c in element
                if isinstance(c.tag, str)]
    return (element.tag, attributes,
            tuple(children if ordered else sorted(children)))


def _parse(document, xhtml):
    """(root, well-formed) of a document."""
    from lxml import etree
    from lxml import html as lxml_html

    if xhtml:
        try:
            return etree.fromstring(document.encode()), True
        except etree.XMLSyntaxError:
            return None, False
    parser = etree.HTMLParser()
    root = lxml_html.fragment_fromstring(document, create_parent="div",
                                         parser=parser)
    errors = [e for e in parser.error_log if "invalid" not in e.message]
    return root, not errors


def _block_texts(root):
    """The text of each sentence block (p, li, h2, td) in document order."""
    texts = []
    for element in root.iter():
        if not isinstance(element.tag, str):
            continue
        name = element.tag.split("}")[-1]
        if name in ("p", "li", "h2", "td"):
            texts.append(" ".join("".join(element.itertext()).split()))
    return texts


def _marked_words(block):
    """The words of a block element (`gnmt_tf.alignment.head_training.words`), each
    with the inline elements around it: `[(word, frozenset(keys))]`, a key
    being `(tag, attributes, n-th such element in the block)`."""
    from gnmt_tf.alignment.head_training import words

    found, seen = [], collections.Counter()

    def add(text, marks):
        found.extend((w, marks) for w in words(text or ""))

    def visit(element, marks):
        add(element.text, marks)
        for child in element:
            if isinstance(child.tag, str):
                key = (child.tag.split("}")[-1], tuple(sorted(
                    (k, v) for k, v in child.attrib.items()
                    if k not in ("alt", "title"))))
                seen[key] += 1
                visit(child, marks | {key + (seen[key],)})
            add(child.tail, marks)

    visit(block, frozenset())
    return found


def _blocks(root):
    return [e for e in root.iter() if isinstance(e.tag, str)
            and e.tag.split("}")[-1] in ("p", "li", "h2", "td")]


def markup_placement(block_pairs, args):
    """How well inline markup lands on the words fast_align links to the
    words it wrapped in the source.

    `block_pairs`: `(source block, output block)` lxml elements. Source and
    output words are aligned with fast_align (grow-diag-final-and, fit on
    these pairs + `--align-lines` Multi30k train pairs); an element's
    reference span is the hull of the output words linked to its source
    words (elements with no linked word are not judged). Returns the
    fraction of elements placed exactly on that span and the mean word F1.
    """
    from gnmt_tf.alignment.head_training import corpus_links, words

    marked = [(_marked_words(s), _marked_words(o)) for s, o in block_pairs]
    train = [(words(s), words(t)) for s, t in zip(
        read(args.data_dir, "train", "en", args.align_lines),
        read(args.data_dir, "train", "de", args.align_lines))]
    pairs = [([w for w, _ in s], [w for w, _ in o]) for s, o in marked]
    links = corpus_links(pairs + train)[:len(pairs)]
    exact = judged = unjudged = 0
    f1 = 0.0
    for (source, output), sentence_links in zip(marked, links):
        keys = {k for _, marks in source for k in marks}
        for key in keys:
            wrapped = {i for i, (_, m) in enumerate(source) if key in m}
            linked = {j for i, j in sentence_links if i in wrapped}
            if not wrapped:
                continue  # an empty element (img): nothing to place
            if not linked:
                unjudged += 1
                continue
            reference = set(range(min(linked), max(linked) + 1))
            placed = {j for j, (_, m) in enumerate(output) if key in m}
            judged += 1
            exact += placed == reference
            f1 += 2 * len(placed & reference) / (len(placed)
                                                 + len(reference))
    return {"exact": exact / max(judged, 1), "word_f1": f1 / max(judged, 1),
            "elements": judged, "unjudged_no_link": unjudged}


def html_documents(args, pipeline, attention_pipeline=None):
    """The HTML figures; with `attention_pipeline` (the same model aligning
    by its attention instead of its head), markup placement by both."""
    import sacrebleu

    sources = read(args.data_dir, "test_2016_flickr", "en", args.html_limit)
    references = read(args.data_dir, "test_2016_flickr", "de",
                      args.html_limit)
    plain = [pipeline.translate_document(s, "en", "de", ["caption"])
             for s in sources]
    preserved = ordered = 0
    html_out, html_refs, repairs = [], [], collections.Counter()
    block_pairs = {"main": [], "attention": []}
    documents = 0
    for start in range(0, len(sources), 4):
        xhtml = documents % 2 == 1
        group = sources[start:start + 4]
        document = _html_document(group, documents, xhtml)
        result = pipeline.translate_document_detailed(
            document, "en", "de", ["caption"], format="html")
        repairs.update(result.repaired)
        source_root, _ = _parse(document, xhtml)
        output_root, well_formed = _parse(result.output, xhtml)
        if well_formed and output_root is not None:
            preserved += _tree(source_root, False) == _tree(output_root,
                                                            False)
            ordered += _tree(source_root, True) == _tree(output_root, True)
            texts = _block_texts(output_root)
            if len(_blocks(output_root)) == len(_blocks(source_root)):
                block_pairs["main"] += zip(_blocks(source_root),
                                           _blocks(output_root))
        else:
            texts = [""] * len(group)
        if attention_pipeline is not None:
            other = _parse(attention_pipeline.translate_document(
                document, "en", "de", ["caption"], format="html"), xhtml)[0]
            if other is not None and len(_blocks(other)) == len(
                    _blocks(source_root)):
                block_pairs["attention"] += zip(_blocks(source_root),
                                                _blocks(other))
        html_out += texts[:len(group)] + [""] * (len(group) - len(texts))
        html_refs += references[start:start + 4]
        documents += 1
    plain_bleu = sacrebleu.corpus_bleu(plain, [references]).score
    html_bleu = sacrebleu.corpus_bleu(html_out, [html_refs]).score
    # The alternative this pipeline does not take: the model reads the
    # inline placeholders (`<g1>...</g1>`) and they are cut from its output.
    from gnmt_tf.pipeline.documents import HtmlDocument

    tagged, tagged_refs, tagged_plain_out = [], [], []
    for start in range(0, len(sources), 4):
        group = sources[start:start + 4]
        document = HtmlDocument(_html_document(group, start // 4, False))
        segments = [s for s in document.segments if s != "photo"]
        if len(segments) == len(group):
            tagged += segments
            tagged_refs += references[start:start + 4]
            tagged_plain_out += plain[start:start + 4]
    raw = [r.text for r in pipeline._translate(
        tagged, "en", "de", ["caption"])]
    stripped = [" ".join(re.sub(r"</?g\d+>|<x\d+/>", " ", t).split())
                for t in raw]
    tags_kept = sum(len(re.findall(r"<g\d+>|<x\d+/>", s))
                    == len(re.findall(r"<g\d+>|<x\d+/>", t))
                    for s, t in zip(tagged, raw))
    tagged_bleu = sacrebleu.corpus_bleu(stripped, [tagged_refs]).score
    tagged_plain = sacrebleu.corpus_bleu(tagged_plain_out,
                                         [tagged_refs]).score
    return {"html_structure_preserved": preserved / documents,
            "html_bleu_delta_if_model_reads_markup": tagged_bleu
            - tagged_plain,
            "html_segments_whose_markup_the_model_kept": tags_kept
            / max(1, len(tagged)),
            "html_structure_preserved_ordered": ordered / documents,
            "html_documents": documents,
            "html_bleu_delta": html_bleu - plain_bleu,
            "html_bleu": html_bleu, "plain_bleu": plain_bleu,
            "html_markup_repairs": repairs.get("markup", 0),
            "markup_placement": {
                name: markup_placement(pairs, args)
                for name, pairs in (("pipeline", block_pairs["main"]),
                                    ("attention", block_pairs["attention"]))
                if pairs}}


def wmt22(args, backend):
    from gnmt_tf.pipeline.pipeline import Pipeline
    from gnmt_tf.pipeline.placeholder_mapping import (HashPlaceholderMasker,
                                                      preserved_fraction)

    figures, details = {}, {}
    for direction in ("de-fr", "fr-de"):
        src, tgt = direction.split("-")
        path = pathlib.Path(args.wmt22_dir) / f"generaltest2022.{direction}.tsv"
        with open(path, encoding="utf-8", newline="") as f:
            rows = [r for r in csv.reader(f, delimiter="\t",
                                          quoting=csv.QUOTE_NONE)]
        segments = [r[3] for r in rows if len(r) >= 5
                    and re.search(r"#[A-Z][A-Z_]*#", r[3])]
        # The model reads at most 128 subwords a sentence: keep segments
        # that fit whole (the sentence splitter may not split them).
        subwords = backend.translator.subwords
        segments = [s for s in segments
                    if len(subwords.encode([s])[0]) <= 120][:args.wmt22_limit]
        recording = Recording(backend)
        pipeline = Pipeline(recording, LANGUAGES,
                            maskers=[HashPlaceholderMasker()])
        outputs = [pipeline.translate_document(s, src, tgt, ["caption"])
                   for s in segments]
        inputs = [s for s, _ in recording.pairs]
        carried = preserved_fraction(inputs, [t for _, t in recording.pairs])
        figures[direction] = preserved_fraction(segments, outputs)
        details[direction] = {
            "segments": len(segments),
            "tags": sum(len(re.findall(r"#[A-Z][A-Z_]*#", s))
                        for s in segments),
            "model_carried_fraction": carried,
            "examples": [{"source": s, "output": o}
                         for s, o in list(zip(segments, outputs))[:3]]}
    return {"wmt22_placeholder_preservation": figures,
            "wmt22_details": details}


def glossary(args, pipeline):
    import sacrebleu

    aligner = _benchmark("alignment")
    candidates, fast_align_links, tokenize = (
        aligner.candidates, aligner.fast_align_links, aligner.tokenize)

    sources = read(args.data_dir, "test_2016_flickr", "en",
                   args.glossary_limit)
    references = read(args.data_dir, "test_2016_flickr", "de",
                      args.glossary_limit)
    train = list(zip(read(args.data_dir, "train", "en", args.align_lines),
                     read(args.data_dir, "train", "de", args.align_lines)))
    pairs = [(tokenize(s), tokenize(t)) for s, t in
             list(zip(sources, references)) + train]
    links = fast_align_links(pairs)[:len(sources)]
    entries = []
    for (s, t), sentence_links in zip(pairs, links):
        chosen = candidates(s, t, sentence_links)
        entries.append({s[i]: t[j] for i, j in chosen[:2]})
    with_terms = [k for k, e in enumerate(entries) if e]
    plain = [pipeline.translate_document(sources[k], "en", "de", ["caption"])
             for k in with_terms]
    guided, repaired = [], collections.Counter()
    for k in with_terms:
        result = pipeline.translate_document_detailed(
            sources[k], "en", "de", ["caption"], glossary=entries[k])
        guided.append(result.output)
        repaired.update(result.repaired)

    def usage(outputs):
        total = used = 0
        for k, output in zip(with_terms, outputs):
            for target in entries[k].values():
                total += 1
                used += bool(re.search(rf"(?<!\w){re.escape(target)}(?!\w)",
                                       output, re.I))
        return used / total if total else None

    refs = [references[k] for k in with_terms]
    before = sacrebleu.corpus_bleu(plain, [refs]).score
    after = sacrebleu.corpus_bleu(guided, [refs]).score
    return {"glossary_term_usage": usage(guided),
            "glossary_term_usage_without": usage(plain),
            "glossary_bleu_delta": after - before,
            "glossary_bleu": {"without": before, "with": after},
            "glossary_sentences": len(with_terms),
            "glossary_terms": sum(len(entries[k]) for k in with_terms),
            "glossary_repairs": repaired.get("term", 0)}


def quality(args, backend):
    import sacrebleu
    from scipy.stats import spearmanr

    from gnmt_tf.pipeline.quality import FEATURES, QualityModel, features

    def rows(split, limit):
        sources = read(args.data_dir, split, "en", limit)
        refs = read(args.data_dir, split, "de", limit)
        results = backend(sources, "en", "de", ["caption"])
        backs = backend([r.text for r in results], "de", "en", ["caption"])
        found = [features(r, s, b.text)
                 for r, s, b in zip(results, sources, backs)]
        chrf = [sacrebleu.sentence_chrf(r.text, [ref]).score
                for r, ref in zip(results, refs)]
        return found, chrf

    val_rows, val_chrf = rows("val", args.qe_limit)
    model = QualityModel.fit(val_rows, [c / 100 for c in val_chrf])
    test_rows, test_chrf = rows("test_2017_flickr", args.qe_limit)
    scores = [model.score(r) for r in test_rows]
    per_feature = {}
    for name in FEATURES:
        values = [r[name] for r in test_rows]
        if all(v is not None for v in values):
            per_feature[name] = float(spearmanr(values, test_chrf)[0])
    return {"qe_spearman_chrf": float(spearmanr(scores, test_chrf)[0]),
            "qe_spearman_per_feature": per_feature,
            "qe_fit": {"split": "val", "sentences": len(val_rows),
                       "intercept": model.intercept,
                       "weights": dict(model.weights),
                       "means": dict(model.means)},
            "qe_test_sentences": len(test_rows)}


def throughput(args, backend):
    from gnmt_tf.pipeline.cache import TranslationCache
    from gnmt_tf.pipeline.pipeline import Pipeline

    sentences = read(args.data_dir, "test_2016_flickr", "de")
    start = 1000 - 5 * 2 * args.throughput_docs
    documents = []
    for d in range(args.throughput_docs):
        s = sentences[start + 10 * d:start + 10 * d + 10]
        documents.append(" ".join(s[:5]) + "\n\n" + " ".join(s[5:]))
    pipeline = Pipeline(backend, LANGUAGES, cache=TranslationCache(50))
    t0 = time.perf_counter()
    cold = [pipeline.translate_document(d, "de", "en", ["caption"])
            for d in documents]
    t1 = time.perf_counter()
    warm = [pipeline.translate_document(d, "de", "en", ["caption"])
            for d in documents]
    t2 = time.perf_counter()
    assert cold == warm
    return {"throughput_docs_per_s": len(documents) / (t1 - t0),
            "cache_hit_speedup": (t1 - t0) / (t2 - t1),
            "throughput_documents": len(documents),
            "throughput_sentences_per_document": 10,
            "cache_hit_docs_per_s": len(documents) / (t2 - t1)}


def batch(args):
    """docs/s of `gnmt-tf translate-documents` vs a per-document
    `gnmt-tf translate` loop (subprocesses, the same documents)."""
    import os
    import subprocess
    import tempfile

    sentences = read(args.data_dir, "test_2016_flickr", "de")
    cli = [sys.executable, "-m", "gnmt_tf.cli.main"]
    task = ["--model", args.model_dir, "--src-lang", "de", "--tgt-lang",
            "en", "--tags", "caption", "--beam-size", "1"]
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))

    def timed(command):
        t0 = time.perf_counter()
        subprocess.run(command, check=True, env=env,
                       stderr=subprocess.DEVNULL)
        return time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)
        (folder / "docs").mkdir()
        for d in range(args.batch_docs):
            s = sentences[10 * d:10 * d + 10]
            (folder / "docs" / f"{d:03d}.txt").write_text(
                " ".join(s[:5]) + "\n\n" + " ".join(s[5:]) + "\n",
                encoding="utf-8")
        job = [*cli, "translate-documents", "--input",
               str(folder / "docs" / "*.txt"), "--output-dir",
               str(folder / "batch"), *task]
        batch_s = timed(job)
        rerun_s = timed(job)
        (folder / "loop").mkdir()
        loop_s = 0.0
        for path in sorted((folder / "docs").iterdir()):
            loop_s += timed([*cli, "translate", "--format", "text", *task,
                             "--input", str(path), "--output",
                             str(folder / "loop" / path.name)])
        for path in sorted((folder / "docs").iterdir()):
            assert (folder / "batch" / path.name).read_bytes() == (
                folder / "loop" / path.name).read_bytes(), path.name
    n = args.batch_docs
    return {"batch": {
        "documents": n, "sentences_per_document": 10,
        "translate_documents_docs_per_s": n / batch_s,
        "translate_loop_docs_per_s": n / loop_s,
        "speedup": loop_s / batch_s,
        "translate_documents_s": batch_s, "translate_loop_s": loop_s,
        "rerun_all_up_to_date_s": rerun_s,
        "outputs_identical": True,
        "load_average_1min": round(os.getloadavg()[0], 1),
        "note": "wall clock per command, process start and model load "
                "included; greedy, de->en, tag caption"}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--checkpoint-note", default="",
                        help="where the model dir's checkpoint came from")
    parser.add_argument("--data-dir", default="../shared/data/multi30k")
    parser.add_argument("--wmt22-dir", default="../shared/data/wmt22")
    parser.add_argument("--lid-limit", type=int, default=1000,
                        help="sentences per language for LID")
    parser.add_argument("--html-limit", type=int, default=160,
                        help="test sentences in HTML documents (4 a doc)")
    parser.add_argument("--wmt22-limit", type=int, default=60,
                        help="tagged WMT22 segments per direction")
    parser.add_argument("--glossary-limit", type=int, default=200)
    parser.add_argument("--align-lines", type=int, default=29000,
                        help="train pairs fast_align also fits on")
    parser.add_argument("--qe-limit", type=int, default=300,
                        help="sentences of val (fit) and test_2017 (eval)")
    parser.add_argument("--throughput-docs", type=int, default=20)
    parser.add_argument("--batch-docs", type=int, default=6,
                        help="documents of the batch section")
    parser.add_argument("--sections", default="all")
    parser.add_argument("--backend", choices=("gateway", "local"),
                        default="gateway",
                        help="gnmt_tf.gateway.backends.ModelBackend, or this "
                             "script's own teacher-forced pass")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args(argv)
    sections = (["lid", "split", "html", "wmt22", "glossary", "qe",
                 "throughput"] if args.sections == "all"
                else args.sections.split(","))
    out = pathlib.Path(args.out)
    data = json.loads(out.read_text()) if out.exists() else {}
    started = time.time()
    backend = None
    if set(sections) - {"lid", "split", "batch"}:
        backend = _backend(args)
    from gnmt_tf.pipeline.pipeline import Pipeline
    from gnmt_tf.pipeline.cache import TranslationCache

    shared = Pipeline(backend, LANGUAGES, cache=TranslationCache(50))
    attention = _attention_backend(backend)
    attention_pipeline = (Pipeline(attention, LANGUAGES)
                          if attention is not None else None)
    args.alignment_note = (
        "ConvAlignmentHead (alignment_head.json of the model dir; "
        "markup_placement.attention: the same model's mean cross-attention)"
        if attention is not None else
        "teacher-forced cross-attention, mean over layers and heads")
    seconds = {}
    for name in sections:
        t = time.time()
        if name == "lid":
            data.update(language_id(args))
        elif name == "split":
            data.update(sentence_split(args))
        elif name == "html":
            data.update(html_documents(args, shared, attention_pipeline))
        elif name == "wmt22":
            data.update(wmt22(args, backend))
        elif name == "glossary":
            data.update(glossary(args, shared))
        elif name == "qe":
            data.update(quality(args, backend))
        elif name == "throughput":
            data.update(throughput(args, backend))
        elif name == "batch":
            data.update(batch(args))
        seconds[name] = round(time.time() - t, 1)
        print(f"{name}: {seconds[name]} s", file=sys.stderr, flush=True)
        _write(out, data, args, seconds, started, argv)
    _summary(data)


def _backend(args):
    """The gateway's in-process backend (greedy), or this file's own
    (`--backend local`: the same score and attention, computed here)."""
    if args.backend == "local":
        return ModelBackend(args.model_dir)
    from gnmt_tf.gateway.backends import ModelBackend as GatewayBackend
    from gnmt_tf.translator import SearchOptions

    return GatewayBackend.from_model_dir(args.model_dir,
                                         SearchOptions(beam_size=1), 32)


def _attention_backend(backend):
    """The same model aligning by its cross-attention, when `backend`'s
    model aligns by an alignment head (else None)."""
    model = getattr(backend, "model", None)
    if not hasattr(model, "translation_model"):
        return None
    from gnmt_tf.gateway.backends import ModelBackend as GatewayBackend
    from gnmt_tf.translator import Translator

    translator = Translator(model.translation_model,
                            backend.translator.subwords)
    return GatewayBackend(translator, backend.options, backend.batch_size,
                          backend.languages)


def _write(out, data, args, seconds, started, argv):
    """Writes the figures so far (after every section: a failing section
    keeps the others')."""
    data["model"] = {"model_dir": args.model_dir,
                     "checkpoint": args.checkpoint_note,
                     "backend": ("gnmt_tf.gateway.backends.ModelBackend"
                                 if args.backend == "gateway" else
                                 "benchmarks/pipeline.py ModelBackend"),
                     "search": "greedy",
                     "alignment": getattr(args, "alignment_note", "")}
    data["seconds"] = dict(data.get("seconds", {}), **seconds)
    data["wall_seconds_this_run"] = round(time.time() - started, 1)
    command = _benchmark("results_file").command_line("pipeline.py", argv)
    # Sections may come from different runs: each keeps its command.
    data.setdefault("commands", {}).update(
        {name: command for name in seconds})
    data["command"] = command
    write_text_atomic(out, json.dumps(data, indent=2, ensure_ascii=False)
                      + "\n")


def _summary(data):
    print(json.dumps({k: v for k, v in data.items()
                      if not isinstance(v, dict) or k in (
                          "sentence_split_exact",
                          "wmt22_placeholder_preservation", "batch")},
                     indent=1))


if __name__ == "__main__":
    main()

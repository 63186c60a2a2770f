"""sacreBLEU per task: per direction (Multi30k) or per direction and scene
(WMT22 domains), for one multi-direction model.

Example:
```python
translator = Translator.from_model_dir("runs/ts")
examples = data.load_multi30k(data_dir, "test_2016_flickr", "all")
for row in evaluate_tasks(translator, examples):
    print(row["direction"], row["tags"], row["bleu"])
```
"""

from gnmt_tf.evaluation import score_corpus
from gnmt_tf.translator import SearchOptions


def group_by_task(examples):
    """`{(src, tgt, tags): [indices]}` in order of first appearance."""
    groups = {}
    for i, key in enumerate(zip(examples.src_langs, examples.tgt_langs,
                                examples.tags)):
        groups.setdefault(key, []).append(i)
    return groups


def evaluate_tasks(translator, examples, options=SearchOptions(),
                   batch_size=32, tags=None):
    """Translates `examples` task by task and scores each group.

    Args:
        translator: `gnmt_tf.translator.Translator` of a task-space model.
        examples: `gnmt_tf.data.multiway.TaskExamples` (references = targets).
        options: `gnmt_tf.translator.SearchOptions`.
        batch_size: sentences per search call.
        tags: tuple or None. Translate with these tags instead of each
            example's own (e.g. `()` to measure what the tags are worth);
            groups stay those of the examples.

    Returns:
        list of dicts, one per `(src, tgt, tags)` group: `direction`
        (`"en-de"`), `tags` (list), `sentences`, `bleu`, `chrf`,
        `bleu_signature`, and `hypotheses` (list of str).
    """
    rows = []
    for (src, tgt, group_tags), indices in group_by_task(examples).items():
        sources = [examples.sources[i] for i in indices]
        references = [examples.targets[i] for i in indices]
        hypotheses = translator.translate(
            sources, options, batch_size, src_lang=src, tgt_lang=tgt,
            tags=group_tags if tags is None else tags)
        scores = score_corpus(hypotheses, references)
        rows.append({"direction": f"{src}-{tgt}", "tags": list(group_tags),
                     "sentences": len(indices), "bleu": scores.bleu,
                     "chrf": scores.chrf,
                     "bleu_signature": scores.bleu_signature,
                     "hypotheses": hypotheses})
    return rows


def format_rows(rows) -> str:
    """A plain-text table of `evaluate_tasks` rows, plus their mean BLEU."""
    lines = [f"{'direction':<10} {'tags':<24} {'n':>5} {'BLEU':>6} "
             f"{'chrF2':>6}"]
    for row in rows:
        lines.append(f"{row['direction']:<10} {','.join(row['tags']):<24} "
                     f"{row['sentences']:>5} {row['bleu']:>6.2f} "
                     f"{row['chrf']:>6.2f}")
    if rows:
        mean = sum(r["bleu"] for r in rows) / len(rows)
        lines.append(f"mean BLEU over {len(rows)} tasks: {mean:.2f}  "
                     f"({rows[0]['bleu_signature']})")
    return "\n".join(lines)

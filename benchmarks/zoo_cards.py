"""A shipped model's `MODEL_CARD.md`, written from the files beside it.

The card is generated, never edited by hand, so that it cannot disagree
with what ships: the score table from `scores.json` (with the
`card` entry `model_zoo.py package` stores there: description, commands),
the alignment head's section from `alignment_head.json`, the int8
export's from `tflite_int8/scores.json`, and a History section. When
`model_zoo.py package --replace` replaces a shipped model, the version it
replaces goes to the top of the History (its training, its score table),
above the History its own card carried; re-rendering a card
(`write_card`) keeps the History it has.
"""

import json
import pathlib
import re
import textwrap

SPLITS = ("val", "test_2016_flickr", "test_2017_flickr")

CARD = """# {name}

{description}

## Data and terms of use
Multi30k Task 1 (Elliott et al. 2016): 29,000 Flickr30k image captions,
four-way parallel in English, German, French and Czech; the data set's own
terms apply (research use; the images' Flickr terms). No other data.

## Training
- Command: `{train_command}`
- Packaged with: `{package_command}` (the mean of the last {last}
  checkpoints, stored in float16).
- Hardware: {hardware}; {train_hours} h of training (wall time, resumed
  across sessions, at times sharing the cores with other jobs),
  {train_steps} steps, {target_tokens} M target tokens.

## Scores (sacreBLEU / chrF, cased, detokenised)
Search: beam {beam_size}, length penalty α {length_penalty}.
BLEU signature: `{signature}`.

{table}

WMT22 is the general test set (news, e-commerce, social, conversation):
far from image captions, so scores there are low; segments longer than the
model's source limit are left out (see `scores.json`).
{sections}
## Not good at
Anything that is not a short, literal image caption: long sentences,
dialogue, named entities and numbers outside the caption domain (see the
WMT22 column), and directions other than those in the table.
{history}
## Citation
Desmond Elliott, Stella Frank, Khalil Sima'an, Lucia Specia. 2016.
Multi30K: Multilingual English-German Image Descriptions. In Proceedings of
the 5th Workshop on Vision and Language, pages 70-74.
"""

HISTORY_TITLE = "## History"


def paragraph(text):
    """`text` wrapped at 80 columns (words and code spans kept whole)."""
    return textwrap.fill(text, 80, break_long_words=False,
                         break_on_hyphens=False)


def markdown_table(scores):
    """The per-direction BLEU / chrF table of a model card."""
    lines = ["| direction | " + " | ".join(SPLITS) + " | WMT22 |",
             "|---" * (len(SPLITS) + 2) + "|"]
    for direction, splits in scores["sacrebleu"].items():
        cells = [f"{splits[s]:.2f} / {scores['chrf'][direction][s]:.1f}"
                 if s in splits else "–" for s in SPLITS]
        wmt = scores.get("wmt22", {}).get(direction)
        cells.append(f"{wmt['bleu']:.2f} / {wmt['chrf']:.1f}" if wmt else "–")
        lines.append(f"| {direction} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def alignment_section(info):
    """The card's section on the alignment head, from its
    `alignment_head.json` contents."""
    trained = info["trained_on"]
    filters = info.get("head", {}).get("filters")
    aer = info.get("scores", {}).get("aer", {})
    lines = ["## Alignment head", paragraph(
        f"`alignment_head.npz` / `alignment_head.json`: a convolutional "
        f"alignment head (Ctrip; filters {filters}) trained on this "
        f"model's attention with fast_align links as labels; the "
        f"translation weights are unchanged. The document pipeline, the "
        f"gateway and `gnmt-tf export savedmodel` align through it. "
        f"{trained['steps']} steps on {trained['pairs']:,} "
        f"{trained['split']} pairs of {len(trained['directions'])} "
        f"directions."), ""]
    if aer:
        lines += [paragraph(
            f"Alignment error rate against fast_align links "
            f"(grow-diag-final-and) on held-out {info['scores']['split']} "
            f"pairs, subword level:"), "",
            "| direction | head | attention argmax |", "|---|---|---|"]
        lines += [f"| {d} | {s['aer_head']:.3f} | "
                  f"{s['aer_attention_argmax']:.3f} |"
                  for d, s in sorted(aer.items())]
        lines.append("")
    return "\n".join(lines)


def int8_section(scores):
    """The card's section on the int8 TFLite export, from its
    `tflite_int8/scores.json` contents."""
    split = scores["split"]
    versus = (f", against {scores['float_model']:.2f} for the float model"
              if scores.get("float_model") is not None else "")
    return "\n".join(["## int8 TFLite export", paragraph(
        f"`tflite_int8/` ({scores['size_mb']} MB: `model_int8.tflite`, its "
        f"`spm.model` and `model.json`) is the model quantised by the QAT "
        f"path: {scores['qat']}; then {scores['export']}. "
        f"`gnmt-tf translate --tflite NAME` uses it. On {split} "
        f"{scores['direction']} (beam {scores['beam_size']}, "
        f"α {scores['length_penalty']}) it scores {scores[split]:.2f} "
        f"BLEU{versus} (`tflite_int8/scores.json`)."), ""])


def section(card, title):
    """The body of `card`'s section `title` (a ``## `` line), up to the
    next such section, or '' where it has none."""
    match = re.search(rf"^{re.escape(title)}\n(.*?)(?=^## |\Z)", card,
                      re.S | re.M)
    return match.group(1).strip() if match else ""


def replaced_version(scores, card):
    """The History entry of a version being replaced: what it was trained
    and packaged with (its `scores.json`'s card entry, or its card's
    training lines) and its score table, then the History its card
    carried."""
    command = scores.get("card", {}).get("train_command")
    if not command:  # a card written before `package` stored its commands
        match = re.search(r"^- Command: `(.*)`$",
                          section(card, "## Training"), re.M)
        command = match.group(1) if match else None
    trained = f"; trained with `{command}`" if command else ""
    entry = "\n".join([
        paragraph(f"The version this one replaced: "
                  f"{scores.get('train_steps')} steps, "
                  f"{scores.get('train_hours')} h of training{trained}. "
                  f"Its scores were:"), "", markdown_table(scores)])
    older = section(card, HISTORY_TITLE)
    return entry + ("\n\n" + older if older else "")


def card_text(model_dir, name, hardware, history=""):
    """The card of the shipped model in `model_dir` (from the files there,
    as the module docstring says), with `history` as its History."""
    model_dir = pathlib.Path(model_dir)
    scores = json.loads((model_dir / "scores.json").read_text())
    about = scores.get("card", {})
    sections = []
    head = model_dir / "alignment_head.json"
    if head.is_file():
        sections.append(alignment_section(json.loads(head.read_text())))
    int8 = model_dir / "tflite_int8" / "scores.json"
    if int8.is_file():
        sections.append(int8_section(json.loads(int8.read_text())))
    return CARD.format(
        name=name, description=about.get("description", ""),
        table=markdown_table(scores),
        train_command=about.get("train_command") or "(not given)",
        package_command=about.get("package_command", "(not given)"),
        last=about.get("last"), hardware=hardware,
        train_hours=scores["train_hours"], train_steps=scores["train_steps"],
        target_tokens=round((scores.get("train_target_tokens") or 0) / 1e6,
                            1),
        beam_size=scores["search"]["beam_size"],
        length_penalty=scores["search"]["length_penalty"],
        signature=scores["signatures"].get("bleu", ""),
        sections="".join("\n" + s for s in sections),
        history=f"\n{HISTORY_TITLE}\n{history.strip()}\n" if history.strip()
        else "")


def write_card(model_dir, name, hardware, history=None):
    """Writes `model_dir/MODEL_CARD.md` atomically; `history` None keeps
    the History the card has."""
    from gnmt_tf.io_utils import write_text_atomic

    path = pathlib.Path(model_dir) / "MODEL_CARD.md"
    if history is None:
        history = (section(path.read_text(), HISTORY_TITLE)
                   if path.is_file() else "")
    write_text_atomic(path, card_text(model_dir, name, hardware, history))
    return path


"""A new training run that starts from a trained model's weights.

`gnmt-tf train --init-from MODEL` (a model directory or a shipped name) goes
on training a model whose checkpoints are gone, such as a shipped one, of
which only the final weights exist. The new run takes the source's
architecture and vocabulary; the optimizer starts afresh (Adam's moments
are not shipped), so the run warms up again. `config.json` of the new run
records the source and how long it had trained (`INIT_KEY`), so that a
model card can report the whole training time.
"""

import json
import pathlib

from gnmt_tf import model_dir as model_dir_lib

INIT_KEY = "init_from"


def read_source(init_from, model_type):
    """What a run started from `init_from` takes over.

    Returns:
      `(model_config_dict, vocab_path, record)`: the source's `config.json`
      "model" entry, its SentencePiece model, and the `INIT_KEY` entry for
      the new run's `config.json` (`path`, and `history`: `train_seconds`,
      `steps`, `target_tokens` of all training the weights have had).

    Raises:
      FileNotFoundError: not a model directory or shipped name.
      ValueError: a model of another type.
    """
    path = model_dir_lib.locate(init_from)
    payload = model_dir_lib.read_config(path)
    found = payload.get("model_type", "gnmt")
    if found != model_type:
        raise ValueError(f"--init-from {init_from} is a {found} model; this "
                         f"run trains a {model_type} model")
    record = {"model": str(init_from), "path": str(path.resolve()),
              "history": training_history(path, payload)}
    return payload["model"], path / model_dir_lib.VOCAB_FILE, record


def training_history(path, payload):
    """All the training a model directory's weights have had: its own run
    (`progress.json`, or a shipped model's `scores.json`) plus what the run
    it started from had had."""
    progress = path / "progress.json"
    if progress.exists():
        own = json.loads(progress.read_text())
        history = {"train_seconds": own.get("train_seconds", 0.0),
                   "steps": own.get("step", 0),
                   "target_tokens": own.get("target_tokens", 0.0)}
        earlier = payload.get(INIT_KEY, {}).get("history")
        return add_histories(history, earlier) if earlier else history
    scores = path / "scores.json"  # a shipped model: totals already
    if scores.exists():
        shipped = json.loads(scores.read_text())
        return {"train_seconds": 3600 * (shipped.get("train_hours") or 0),
                "steps": shipped.get("train_steps") or 0,
                "target_tokens": shipped.get("train_target_tokens") or 0}
    return {"train_seconds": 0.0, "steps": 0, "target_tokens": 0.0}


def add_histories(a, b):
    return {key: (a.get(key) or 0) + (b.get(key) or 0)
            for key in ("train_seconds", "steps", "target_tokens")}


def initial_weights(record):
    """The source's weights (`get_weights()` order) for a run's
    `INIT_KEY` record."""
    model, _, _ = model_dir_lib.load_model(pathlib.Path(record["path"]))
    return model.get_weights()

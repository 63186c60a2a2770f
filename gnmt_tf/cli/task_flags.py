"""The task flags of `gnmt-tf translate`: `--src-lang`, `--tgt-lang`, `--tags`
and `--allow-zero-shot`, checked against what a model says of itself.

Works for anything that describes itself as a `Seq2SeqModel` does
(`task_inputs()`, `default_task`, `fixed_task`, `trained_tasks`): a model
(`gnmt_tf.translator.Translator.model`) or a TFLite or ONNX export
(`gnmt_tf.host_translator.HostTranslator`, from its `model.json`).
"""

import sys

from gnmt_tf.seq2seq_model import check_task

FLAGS = ("src_lang", "tgt_lang", "tags")


def add_task_arguments(parser):
    """Adds the task flags."""
    parser.add_argument("--src-lang", help="source language code (models "
                        "with task inputs; others accept only their own)")
    parser.add_argument("--tgt-lang", help="target language code")
    parser.add_argument(
        "--tags", default=None,
        help="comma-separated scene tags, '' for none (default: the tags "
             "the model was trained with)")
    parser.add_argument(
        "--allow-zero-shot", action="store_true",
        help="translate a direction the model was not trained on (refused "
             "otherwise)")


def _flag(name):
    return "--" + name.replace("_", "-")


def task_arguments(args, model, name, stream=None):
    """The task keyword arguments for `model` from the flags in `args`.

    A model without a task input of that name accepts a flag only when it
    names its one fixed value (a GNMT model's `--src-lang en`); `--tags`
    defaults to the training tags; a combination outside the model's
    `trained_tasks` (a zero-shot direction) is refused unless
    `--allow-zero-shot`, which only warns, and a model that records no
    `trained_tasks` gets a warning.

    Args:
      args: parsed flags (`add_task_arguments`).
      model: the model, or anything describing itself the same way.
      name: how messages name the model (its directory or file).
      stream: where warnings go (default stderr).

    Raises:
      ValueError: a flag the model cannot honour, a missing one, an unknown
        value, or an untrained combination without `--allow-zero-shot`.
    """
    stream = stream or sys.stderr
    inputs = {t.name: t for t in model.task_inputs()}
    fixed = dict(model.fixed_task or {})
    given = {key: getattr(args, key, None) for key in FLAGS}
    for key, value in given.items():
        if value is None or key in inputs:
            continue
        if key in fixed and value == fixed[key]:
            continue
        what = (f"translates {fixed['src_lang']}->{fixed['tgt_lang']} only"
                if {"src_lang", "tgt_lang"} <= set(fixed) else
                "translates one fixed direction")
        raise ValueError(f"{name} {what}; it cannot honour {_flag(key)} "
                         f"{value}")
    task = {key: value for key, value in given.items() if key in inputs}
    if "tags" in inputs and task.get("tags") is None:
        task["tags"] = model.default_task.get("tags", ())
    missing = [_flag(t.name) for t in inputs.values()
               if not t.multi_hot and not task.get(t.name)]
    if missing:
        values = next(iter(inputs.values())).values
        raise ValueError(f"{' and '.join(missing)} required for {name} "
                         f"(its values: {', '.join(values)})")
    check_task(inputs.values(), task)  # unknown values first
    _check_trained(model, task, name, getattr(args, "allow_zero_shot", False),
                   stream)
    return task


def _check_trained(model, task, name, allow_zero_shot, stream):
    """Refuses (or warns about) a task outside the model's training."""
    inputs = [t for t in model.task_inputs() if not t.multi_hot]
    if not inputs:
        return
    asked = "-".join(task[t.name] for t in inputs)
    trained = model.trained_tasks
    if trained is None:
        print(f"warning: {name} does not record its training directions; "
              f"{asked} may be one it never saw", file=stream)
        return
    keys = [t.name for t in inputs]
    seen = {tuple(entry[k] for k in keys) for entry in trained}
    if tuple(task[k] for k in keys) in seen:
        return
    known = ",".join("-".join(entry) for entry in sorted(seen))
    if allow_zero_shot:
        print(f"warning: {asked} is zero-shot: {name} was trained on "
              f"{known} only", file=stream)
        return
    raise ValueError(f"{name} was not trained on {asked} (only {known}); "
                     "pass --allow-zero-shot to translate it anyway")

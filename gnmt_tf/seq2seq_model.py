"""`Seq2SeqModel`: the one interface every translation model implements.

Search (`gnmt_tf.decoding`), `gnmt_tf.translator.Translator`, the exporters
and the CLI are written once against it and never ask for a model's type.
A model says which task arguments it takes besides the text
(`task_inputs`: none for GNMT; source language, target language and scene
tags for the task-space Transformer), and the consumers derive their inputs,
checks and signatures from those descriptions.

Example, a model with one task input:

```python
class MyModel(Seq2SeqModelBase, keras.Model):
    def task_inputs(self):
        return (TaskInput("tgt_lang", ("de", "fr")),)

    def encode(self, source_ids, tgt_lang=None):
        ...                                   # -> encoded (any nest)

    def initial_state(self, encoded, max_length=None):
        ...                                   # -> state (dict of tensors)

    def step(self, ids, state):
        ...                                   # -> (log_probs, attention, state)

    source_prefix = None                      # nothing before the source
    max_target_length = None                  # no cache limit
    default_task = {"tgt_lang": "de"}
    trained_tasks = [{"tgt_lang": "de"}, {"tgt_lang": "fr"}]
    fixed_task = {"src_lang": "en"}

translator = Translator(MyModel(config), subwords)
translator.translate(["A dog runs."], tgt_lang="fr")
```
"""

import contextlib
import dataclasses
import typing
from typing import Any, Optional, Sequence, Tuple, Union


@dataclasses.dataclass(frozen=True)
class TaskInput:
    """One task argument a model takes besides the source text.

    Attributes:
      name: the keyword of `encode` (and of translators, signatures and CLI
        flags, with `_` as `-`).
      values: the allowed values, in id order.
      multi_hot: False: one value per sentence, given to the model as its
        int32 id `[B]`. True: a set of values per sentence (a list of names
        or a comma-separated string, possibly empty), given as an int32 0/1
        vector `[B, len(values)]`.
      label: what one value is called in errors (default: `name`).
      differs_from: the name of another single-valued task input that must
        not have the same value in a request (a target language that must
        differ from the source language).
    """

    name: str
    values: Tuple[str, ...]
    multi_hot: bool = False
    label: Optional[str] = None
    differs_from: Optional[str] = None

    def to_json(self) -> dict:
        """A JSON-ready dict; `TaskInput(**d)` rebuilds it."""
        return dict(dataclasses.asdict(self), values=list(self.values))

    @classmethod
    def from_json(cls, data: dict) -> "TaskInput":
        return cls(**dict(data, values=tuple(data["values"])))

    @property
    def shape(self) -> Tuple[Optional[int], ...]:
        """The model input's shape, `None` for the batch."""
        return (None, len(self.values)) if self.multi_hot else (None,)

    def names(self, value) -> Tuple[str, ...]:
        """A multi-hot value (list of names, or `"a,b"`) as a tuple of names;
        blank names are dropped."""
        if isinstance(value, str):
            value = value.split(",")
        return tuple(n.strip() for n in value if n and n.strip())

    def to_ids(self, value) -> Union[int, list]:
        """A Python value -> its id, or a multi-hot 0/1 list.

        Raises:
          ValueError: an unknown value, naming the known ones.
        """
        if not self.multi_hot:
            return self._index(value)
        vector = [0] * len(self.values)
        for name in self.names(value):
            vector[self._index(name)] = 1
        return vector

    def _index(self, value) -> int:
        try:
            return self.values.index(value)
        except ValueError:
            raise ValueError(
                f"unknown {self.label or self.name} {value!r}; known: "
                f"{', '.join(self.values) or '(none)'}") from None


class Seq2SeqModelBase:
    """The optional parts of `Seq2SeqModel`, with their defaults.

    Every translation model class inherits from it (before `keras.Model`),
    so that consumers read these attributes directly instead of probing a
    model with `getattr` / `hasattr`; a model overrides what it has.

    Attributes:
      max_target_length: None: the decoding state has no length limit.
      default_task, fixed_task: `{}`: no task inputs.
      trained_tasks: None: not recorded.
      source_prefix: None: nothing before the source.
      supports_growing_cache: False: `initial_state` takes no
        `growing_cache` (a KV cache that grows a position a step).
      resizes_cache: False: the decoding state holds no buffer sized by
        `initial_state`'s `max_length` that `resize_cache` could grow.
      supports_compiled_search: True: the whole search compiles with XLA
        (`Translator(..., jit_compile_search=True)`), so a `Translator`
        compiles it by default (`gnmt_tf.search_engine`); False for a
        model whose step runs host code.
      exports_encode_at_any_batch: False: exporters trace `encode` at batch 1.
      cell_clip: None, or a variable the trainer anneals (GNMT's LSTM cell
        clipping).
      max_step_score: the most a `step` can add to a hypothesis' score
        (0 for log-probabilities; a word-count bonus makes it positive).
      align: None, or the alignment head's `align(features)`.
      runs_in_low_precision: False: float32 only (`model_dir.build_model`
        refuses `mixed_bfloat16` and the like).
    """

    max_target_length = None
    default_task = {}
    fixed_task = {}
    trained_tasks = None
    source_prefix = None
    supports_growing_cache = False
    supports_compiled_search = True
    resizes_cache = False
    exports_encode_at_any_batch = False
    cell_clip = None
    max_step_score = 0.0
    align = None
    runs_in_low_precision = False

    def task_inputs(self):
        """No task inputs."""
        return ()

    def attach_model_dir(self, subwords, payload):
        """Called by `gnmt_tf.model_dir.load_model` with the vocabulary and
        `config.json`; nothing to read by default."""

    def resize_cache(self, state, max_length):
        """`state` (from `initial_state`, any rows) with room for
        `max_length` steps, for models that set `resizes_cache`: a search
        compiled with XLA starts with a short cache and grows it
        (`gnmt_tf.decoding.segmented_loop`)."""
        raise NotImplementedError(f"{type(self).__name__} does not resize "
                                  "its decoding state")

    def compiled_search_context(self):
        """The context a whole XLA-compiled search is traced in
        (`Translator(..., jit_compile_search=True)`), entered before the
        search's loop: `compiled_step_context` by default."""
        return self.compiled_step_context()

    def compiled_step_context(self):
        """The context a compiled step is traced in: the search of
        `Translator(..., jit_compile_search=True)` and the `decode_step` of
        a TFLite export (`gnmt_tf.export.tflite.convert`); nothing by
        default."""
        return contextlib.nullcontext()


@typing.runtime_checkable
class SplitStep(typing.Protocol):
    """A model whose `step` splits into a hidden state and the output
    layer, so that it can decode over a vocabulary shortlist
    (`gnmt_tf.decoding.shortlist`) and export a step without the
    log-softmax."""

    def step_hidden(self, ids, state):
        """`ids [N]` -> `(hidden, attention, state)`."""

    def output_logits(self, hidden, rows=None):
        """`hidden` -> logits over the vocabulary, or over `rows` only."""


@typing.runtime_checkable
class Seq2SeqModel(typing.Protocol):
    """What search, translators, exporters and the CLI need of a model.

    Attributes:
      config: has `bos_id`, `eos_id` and `pad_id`.
      max_target_length: int or None. The longest output the decoding state
        can hold (a KV cache), or None for no limit.
      default_task: dict of task arguments (names or lists of names) of a
        typical request, e.g. the first trained direction out of English:
        warm-up requests and examples use it. `{}` without task inputs.
      source_prefix: None, or `(name, ids)`: each source starts with
        `ids[task[name]]` (a `<2xx>` target-language token, Johnson et al.).
      trained_tasks: None (not recorded), or a list of dicts of the
        single-valued task arguments seen in training (the trained
        directions); others are zero-shot.
      fixed_task: dict of what a model without those task inputs fixes
        (a GNMT model's `src_lang` / `tgt_lang`).

    Model classes inherit `Seq2SeqModelBase`, which gives the optional
    parts their defaults (`attach_model_dir`, `compiled_step_context`,
    `supports_growing_cache`, ...); a model that splits its `step` is a
    `SplitStep`.
    """

    config: Any
    max_target_length: Optional[int]
    default_task: dict
    trained_tasks: Optional[list]
    fixed_task: dict
    source_prefix: Optional[Tuple[str, Tuple[int, ...]]]

    def task_inputs(self) -> Tuple[TaskInput, ...]:
        """The task arguments of `encode`, `()` for none."""

    def encode(self, source_ids, **task):
        """`source_ids` int32 `[B, S]` (0-padded, each row ending in the end
        token) and the task inputs as ids -> the encoder's output."""

    def initial_state(self, encoded, max_length=None):
        """The decoding state before the first `step`; `max_length` (int or
        int32 scalar) is the most steps the search will take."""

    def step(self, ids, state):
        """`ids` int32 `[N]` -> `(log_probs [N, V], attention [N, S],
        state)`."""

def prefix_ids(source_prefix, ids) -> list:
    """The ids a source starts with for task `ids` (from `task_ids`), given
    a model's `source_prefix`; `[]` without one."""
    if source_prefix is None:
        return []
    name, table = source_prefix
    return [int(table[ids[name]])]


def task_ids(model: Seq2SeqModel, task: dict) -> dict:
    """Checks Python task arguments against `model.task_inputs()`; returns
    their ids (see `check_task`)."""
    return check_task(model.task_inputs(), task)


def check_task(task_inputs: Sequence[TaskInput], task: dict) -> dict:
    """Checks Python task arguments against `task_inputs` (a model's, or
    those read from an export's JSON by a host without the model).

    Returns:
      `{name: id}` (an int, or a multi-hot list).

    Raises:
      ValueError: a missing or unexpected argument, an unknown value, or two
        values that must differ; the message names the problem.
    """
    inputs = {t.name: t for t in task_inputs}
    task = {name: value for name, value in task.items() if _given(value)}
    unexpected = sorted(set(task) - set(inputs))
    if unexpected:
        raise ValueError(
            f"this model takes no {', '.join(unexpected)}"
            + (f" (its task inputs: {', '.join(inputs)})" if inputs else
               " (it translates one fixed direction)"))
    missing = [name for name, t in inputs.items()
               if task.get(name) is None and not t.multi_hot]
    if missing:
        raise ValueError(f"this model needs {', '.join(missing)}")
    ids = {name: t.to_ids(task.get(name) or ()) if t.multi_hot
           else t.to_ids(task[name]) for name, t in inputs.items()}
    for t in inputs.values():
        if t.differs_from and ids[t.name] == ids[t.differs_from]:
            raise ValueError(f"{t.differs_from} and {t.name} must differ "
                             f"(both {task[t.name]!r})")
    return ids


def _given(value) -> bool:
    """False for None and empty values (an unset flag)."""
    return value is not None and not (hasattr(value, "__len__")
                                      and len(value) == 0)


def describe_task(model: Seq2SeqModel) -> Sequence[str]:
    """One line per task input, for help texts and errors."""
    return [f"{t.name}: {'any of' if t.multi_hot else 'one of'} "
            f"{', '.join(t.values)}" for t in model.task_inputs()]

"""The model base: defaults for the optional parts of `Seq2SeqModel`, so
that no consumer probes a model with `getattr` / `hasattr`."""

import pathlib
import re

import pytest

from gnmt_tf.seq2seq_model import Seq2SeqModelBase
from gnmt_tf.seq2seq_model import SplitStep

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("gnmt_tf", "task_space", "export", "serving", "pipeline",
            "gateway", "alignment")
# A model probed for an attribute by name: what the base's defaults replace.
PROBE = re.compile(r"\b(?:getattr|hasattr)\(\s*(?:self\.)?(?:_?model|"
                   r"translation_model|self\.translation_model)\s*,")


def test_the_defaults_say_a_model_has_none_of_the_optional_parts():
    class Bare(Seq2SeqModelBase):
        pass

    model = Bare()
    assert model.task_inputs() == ()
    assert (model.max_target_length, model.trained_tasks, model.source_prefix,
            model.cell_clip, model.align) == (None,) * 5
    assert model.default_task == {} and model.fixed_task == {}
    assert not model.supports_growing_cache
    assert not model.exports_encode_at_any_batch
    assert not model.runs_in_low_precision
    assert model.max_step_score == 0.0
    assert model.attach_model_dir(None, {}) is None
    with model.compiled_step_context():
        pass
    assert not isinstance(model, SplitStep)


@pytest.mark.parametrize("name", ["gnmt_tiny", "transformer_tiny"])
def test_both_families_inherit_the_base_and_split_their_step(name):
    from gnmt_tf import model_types

    _, model_type = model_types.model_type_of_preset(name)
    cls = model_types.load_object(model_type.model_class)
    assert issubclass(cls, Seq2SeqModelBase)
    for attribute in ("encode", "initial_state", "step", "task_inputs"):
        assert callable(getattr(cls, attribute))
    assert issubclass(cls, SplitStep)


def test_no_consumer_probes_a_model_by_attribute_name():
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if PROBE.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: "
                                 f"{line.strip()}")
    assert not found, "\n".join(found)

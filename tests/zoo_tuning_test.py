"""benchmarks/zoo_tuning.py: a candidate's val scores against the shipped
model's, the differences and the zoo's decision computed, not hand-written."""

import pytest

from benchmark_scripts import load_benchmark

SHIPPED = {"en-de": 37.8, "en-fr": 53.23, "cs-de": 30.29}


@pytest.fixture(scope="module")
def zoo_tuning():
    return load_benchmark("zoo_tuning")


def test_a_candidate_better_everywhere_is_shipped(zoo_tuning):
    averaging = {"last_1": {"en-de": 37.9, "en-fr": 53.1, "cs-de": 30.5},
                 "last_8": {"en-de": 38.0, "en-fr": 53.3, "cs-de": 30.3}}
    result = zoo_tuning.compare_with_shipped(averaging, SHIPPED)
    assert result["last_1_minus_shipped"] == {"en-de": 0.1, "en-fr": -0.13,
                                              "cs-de": 0.21}
    assert result["last_8_minus_shipped"]["cs-de"] == 0.01
    assert result["decision"].startswith("ship last_8:")


def test_a_tie_or_a_loss_in_one_direction_keeps_the_shipped_model(
        zoo_tuning):
    averaging = {"last_1": {"en-de": 37.8, "en-fr": 54.0, "cs-de": 31.0},
                 "last_8": {"en-de": 38.5, "en-fr": 54.0, "cs-de": 29.9}}
    decision = zoo_tuning.compare_with_shipped(averaging, SHIPPED)["decision"]
    assert decision.startswith("not shipped")
    assert decision.endswith("last_1: en-de; last_8: cs-de")


def test_the_shipped_val_scores_come_from_its_scores_file(zoo_tuning):
    from gnmt_tf import pretrained

    card = pretrained.describe("multi30k-transformer")["scores"]["sacrebleu"]
    val = zoo_tuning.shipped_val("multi30k-transformer", ["en-de", "cs-fr"])
    assert val == {"en-de": card["en-de"]["val"], "cs-fr": card["cs-fr"]["val"]}
    assert all(isinstance(v, float) and 20 < v < 60 for v in val.values())
    with pytest.raises(ValueError, match="no val score for en-xx"):
        zoo_tuning.shipped_val("multi30k-transformer", ["en-xx"])


@pytest.mark.parametrize("flags, message", [
    (["--against", "multi30k-transformer", "--directions", "en-xx"],
     "no val score for en-xx"),
    (["--against", "no-such-model"], "no-such-model is not a model"),
    (["--against", "multi30k-transformer", "--limit", "30"],
     "drop --limit"),
    (["--last", "0"], "--last: must be an integer >= 1"),
    (["--alphas", "0.6,-1"], "--alphas"),
])
def test_bad_flags_are_refused_before_any_work(zoo_tuning, tmp_path, capsys,
                                               flags, message):
    with pytest.raises(SystemExit) as exit_info:
        zoo_tuning.main([str(tmp_path), "--name", "x"] + flags)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err

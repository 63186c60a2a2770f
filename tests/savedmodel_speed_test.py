"""benchmarks/savedmodel_speed.py: its flags and output comparison."""

import numpy as np
import pytest

from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("savedmodel_speed")


@pytest.mark.parametrize("argv", [
    ["--export", "a=x"],
    ["--export", "a=x", "--export", "bx"],
    ["--export", "a=x", "--export", "b=y", "--batch-sizes", "16,0"],
    ["--export", "a=x", "--export", "b=y", "--batch-sizes", "1,two"],
    ["--export", "a=x", "--export", "b=y", "--rounds", "0"],
])
def test_bad_flags_are_refused(bench, argv, capsys):
    with pytest.raises(SystemExit) as error:
        bench.parse_args(argv)
    assert error.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_exports_by_name_and_the_task(bench):
    args = bench.parse_args(["--export", "before=/a/1", "--export",
                             "after=/b/1", "--task", "en,fr,caption"])
    assert args.export == {"before": "/a/1", "after": "/b/1"}
    assert args.task == {"src_lang": "en", "tgt_lang": "fr",
                         "tags": "caption"}


def test_outputs_compare_texts_exactly_and_scores_in_float32(bench):
    texts = np.array([b"Ein Hund.", b"Zwei Hunde."])
    scores = np.array([[-1.5], [-2.25]], np.float32)
    reference = [(texts, scores)]
    assert bench.same_outputs(reference, [(texts.copy(), scores * (
        1 + 1e-7))]) == (True, True)
    assert bench.same_outputs(reference, [(texts[::-1], scores)]) == (
        False, True)
    assert bench.same_outputs(reference, [(texts, scores + 0.01)]) == (
        True, False)

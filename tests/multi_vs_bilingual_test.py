"""benchmarks/multi_vs_bilingual.py: which model wins, and its flags."""

import pathlib

import pytest

from benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("multi_vs_bilingual")


MULTI = {"en-de": {"val": 37.58, "test_2016_flickr": 37.35},
         "en-fr": {"val": 52.10, "test_2016_flickr": 54.59}}


def test_a_side_wins_only_where_it_wins_every_split(bench):
    bilingual = {"en-de": {"val": 38.0, "test_2016_flickr": 37.0},
                 "en-fr": {"val": 53.0, "test_2016_flickr": 55.0}}
    rows, winners = bench.compare(MULTI, bilingual, ["en-de", "en-fr"])
    assert winners == {"en-de": "tie", "en-fr": "bilingual"}
    assert rows[1] == {"direction": "en-de", "split": "test_2016_flickr",
                       "multi": 37.35, "bilingual": 37.0,
                       "bilingual_minus_multi": -0.35}
    assert len(rows) == 4
    worse = {"en-de": {"val": 30.0, "test_2016_flickr": 30.0}}
    assert bench.compare(MULTI, worse, ["en-de"])[1] == {"en-de": "multi"}


@pytest.mark.parametrize("argv", [
    ["--multi", "M", "--bilingual", "en-de"],
    ["--multi", "M", "--bilingual", "ende=runs/x"],
    ["--multi", "M", "--bilingual", "en-de=runs/x", "--last", "0"],
    ["--multi", "M", "--bilingual", "en-de=runs/x", "--limit", "-1"],
])
def test_bad_flags_are_refused(bench, argv, capsys):
    with pytest.raises(SystemExit) as error:
        bench.parse_args(argv)
    assert error.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_runs_by_direction(bench):
    args = bench.parse_args(["--multi", "M", "--bilingual", "en-de=runs/a",
                             "--bilingual", "en-fr=runs/b"])
    assert args.bilingual == {"en-de": pathlib.Path("runs/a"),
                              "en-fr": pathlib.Path("runs/b")}


def _results(direction, bleu, command, multi_steps=8000):
    return {"bleu": [{"direction": direction, "split": "val", "multi": 1.0,
                      "bilingual": bleu, "bilingual_minus_multi": bleu - 1}],
            "winner": {direction: "bilingual"},
            "training": {"multi": {"steps": multi_steps},
                         f"bilingual_{direction}": {"steps": 4500}},
            "command": command}


def test_a_later_direction_is_added_to_the_earlier_ones(bench):
    earlier = _results("en-de", 38.3, "run en-de")
    later = _results("en-fr", 55.0, "run en-fr")
    merged = bench.keep_other_directions(later, earlier)
    assert [r["direction"] for r in merged["bleu"]] == ["en-de", "en-fr"]
    assert merged["winner"] == {"en-de": "bilingual", "en-fr": "bilingual"}
    assert set(merged["training"]) == {"multi", "bilingual_en-de",
                                       "bilingual_en-fr"}
    assert merged["commands"] == {"en-de": "run en-de", "en-fr": "run en-fr"}
    # A direction scored again replaces its earlier rows.
    again = bench.keep_other_directions(_results("en-de", 39.0, "again"),
                                        merged)
    assert [(r["direction"], r["bilingual"]) for r in again["bleu"]] == [
        ("en-fr", 55.0), ("en-de", 39.0)]
    assert again["commands"] == {"en-fr": "run en-fr", "en-de": "again"}


def test_rows_of_another_multi_model_are_not_mixed_in(bench):
    earlier = _results("en-de", 38.3, "run en-de", multi_steps=6000)
    with pytest.raises(SystemExit, match="multi-direction model differs"):
        bench.keep_other_directions(_results("en-fr", 55.0, "x"), earlier)

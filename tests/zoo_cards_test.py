"""benchmarks/zoo_cards.py and model_zoo.py's replacement: a shipped
model's card is written from the files beside it, and a replaced version's
scores move to the new card's History (the shipped model is restored if
its replacement fails)."""

import json

import pytest

from benchmark_scripts import load_benchmark

SCORES = {
    "sacrebleu": {"en-de": {"val": 40.01, "test_2016_flickr": 41.5,
                            "test_2017_flickr": 31.25}},
    "chrf": {"en-de": {"val": 62.0, "test_2016_flickr": 63.04,
                       "test_2017_flickr": 57.0}},
    "signatures": {"bleu": "nrefs:1|case:mixed"},
    "wmt22": {}, "train_hours": 3.5, "train_steps": 7000,
    "train_target_tokens": 2.5e7, "size_mb": 15.1,
    "search": {"beam_size": 4, "length_penalty": 0.6},
    "card": {"description": "A test model.", "train_command": "gnmt-tf "
             "train --set learning_rate=0.001", "package_command":
             "python benchmarks/model_zoo.py package RUN", "last": 8}}
HEAD = {"head": {"filters": [32, 32]},
        "trained_on": {"split": "train", "directions": ["en-de", "de-en"],
                       "pairs": 10000, "steps": 500},
        "scores": {"split": "test_2016_flickr",
                   "aer": {"en-de": {"aer_head": 0.2301,
                                     "aer_attention_argmax": 0.5382}}}}
INT8 = {"direction": "en-de", "split": "test_2016_flickr",
        "test_2016_flickr": 41.2, "float_model": 41.5, "size_mb": 7.48,
        "beam_size": 4, "length_penalty": 0.6, "qat": "400 steps",
        "export": "export_tflite(QAT, OUT, 'int8')"}


@pytest.fixture(scope="module")
def zoo_cards():
    return load_benchmark("zoo_cards")


@pytest.fixture(scope="module")
def model_zoo():
    return load_benchmark("model_zoo")


def write_model(directory, scores=SCORES, head=None, int8=None):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text("{}")
    (directory / "scores.json").write_text(json.dumps(scores))
    if head is not None:
        (directory / "alignment_head.json").write_text(json.dumps(head))
    if int8 is not None:
        (directory / "tflite_int8").mkdir()
        (directory / "tflite_int8" / "scores.json").write_text(
            json.dumps(int8))
    return directory


def test_card_of_weights_alone_has_no_export_or_history_section(
        zoo_cards, tmp_path):
    card = zoo_cards.card_text(write_model(tmp_path / "m"), "m", "2 cores")
    assert "| en-de | 40.01 / 62.0 | 41.50 / 63.0 | 31.25 / 57.0 | – |" in card
    assert "A test model." in card and "7000 steps, 25.0 M" in card
    assert "learning_rate=0.001" in card and "last 8" in card
    for title in ("## Alignment head", "## int8", "## History"):
        assert title not in card


def test_card_takes_its_head_and_int8_sections_from_their_files(
        zoo_cards, tmp_path):
    card = zoo_cards.card_text(
        write_model(tmp_path / "m", head=HEAD, int8=INT8), "m", "2 cores")
    head = zoo_cards.section(card, "## Alignment head")
    assert "| en-de | 0.230 | 0.538 |" in head
    head = " ".join(head.split())  # the paragraphs are wrapped
    assert "500 steps on 10,000 train pairs of 2 directions" in head
    int8 = " ".join(zoo_cards.section(card, "## int8 TFLite export").split())
    assert "7.48 MB" in int8
    assert "scores 41.20 BLEU, against 41.50 for the float model" in int8
    assert card.index("## int8") < card.index("## Not good at")


def test_replaced_version_heads_the_history_above_the_old_one(
        zoo_cards, tmp_path):
    old_scores = dict(SCORES, train_steps=12902)
    old_card = zoo_cards.card_text(write_model(tmp_path / "old", old_scores),
                                   "m", "2 cores",
                                   history="The first version: 8000 steps.")
    history = zoo_cards.replaced_version(old_scores, old_card)
    assert " ".join(history.split()).startswith(
        "The version this one replaced: 12902 steps, 3.5 h of training; "
        "trained with `gnmt-tf train --set learning_rate=0.001`.")
    assert "| en-de | 40.01 / 62.0 |" in history
    assert history.endswith("The first version: 8000 steps.")
    new = write_model(tmp_path / "new")
    zoo_cards.write_card(new, "m", "2 cores", history=history)
    zoo_cards.write_card(new, "m", "2 cores")  # again: the History stays
    assert zoo_cards.section((new / "MODEL_CARD.md").read_text(),
                             "## History") == history


def test_the_shipped_cards_history_carries_over(zoo_cards):
    from gnmt_tf import pretrained

    folder = pretrained.locate("multi30k-transformer")
    scores = json.loads((folder / "scores.json").read_text())
    history = zoo_cards.replaced_version(
        scores, (folder / "MODEL_CARD.md").read_text())
    # This version's en-de val, then the earlier version's from its History.
    assert "| en-de | 37.80 / 61.1 |" in history
    assert "| en-de | 37.58 / 60.9 |" in history
    assert history.index("37.80") < history.index("37.58")


def test_a_failed_replacement_puts_the_shipped_model_back(model_zoo,
                                                          tmp_path):
    target = write_model(tmp_path / "shipped", head=HEAD)
    before = sorted(p.name for p in target.iterdir())
    with pytest.raises(RuntimeError, match="scoring failed"):
        with model_zoo.replacing(target, replace=True) as previous:
            assert previous[0] == SCORES
            assert not target.exists()
            target.mkdir()
            (target / "weights.npz").write_bytes(b"partial")
            raise RuntimeError("scoring failed")
    assert sorted(p.name for p in target.iterdir()) == before
    assert [p.name for p in tmp_path.iterdir()] == ["shipped"]


def test_a_replacement_that_succeeds_leaves_no_old_copy(model_zoo, tmp_path):
    target = write_model(tmp_path / "shipped")
    with model_zoo.replacing(target, replace=True):
        write_model(target, dict(SCORES, train_steps=1))
    assert json.loads((target / "scores.json").read_text())[
        "train_steps"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["shipped"]


def test_without_replace_the_shipped_model_is_not_moved(model_zoo, tmp_path):
    target = write_model(tmp_path / "shipped")
    with model_zoo.replacing(target, replace=False) as previous:
        assert previous is None and target.exists()

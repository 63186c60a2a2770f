"""Tests for gnmt_tf.alignment.lexical_table, FastAlign.lexical_table and the
`gnmt-tf lexical-table` command."""

import argparse

import pytest

from gnmt_tf.alignment import cli
from gnmt_tf.alignment.fast_align import FastAlign
from gnmt_tf.alignment.lexical_table import build_lexical_table
from gnmt_tf.text.lexical_table import read_lexical_table
from tests.conftest import toy_pairs

TOY = [("das Haus", "the house"), ("das Buch", "the book"),
       ("ein Buch", "a book")]


def test_fast_align_table_is_its_translation_probabilities():
    aligner = FastAlign(iterations=5).fit(TOY)
    entries = list(aligner.lexical_table())
    assert {(s, t) for s, t, _ in entries} >= {("das", "the"),
                                               ("Buch", "book")}
    for source, target, prob in entries:
        assert prob == aligner.translation_prob(source, target)
    by_source = {}
    for source, target, prob in entries:
        by_source.setdefault(source, []).append(prob)
    assert all(p == sorted(p, reverse=True) for p in by_source.values())
    assert sorted(by_source) == ["Buch", "Haus", "das", "ein"]  # no null
    top = list(aligner.lexical_table(top_k=1))
    assert [(s, t) for s, t, _ in top] == [
        ("das", "the"), ("Haus", "house"), ("Buch", "book"), ("ein", "a")]


def test_reverse_table_conditions_on_the_target():
    aligner = FastAlign(iterations=5, reverse=True).fit(TOY)
    top = {s: t for s, t, _ in aligner.lexical_table(top_k=1)}
    assert top["the"] == "das" and top["book"] == "Buch"


def test_build_on_the_toy_corpus():
    pairs = toy_pairs()
    table = build_lexical_table([en for en, _ in pairs],
                                [de for _, de in pairs], str.split, top_k=3)
    best = {}
    for source, target, _ in table.translations:
        best.setdefault(source, target)
    assert best["dog"] == "Hund" and best["sleeps."] == "schläft."
    assert max(sum(1 for s, _, _ in table.translations if s == w)
               for w in best) <= 3
    counts = dict(table.frequencies)
    assert counts["Ein"] == len(pairs) and counts["Hund"] == len(pairs) // 8
    with pytest.raises(ValueError, match="lines"):
        build_lexical_table(["a"], [], str.split)


def test_command_writes_a_readable_table(tiny_model_dir, toy_data_dir,
                                         tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="gnmt-tf")
    cli.register(parser.add_subparsers(dest="command"))
    output = tmp_path / "lex.tsv"
    args = parser.parse_args([
        "lexical-table", "--source", str(toy_data_dir / "train.en"),
        "--target", str(toy_data_dir / "train.de"), "--model",
        str(tiny_model_dir), "--output", str(output), "--top-k", "2"])
    assert args.func(args) == 0
    table = read_lexical_table(output)
    assert table.frequencies and table.translations
    assert max(len(v) for v in table.translations.values()) <= 2
    # A bad input: one line, exit 2, the output left alone.
    args = parser.parse_args([
        "lexical-table", "--source", str(tmp_path / "missing"), "--target",
        str(toy_data_dir / "train.de"), "--model", str(tiny_model_dir),
        "--output", str(output)])
    before = output.read_text()
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "missing" in err
    assert output.read_text() == before

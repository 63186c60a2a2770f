"""Tests for gnmt_tf.text.lexical_table: the table file round trip."""

import io

import pytest

from gnmt_tf.text.lexical_table import read_lexical_table, write_lexical_table


def test_round_trip(tmp_path):
    out = io.StringIO()
    write_lexical_table(out, [("▁Haus", "▁house", 0.25), ("▁Haus", "▁home",
                                                           0.75),
                              ("東京", "Tokio", 1.0)],
                        [("▁the", 10), ("▁a", 12)])
    path = tmp_path / "lex.tsv"
    path.write_text(out.getvalue(), encoding="utf-8")
    table = read_lexical_table(path)
    assert table.translations == {"▁Haus": [("▁home", 0.75),
                                            ("▁house", 0.25)],
                                  "東京": [("Tokio", 1.0)]}
    assert table.frequencies == [("▁a", 12), ("▁the", 10)]
    assert table.best_translation("▁Haus") == "▁home"
    assert table.best_translation("▁Boot") is None


@pytest.mark.parametrize("line", ["a\tb\n", "a\tb\tx\n", "a\t\t1\n",
                                  "a\tb\t-1\n"])
def test_bad_lines_name_the_line(tmp_path, line):
    path = tmp_path / "lex.tsv"
    path.write_text("a\tb\t0.5\n" + line, encoding="utf-8")
    with pytest.raises(ValueError, match=r"lex.tsv:2:"):
        read_lexical_table(path)


def test_tokens_with_tabs_are_refused():
    with pytest.raises(ValueError, match="bad token"):
        write_lexical_table(io.StringIO(), [("a\tb", "c", 1.0)], [])

"""Tasks: seeded batches, the shipped corpus and its vocabulary, copy/reverse and associative recall."""

import gzip

import pytest
import torch

from posref.lab.tasks import (
    DATA_DIR,
    IGNORE_INDEX,
    CharVocab,
    associative_recall_batch,
    copy_batch,
    lm_batch,
    lm_eval_batches,
    load_char_corpus,
)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def test_lm_batch_windows_are_contiguous_and_shifted_by_one():
    data = torch.arange(1000)  # token value == its offset, so a window is an arange
    x, y = lm_batch(data, 8, 20, gen(0))
    assert x.shape == y.shape == (8, 20)
    starts = x[:, :1]
    torch.testing.assert_close(x, starts + torch.arange(20), rtol=0, atol=0)
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)
    assert int(y.max()) <= 999


def test_lm_batch_is_deterministic_per_seed_and_leaves_global_rng_alone():
    data = torch.arange(5000)
    torch.manual_seed(7)
    expected = torch.rand(2)
    torch.manual_seed(7)
    a, _ = lm_batch(data, 4, 16, gen(1))
    assert torch.equal(torch.rand(2), expected)
    b, _ = lm_batch(data, 4, 16, gen(1))
    c, _ = lm_batch(data, 4, 16, gen(2))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_eval_batches_are_fixed_and_split():
    data = torch.arange(10_000)
    batches = lm_eval_batches(data, 50, n_windows=10, batch_size=4, seed=3)
    assert [x.shape[0] for x, _ in batches] == [4, 4, 2]
    again = lm_eval_batches(data, 50, n_windows=10, batch_size=5, seed=3)
    torch.testing.assert_close(
        torch.cat([x for x, _ in batches]), torch.cat([x for x, _ in again]), rtol=0, atol=0
    )
    other = lm_eval_batches(data, 50, n_windows=10, batch_size=4, seed=4)
    assert not torch.equal(batches[0][0], other[0][0])


def test_lm_batch_errors():
    with pytest.raises(ValueError, match="fewer than context"):
        lm_batch(torch.arange(10), 2, 10, gen(0))
    with pytest.raises(ValueError, match="1-D token stream"):
        lm_batch(torch.zeros(4, 100, dtype=torch.long), 2, 10, gen(0))


def test_vocab_round_trip_and_unknown_characters():
    vocab = CharVocab.from_text("hello world")
    assert vocab.chars == " dehlorw"  # sorted unique characters
    ids = vocab.encode("low rod")
    assert ids.tolist() == [" dehlorw".index(c) for c in "low rod"]
    assert vocab.decode(ids) == "low rod"
    with pytest.raises(ValueError, match=r"characters \['z'\] are not in the vocabulary of 8"):
        vocab.encode("rolz")
    nonascii = CharVocab.from_text("a\u00e9\u4e2d")  # code points beyond one byte work too
    assert nonascii.decode(nonascii.encode("\u4e2da\u00e9")) == "\u4e2da\u00e9"


def test_shipped_corpus():
    corpus = load_char_corpus()
    assert corpus.vocab.size == 96  # printable ASCII (95) and newline
    assert corpus.vocab.chars == "\n" + "".join(chr(c) for c in range(32, 127))
    assert corpus.train.numel() == 3_699_289 and corpus.val.numel() == 699_351  # as data/README.md says
    with gzip.open(DATA_DIR / "stdlib_val.txt.gz", "rt") as f:
        head = f.read(2000)
    assert corpus.vocab.decode(corpus.val[:2000]) == head
    listed = (DATA_DIR / "stdlib_files.txt").read_text().split()
    assert listed[listed.index("val") + 1] == "_py_abc.py" and head.startswith(
        "from _weakrefset import WeakSet"
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_copy_batch(reverse):
    x, y = copy_batch(16, 7, 5, gen(0), reverse=reverse)
    assert x.shape == y.shape == (16, 14)
    source = x[:, :7]
    assert (x[:, 7] == 5).all() and int(source.max()) < 5  # the separator is token n_symbols
    answer = source.flip(1) if reverse else source
    torch.testing.assert_close(y[:, 7:], answer, rtol=0, atol=0)  # the targets from SEP (x index 7) on
    assert (y[:, :7] == IGNORE_INDEX).all() and (y[:, 7:] != IGNORE_INDEX).all()
    # teacher forcing: the input after SEP is the answer shifted right
    torch.testing.assert_close(x[:, 8:], answer[:, :-1], rtol=0, atol=0)
    assert torch.equal(copy_batch(16, 7, 5, gen(0), reverse=reverse)[0], x)


def test_associative_recall_target_is_the_value_after_the_queried_key():
    n_pairs, n_keys, n_values = 6, 10, 4
    x, y = associative_recall_batch(32, n_pairs, n_keys, n_values, gen(0))
    assert x.shape == (32, 2 * n_pairs + 2)
    assert (y[:, :-1] == IGNORE_INDEX).all()
    for row, target in zip(x.tolist(), y[:, -1].tolist(), strict=True):
        keys, values, sep, query = row[0 : 2 * n_pairs : 2], row[1 : 2 * n_pairs : 2], row[-2], row[-1]
        assert len(set(keys)) == n_pairs and all(k < n_keys for k in keys)
        assert all(n_keys <= v < n_keys + n_values for v in values) and sep == n_keys + n_values
        assert target == values[keys.index(query)]
    assert torch.equal(associative_recall_batch(32, n_pairs, n_keys, n_values, gen(0))[0], x)
    with pytest.raises(ValueError, match="n_pairs .* must be <= n_keys"):
        associative_recall_batch(2, 5, 4, 3, gen(0))


def test_associative_recall_queries_every_pair_slot():
    # the query must be any of the n keys, not always the same slot (a model could learn the slot instead)
    n_pairs = 4
    x, _ = associative_recall_batch(256, n_pairs, 8, 4, gen(1))
    keys, query = x[:, 0 : 2 * n_pairs : 2], x[:, -1:]
    slots = (keys == query).float().argmax(1)
    assert set(slots.tolist()) == set(range(n_pairs))

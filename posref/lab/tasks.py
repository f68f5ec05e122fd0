"""Tasks for the length-generalisation lab: a character-level language model and two synthetic tasks.

Every batch function takes a ``torch.Generator``: the same seed gives the same batch, and nothing touches
the global random state. Batches are ``(x, y)`` pairs of ``(B, T)`` long tensors where ``y`` holds the
next-token target of each position, or ``IGNORE_INDEX`` where a position is not scored.

* Character LM: CPython 3.11 standard-library source shipped in ``data/`` (``stdlib_train.txt.gz``,
  ``stdlib_val.txt.gz``; every 10th file held out, see ``data/README.md``).
* Copy / reverse: ``a b c SEP a b c`` (or ``c b a``); only the answer half is scored.
* Associative recall: ``k1 v1 k2 v2 ... SEP k_i`` -> ``v_i`` (Ba et al. 2016, arXiv 1610.06258; used as a
  length probe in the Zoology / H3 line of work).
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from posref._checks import check_positive_int, check_tensor
from posref._data import DATA_DIR
from posref.i18n import _

IGNORE_INDEX = -100  # the default ignore_index of torch.nn.functional.cross_entropy


# ----------------------------------------------------------------------------------------------------------
# character-level language model


@dataclass(frozen=True)
class CharVocab:
    """A character vocabulary: ``chars[i]`` is token ``i`` (sorted, so the ids do not depend on file order)."""

    chars: str

    @classmethod
    def from_text(cls, text: str) -> CharVocab:
        return cls("".join(sorted(set(text))))

    @property
    def size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """``str`` -> ``(len(text),)`` long tensor; a character outside the vocabulary is an error."""
        codes = torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32).long()  # code points
        vocab_codes = torch.tensor([ord(c) for c in self.chars], dtype=torch.long)  # sorted ascending
        ids = torch.searchsorted(vocab_codes, codes).clamp(max=self.size - 1)
        unknown = vocab_codes[ids] != codes
        if unknown.any():
            missing = sorted({chr(c) for c in codes[unknown][:1000].tolist()})
            raise ValueError(
                _("characters {missing} are not in the vocabulary of {size} characters").format(
                    missing=missing[:10], size=self.size
                )
            )
        return ids

    def decode(self, ids: torch.Tensor) -> str:
        return "".join(self.chars[i] for i in ids.tolist())


@dataclass(frozen=True)
class CharCorpus:
    """Train and validation token streams (1-D long tensors) with their shared vocabulary."""

    vocab: CharVocab
    train: torch.Tensor
    val: torch.Tensor


def _read_gzip_text(path: Path) -> str:
    if not path.exists():
        raise FileNotFoundError(
            _(
                "{path} is missing; rebuild it with `python tools/make_stdlib_corpus.py` in a checkout of the course"
            ).format(path=path)
        )
    with gzip.open(path, "rt", encoding="ascii") as f:
        return f.read()


@lru_cache(maxsize=2)
def load_char_corpus(data_dir: str | Path = DATA_DIR) -> CharCorpus:
    """The shipped Python-source corpus, encoded. The vocabulary is every character of train + validation
    (96 for the shipped text: printable ASCII and newline). Cached: repeated calls return the same object."""
    data_dir = Path(data_dir)
    train_text = _read_gzip_text(data_dir / "stdlib_train.txt.gz")
    val_text = _read_gzip_text(data_dir / "stdlib_val.txt.gz")
    vocab = CharVocab.from_text(train_text + val_text)
    return CharCorpus(vocab, vocab.encode(train_text), vocab.encode(val_text))


def _check_stream(data: torch.Tensor, context: int) -> None:
    check_tensor("data", data)
    check_positive_int("context", context)
    if data.ndim != 1:
        raise ValueError(
            _("data must be a 1-D token stream, got shape {data_shape}").format(data_shape=tuple(data.shape))
        )
    if data.numel() < context + 1:
        raise ValueError(
            _("data has {n_tokens} tokens, fewer than context + 1 = {needed}").format(
                n_tokens=data.numel(), needed=context + 1
            )
        )


def lm_batch(
    data: torch.Tensor, batch_size: int, context: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of a token stream -> ``x, y`` of shape ``(B, T)``, ``y[:, t] = x[:, t + 1]`` in the stream.

    ``generator`` must live on the CPU; move the batch to your device afterwards.
    """
    _check_stream(data, context)
    check_positive_int("batch_size", batch_size)
    starts = torch.randint(0, data.numel() - context, (batch_size,), generator=generator)
    # (B, 1) + (T + 1,) -> (B, T + 1) indices into the stream
    windows = data[starts[:, None] + torch.arange(context + 1)]
    return windows[:, :-1], windows[:, 1:]


def lm_eval_batches(
    data: torch.Tensor, context: int, *, n_windows: int = 128, batch_size: int = 16, seed: int = 0
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A fixed evaluation set: ``n_windows`` windows of length ``context`` at seeded random offsets, split
    into batches of at most ``batch_size``. The same ``(context, n_windows, seed)`` always gives the same
    windows, so losses at different lengths and of different models are comparable."""
    check_positive_int("n_windows", n_windows)
    check_positive_int("batch_size", batch_size)
    x, y = lm_batch(data, n_windows, context, torch.Generator().manual_seed(seed))
    return list(zip(x.split(batch_size), y.split(batch_size), strict=True))


# ----------------------------------------------------------------------------------------------------------
# synthetic tasks


def copy_batch(
    batch_size: int, n_tokens: int, n_symbols: int, generator: torch.Generator, *, reverse: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Copy (or reverse) ``n_tokens`` random symbols after a separator.

    Tokens: symbols ``0 .. n_symbols - 1``, separator ``n_symbols`` (vocabulary ``n_symbols + 1``). The full
    sequence is ``s_1 .. s_n SEP a_1 .. a_n`` with ``a = s`` (or ``s`` reversed); ``x`` is it without its last
    token and ``y`` without its first, so ``x, y`` are ``(B, 2n)``. Only the ``n`` answer targets are scored;
    the prompt's targets are ``IGNORE_INDEX``.
    """
    check_positive_int("batch_size", batch_size)
    check_positive_int("n_tokens", n_tokens)
    check_positive_int("n_symbols", n_symbols)
    source = torch.randint(0, n_symbols, (batch_size, n_tokens), generator=generator)
    answer = source.flip(1) if reverse else source
    sep = torch.full((batch_size, 1), n_symbols)
    seq = torch.cat((source, sep, answer), dim=1)  # (B, 2n + 1)
    x, y = seq[:, :-1], seq[:, 1:].clone()
    y[:, :n_tokens] = IGNORE_INDEX  # targets s_2 .. s_n, SEP are not predictable
    return x, y


def associative_recall_batch(
    batch_size: int, n_pairs: int, n_keys: int, n_values: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """Key-value recall: ``k_1 v_1 .. k_n v_n SEP k_q`` -> ``v_q``, with ``k_q`` one of the ``n`` keys.

    Keys are distinct within a sequence. Tokens: keys ``0 .. n_keys - 1``, values ``n_keys .. n_keys +
    n_values - 1``, separator ``n_keys + n_values`` (vocabulary ``n_keys + n_values + 1``). ``x`` is
    ``(B, 2n + 2)``; ``y`` is ``IGNORE_INDEX`` except at the last position, whose target is ``v_q``.
    """
    for name, value in (
        ("batch_size", batch_size),
        ("n_pairs", n_pairs),
        ("n_keys", n_keys),
        ("n_values", n_values),
    ):
        check_positive_int(name, value)
    if n_pairs > n_keys:
        raise ValueError(
            _("n_pairs ({n_pairs}) must be <= n_keys ({n_keys}): keys are distinct within a sequence").format(
                n_pairs=n_pairs, n_keys=n_keys
            )
        )
    keys = torch.rand(batch_size, n_keys, generator=generator).argsort(dim=1)[:, :n_pairs]  # (B, n) distinct
    values = n_keys + torch.randint(0, n_values, (batch_size, n_pairs), generator=generator)
    which = torch.randint(0, n_pairs, (batch_size, 1), generator=generator)
    sep = torch.full((batch_size, 1), n_keys + n_values)
    pairs = torch.stack((keys, values), dim=2).flatten(1)  # (B, n, 2) -> (B, 2n): k1 v1 k2 v2 ...
    x = torch.cat((pairs, sep, keys.gather(1, which)), dim=1)  # (B, 2n + 2)
    y = torch.full_like(x, IGNORE_INDEX)
    y[:, -1] = values.gather(1, which)[:, 0]
    return x, y

"""The length-generalisation lab of notebooks 06-08: position handlers inside a tiny decoder, trained short and
evaluated long.

* ``positions``: ``PositionHandler`` (its hooks are the interface a handler of your own implements) and one
  handler per method (learned, sinusoidal, ALiBi, T5, RoPE, NoPE); ``handler_attention`` runs one attention
  layer through a handler;
* ``model``: ``TinyDecoder``, a pre-norm decoder that takes any handler;
* ``tasks``: the character corpus and two synthetic tasks (copy / reverse, associative recall);
* ``train``: the training loop (``from posref.lab.train import TrainConfig, train``; not re-exported here, so
  that loading a model never imports training);
* ``evaluate``: loss and accuracy per position and per evaluation length;
* ``checkpoints``: the shipped models, ``posref train-checkpoints`` retrains them;
* ``experiments``: notebooks 07b and 08's experiments (the toy's scaling family, a fine-tune at length, DroPE's
  recalibration, LongRoPE's objective), which ``seeds`` repeats over training seeds (``posref seed-records``).

The lab imports the core (``posref.absolute``, ``posref.relative``, ``posref.rope``), never the reverse.
"""

from posref.lab.checkpoints import checkpoint_info, load_checkpoint
from posref.lab.evaluate import evaluate_lengths, per_position_accuracy, per_position_loss
from posref.lab.model import TinyDecoder, build_model
from posref.lab.positions import (
    POSITION_METHODS,
    NoPE,
    PositionHandler,
    handler_attention,
    make_position_handler,
)
from posref.lab.tasks import (
    CharVocab,
    associative_recall_batch,
    copy_batch,
    lm_batch,
    lm_eval_batches,
    load_char_corpus,
)

__all__ = [
    "POSITION_METHODS",
    "CharVocab",
    "NoPE",
    "PositionHandler",
    "TinyDecoder",
    "associative_recall_batch",
    "build_model",
    "checkpoint_info",
    "copy_batch",
    "evaluate_lengths",
    "handler_attention",
    "lm_batch",
    "lm_eval_batches",
    "load_char_corpus",
    "load_checkpoint",
    "make_position_handler",
    "per_position_accuracy",
    "per_position_loss",
]

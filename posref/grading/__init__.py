"""Checkers for the course's graded functions: one per function, shared by visible and hidden tests.

``check_<name>(fn, *, hidden=False, device=None)`` compares a student's ``fn`` with the posref reference and
raises ``CheckFailed`` (an ``AssertionError``) describing the first case that differs. Visible mode uses a few
readable cases with a fixed seed; hidden mode draws many cases at grading time (seed from ``os.urandom``).

The package shows its three concerns in its folders, over a shared vocabulary at the top:

- ``cases``, ``report``, ``difference``, ``frames``, ``rules``, ``watch`` (and ``rope_cases``, ``fingerprints``,
  ``threads``): how cases are drawn, how a difference is found, said and hinted (and where the student's code
  raised), which of posref's implementations a graded cell may not use (``rules`` reads the source for the early
  message, ``watch`` sees what runs, in every thread the answer starts, knowing posref's code by what it computes).
  Every other part of grading builds on these.
- ``checks/``: the correctness checkers of each notebook (``order`` 01, ``absolute`` 02, ``relative`` 03, ``rope`` and
  ``derivation`` 04, ``rope_analysis`` 05, ``lab`` 06/08, ``scaling`` 07).
- ``speed/``: the speed machinery (``check.SpeedCheck``, ``timing``, ``links``, ``budgets``, ``calibration``) and
  every speed check, declared one way (a ``SpeedCheck``) in a module named after its notebook's checkers.
- ``child/``: the score of record's child process (``remote``, ``plain_data``, ``forkserver``, ``processes``,
  ``scratch``, ``rounds``), used by ``autograder/`` only; it lives in posref because the sandbox holds posref alone.

Arrows: ``checks`` and ``speed`` import the shared modules and the posref core (and the lab), never each other
and never ``child``; ``child`` imports the shared modules and ``speed`` (a timed round runs in the child). Nothing
here imports training, the explorers, the notebooks' flags or the autograder (``tests/test_layers.py``).

Writing a checker for a new function takes a case list and one call::

    def check_thing(fn, *, hidden=False, device=None):
        draw = Draw(hidden=hidden, device=device)
        cases = [Case((draw.randn(3, 4),)) for _ in range(draw.n(3, 30))]
        first_difference("thing", fn, posref.thing, cases, mistakes={"hint": wrong_variant})
"""

from posref.grading.cases import Draw, Probe, resolve_device
from posref.grading.checks.absolute import check_learned_positions, check_shift_matrix, check_sinusoidal_pe
from posref.grading.checks.derivation import check_rotations_from_step, check_step_from_two
from posref.grading.checks.lab import (
    check_alibi_handler,
    check_causal_mean,
    check_drop,
    check_nope_handler,
    check_per_position_loss,
    check_rope_handler,
)
from posref.grading.checks.order import check_attention, check_equivariance_error
from posref.grading.checks.relative import (
    check_alibi_bias,
    check_alibi_slopes,
    check_t5_bucket,
    check_t5_learned_bias,
)
from posref.grading.checks.rope import check_apply_rope, check_rope_cos_sin, check_rope_scores
from posref.grading.checks.rope_analysis import check_p_rope, check_pair_norms, check_score_by_distance
from posref.grading.checks.scaling import (
    check_frequencies,
    check_longrope_mutation,
    check_rope_frequencies_linear,
    check_rope_frequencies_ntk,
    check_rope_frequencies_ntk_by_parts,
    check_rope_frequencies_yarn,
)
from posref.grading.difference import difference
from posref.grading.report import Case, CheckFailed, first_difference
from posref.grading.speed.absolute import check_sinusoidal_pe_speed
from posref.grading.speed.check import speed_line
from posref.grading.speed.lab import (
    check_alibi_handler_attention_speed,
    check_causal_mean_speed,
    check_per_position_loss_speed,
    check_rope_handler_attention_speed,
)
from posref.grading.speed.order import check_scaled_dot_product_attention_speed
from posref.grading.speed.relative import (
    check_alibi_bias_speed,
    check_t5_bucket_speed,
    check_t5_learned_bias_speed,
)
from posref.grading.speed.rope import check_apply_rope_speed
from posref.grading.speed.timing import speed_ratio

__all__ = [
    "Case",
    "CheckFailed",
    "Draw",
    "Probe",
    "check_alibi_bias",
    "check_alibi_bias_speed",
    "check_alibi_handler",
    "check_alibi_handler_attention_speed",
    "check_alibi_slopes",
    "check_apply_rope",
    "check_apply_rope_speed",
    "check_attention",
    "check_causal_mean",
    "check_causal_mean_speed",
    "check_drop",
    "check_equivariance_error",
    "check_frequencies",
    "check_learned_positions",
    "check_longrope_mutation",
    "check_nope_handler",
    "check_p_rope",
    "check_pair_norms",
    "check_per_position_loss",
    "check_per_position_loss_speed",
    "check_rope_cos_sin",
    "check_rope_frequencies_linear",
    "check_rope_frequencies_ntk",
    "check_rope_frequencies_ntk_by_parts",
    "check_rope_frequencies_yarn",
    "check_rope_handler",
    "check_rope_handler_attention_speed",
    "check_rope_scores",
    "check_rotations_from_step",
    "check_scaled_dot_product_attention_speed",
    "check_score_by_distance",
    "check_shift_matrix",
    "check_sinusoidal_pe",
    "check_sinusoidal_pe_speed",
    "check_step_from_two",
    "check_t5_bucket",
    "check_t5_bucket_speed",
    "check_t5_learned_bias",
    "check_t5_learned_bias_speed",
    "difference",
    "first_difference",
    "resolve_device",
    "speed_line",
    "speed_ratio",
]

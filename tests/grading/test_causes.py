"""Every failed check says why in a form that can be counted (issue 40.1): ``CheckFailed.cause``, a
``posref.grading.failure.Cause`` set where the message is made. A named mistake's cause is its hint's catalog key,
the same whichever edition the student speaks; every other failure has a kind (an exception's type, the stub, a
wrong shape, dtype or device, wrong values with no named mistake, ...)."""

from __future__ import annotations

import pytest
import student_impls as s
import torch
from test_checkers import MISTAKES

from posref import i18n
from posref.grading import CheckFailed, check_apply_rope, check_sinusoidal_pe
from posref.grading.child.remote import BudgetSpent, ChildFailed
from posref.grading.failure import KINDS, Cause, StudentError

# MISTAKES' failures that name no mistake: a wrong dtype is said by the comparison itself
NOT_NAMED = {"apply_rope_float32_out": "dtype"}


def _failure(check, fn, **options) -> CheckFailed:
    with pytest.raises(CheckFailed) as failed:
        check(fn, **options)
    return failed.value


@pytest.mark.parametrize("lang", ["en", "zh-TW", "zh-CN"])
@pytest.mark.parametrize(("check", "fn", "hint"), MISTAKES, ids=lambda v: getattr(v, "__name__", "")[:40])
def test_a_named_mistake_is_counted_by_its_catalog_key_in_every_edition(check, fn, hint, lang):
    name = fn.__name__
    with i18n.speaking(lang):
        cause = _failure(check, fn).cause
    if name in NOT_NAMED:
        assert cause == Cause(NOT_NAMED[name]), cause
        return
    assert cause.kind == "mistake", cause
    assert hint in cause.detail, (hint, cause.detail)  # the English key, in zh-TW and zh-CN too
    assert cause.detail in i18n.translations("zh-TW"), "a cause that is no key of the catalogs"
    with i18n.speaking("en"):
        assert cause == _failure(check, fn).cause


def _wrong_shape(n, dim, base=10000.0):
    return torch.zeros(dim, n)


def _float16(n, dim, base=10000.0):
    return s.sinusoidal_pe_exp_log(n, dim, base).half()


def _a_list(n, dim, base=10000.0):
    return s.sinusoidal_pe_exp_log(n, dim, base).tolist()


def _noise(n, dim, base=10000.0):
    return torch.rand(n, dim, generator=torch.Generator().manual_seed(n * 1000 + dim))


def _key_error(n, dim, base=10000.0):
    return {}["table"]


def _stub(n, dim, base=10000.0):
    raise NotImplementedError("Exercise 2: build the table")


def _rope_right_but_in_place(x, cos, sin, layout="half"):
    out = s.apply_rope_complex(x, cos, sin, layout)
    x.zero_()
    return out


def _rope_wrong_device(x, cos, sin, layout="half"):
    return s.apply_rope_complex(x, cos, sin, layout).to("meta")


KINDS_OF_FAILURE = [
    (check_sinusoidal_pe, _wrong_shape, Cause("shape")),
    (check_sinusoidal_pe, _float16, Cause("dtype")),
    (check_sinusoidal_pe, _a_list, Cause("type")),
    (check_sinusoidal_pe, _noise, Cause("values")),
    (check_sinusoidal_pe, _key_error, Cause("raised", "KeyError")),
    (check_sinusoidal_pe, _stub, Cause("stub")),
    (check_apply_rope, _rope_right_but_in_place, Cause("in-place")),
    (check_apply_rope, _rope_wrong_device, Cause("device")),
]


@pytest.mark.parametrize(
    ("check", "fn", "cause"), KINDS_OF_FAILURE, ids=[k[1].__name__ for k in KINDS_OF_FAILURE]
)
def test_a_failure_without_a_named_mistake_says_its_kind(check, fn, cause):
    for hidden in (False, True):
        assert _failure(check, fn, hidden=hidden).cause == cause


def test_what_the_child_did_has_its_cause():
    assert StudentError("ValueError: no", types=("ValueError", "Exception")).cause == Cause(
        "raised", "ValueError"
    )
    assert StudentError("NotImplementedError", types=("NotImplementedError",)).cause == Cause("stub")
    assert StudentError("returned a generator", raised=False).cause == Cause("unreadable")
    assert StudentError("ran posref.apply_rope", raised=False, kind="rule").cause == Cause("rule")
    # a type name is the child's word: one that is no name is not kept
    assert StudentError("x", types=("<img src=x onerror=alert(1)>",)).cause == Cause("raised", "?")
    assert StudentError("x", types=("a" * 101,)).cause == Cause("raised", "?")
    # a name in any script is a name: a zh-TW student's own exception keeps its name
    assert StudentError("x", types=("形狀錯誤", "ValueError")).cause == Cause("raised", "形狀錯誤")
    assert StudentError("x", types=("mine.形狀錯誤",)).cause == Cause("raised", "mine.形狀錯誤")
    assert StudentError("x").cause == Cause("raised", "?")
    assert ChildFailed("killed by signal 9").cause == Cause("crashed")
    assert ChildFailed("no answer within 60 s", hung=True).cause == Cause("timeout")
    assert BudgetSpent("the time ran out").cause == Cause("out-of-time")

    def hangs(n, dim, base=10000.0):
        raise ChildFailed("no answer within 60 s (an infinite loop?)", hung=True)

    assert _failure(check_sinusoidal_pe, hangs).cause == Cause("timeout")


def test_a_cause_is_one_of_the_kinds_and_reads_back_from_a_record():
    with pytest.raises(ValueError, match="not a kind of failure"):
        Cause("oops")
    assert str(Cause("mistake", "sin and cos are swapped")) == "mistake: sin and cos are swapped"
    assert str(Cause("shape")) == "shape"
    assert Cause.from_json({"kind": "raised", "detail": "IndexError"}) == Cause("raised", "IndexError")
    for junk in (None, "shape", {"kind": "oops"}, {"kind": "raised", "detail": 3}, [1]):
        assert Cause.from_json(junk) == Cause("unknown")
    assert set(KINDS) >= {
        "mistake",
        "raised",
        "stub",
        "timeout",
        "rule",
        "slow",
        "shape",
        "dtype",
        "device",
        "values",
    }


def test_a_translation_leads_back_to_its_key_in_each_language():
    # msgid() is the inverse of _(): the catalogs translate no two messages alike
    for lang in ("zh-TW", "zh-CN"):
        translated = i18n.translations(lang)
        assert len(set(translated.values())) == len(translated)
        with i18n.speaking(lang):
            assert all(i18n.msgid(i18n._(key)) == key for key in translated)
            assert i18n.msgid("not a message of the catalogs") == "not a message of the catalogs"

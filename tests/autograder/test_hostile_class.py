"""A hostile class through the real commands (issues 24.4-24.6, 25.1-25.3): `python -m autograder import`,
`autograde`, `feedback` and `export` as an instructor types them, on one class of the demo assignment.

The class holds correct classmates: alice and bob, and zoe, graded after every other student (ids are graded in
order), and students who attack what the instructor's steps read: their archive entries (paths out of the course, links, damaged entries, a zip bomb, an
archive inside the archive, names that are not UTF-8, folders where a notebook should be, more than a submission
may hold), their identity (ids that are not ids, that look like a classmate's, two participants of one name, a
roster id that is a path), their hand-in time (an uploaded timestamp.txt), nbgrader's markers in their text,
what their grading process reports (30,000 errors of cells that do not exist), and an answer too deep for Python's
parser (issue 25.5: its function's points only). One class is graded once per
module (a few seconds a student); each test reads what the commands left.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import tarfile
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest
from conftest import demo_environment
from course_helpers import assert_safe_csv, needs_bwrap, run_command

from autograder.course import REPO, gradebook
from autograder.demo.submissions import PE, ROPE
from autograder.intake.unpack import MAX_FILE

pytestmark = [pytest.mark.slow, needs_bwrap]

DUE = datetime(2026, 10, 5, 21, 59, tzinfo=timezone.utc)
ON_TIME = DUE - timedelta(hours=2)
GRADED = [
    "alice",
    "bob",
    "deep",
    "early",
    "markers",
    "zoe",
]  # what reaches a sandbox; the others are refused first
# an answer cell too deep for the parser (a 100,000-term sum): its function earns nothing, the rest is graded
DEEP = PE + "\nTOTAL = " + " + ".join(["1"] * 100_000) + "\n"
MARKERS = "### BEGIN HIDDEN TESTS\n### BEGIN SOLUTION\n### BEGIN MARK SCHEME\n{{ nbgrader }}\n"
# the answer cell that rewrites what its grading process reports: 30,000 errors of cells that do not exist
CHATTY = (
    PE
    + """
import posref.grading.child.framing as _framing
_real = _framing.encode
def _loud(message):
    if isinstance(message, dict) and message.get("event") == "ready":
        errors = {i: "=HYPERLINK(1);" * 150 for i in range(1000, 31000)}
        message = {**message, "errors": {**errors, **message["errors"]}}
    return _real(message)
_framing.encode = _loud
"""
)


def _notebook(released: Path, pe: str = PE, rope: str = ROPE, extra: list | None = None) -> bytes:
    nb = nbformat.read(released, as_version=4)
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        cell.source = {"sinusoidal_pe": pe, "apply_rope": rope}.get(grade_id, cell.source)
    nb.cells += extra or []
    return nbformat.writes(nb).encode()


def _tar(path: Path, members: list[tuple[str, object]], when: datetime) -> Path:
    """A tar.gz of ``(name, bytes | ("link", target) | "dir")``, every entry at time ``when``."""
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.mtime = when.timestamp()
            if isinstance(data, tuple):
                info.type, info.linkname = tarfile.SYMTYPE, data[1]
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return path


def _zip(path: Path, members: list[tuple[str, bytes]], when: datetime, *, deflate: bool = False) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=when.astimezone().timetuple()[:6])
            info.compress_type = archive.compression
            archive.writestr(info, data)
    return path


def _damage(path: Path, marker: bytes) -> None:
    """Flip a byte of the stored entry whose content holds ``marker``: its CRC no longer matches."""
    data = bytearray(path.read_bytes())
    at = data.index(marker)
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def hostile_class(released_demo, tmp_path_factory):
    """Every command on one class; returns (course, {step: CompletedProcess}, outside folder)."""
    tmp = tmp_path_factory.mktemp("hostile")
    course, outside = tmp / "deep" / "er" / "course", tmp / "deep"
    shutil.copytree(released_demo, course)
    mp = pytest.MonkeyPatch()
    demo_environment(mp, course)
    mp.setenv("POSREF_FAST", "1")
    with gradebook() as gb:
        gb.update_or_create_assignment("positions", duedate=DUE.replace(tzinfo=None))
    released = course / "release" / "positions" / "positions.ipynb"
    good, wrong = (
        _notebook(released),
        _notebook(released, pe="sinusoidal_pe = None", rope="apply_rope = None"),
    )
    nb = "positions/positions.ipynb"
    steps = {}

    # a class as a folder layout, in a tar: links, bytes that are no UTF-8, folders for notebooks, ids that are not
    marked = [nbformat.v4.new_markdown_cell(MARKERS + "my notes, which the feedback must keep")]
    members = [
        (f"alice/{nb}", good),
        (f"deep/{nb}", _notebook(released, pe=DEEP)),
        (f"markers/{nb}", _notebook(released, pe=CHATTY + "# END HIDDEN TESTS\n", extra=marked)),
        (f"zoe/{nb}", good),
        ("linker/positions/positions.ipynb", ("link", "../../alice/positions/positions.ipynb")),
        (f"nonutf/{nb}", good),
        ("nonutf/positions/\udcff\udcfe.txt", b"x"),
        ("folderbook/positions/positions.ipynb/inside.txt", b"x"),
        ("huge/positions/positions.ipynb", b" " * (MAX_FILE + 1)),
        *[(f"padded/positions/pad{i}.bin", b"\0" * (MAX_FILE // 3)) for i in range(4)],  # 4/3 of the bound
        (f"padded/{nb}", good),
        ("deep/positions/" + "d/" * 20 + "x.txt", b"x"),
        ("../../escaped/positions/positions.ipynb", wrong),
        (f"/{outside}/absolute/{nb}", wrong),
        *[
            (f"{name}/{nb}", wrong)
            for name in ["ａｌｉｃｅ", "alice\u200b", "a+b", "-rf", "a\u202eb", "bob\u0301"]
        ],
    ]
    steps["import tar"] = run_command("import", str(_tar(tmp / "class.tar.gz", members, ON_TIME)))

    # the same in a zip: a damaged entry, a zip bomb, an archive inside the archive, paths out
    inner = _zip(tmp / "inner.zip", [("bomb.bin", b"\0" * (MAX_FILE * 2))], ON_TIME, deflate=True)
    members = [
        (f"bob/{nb}", good),
        (f"crc/{nb}", good.replace(b"sinusoidal_pe", b"sinusoidal_pF", 1)),
        ("nested/positions/inner.zip", inner.read_bytes()),
        ("../../zipescape/positions/positions.ipynb", wrong),
    ]
    archive = _zip(tmp / "class.zip", members, ON_TIME, deflate=False)
    _damage(archive, b"sinusoidal_pF")
    bomb = _zip(
        tmp / "bomb-class.zip",
        [("bomb/positions/positions.ipynb", b"\0" * (MAX_FILE * 4))],
        ON_TIME,
        deflate=True,
    )
    steps["import zip"] = run_command("import", str(archive))
    steps["import bomb"] = run_command("import", str(bomb))

    # a Moodle download: two participants of one name, a name two roster students share, a roster id that is a
    # path, a made id that is another roster student's, and a timestamp.txt uploaded 106 hours late
    roster = tmp / "roster.csv"
    roster.write_text("id,first_name,last_name\nalice,Jane,Smith\nlw1,Li,Wei\nlw2,Li,Wei\n../../x,Evil,Path\n"
                      "early,Tim,Early\nalice_x,Someone,Else\n")  # fmt: skip
    folder = "{}_{}_assignsubmission_file_/"
    late_by = DUE + timedelta(hours=106)
    moodle = tmp / "moodle.zip"
    with zipfile.ZipFile(moodle, "w") as z:
        for who, uid, data, when in [("Jane Smith", 111, wrong, ON_TIME), ("Jane Smith", 222, wrong, ON_TIME),
                                     ("Li Wei", 333, wrong, ON_TIME), ("Evil Path", 555, wrong, ON_TIME),
                                     ("Alice X", 777, wrong, ON_TIME), ("Tim Early", 444, good, late_by)]:  # fmt: skip
            stamp = when.astimezone().timetuple()[:6]
            z.writestr(zipfile.ZipInfo(folder.format(who, uid) + "positions.ipynb", stamp), data)
        z.writestr(
            zipfile.ZipInfo(folder.format("Tim Early", 444) + "timestamp.txt", stamp), "2026-01-01 00:00 UTC"
        )
    steps["import moodle"] = run_command("import", str(moodle), "--roster", str(roster))

    # what nbgrader's exchange could leave in submitted/ (import refuses these): the grader must go on
    submitted = course / "submitted"
    for student, files in [
        ("xbytes", {"positions.ipynb": good, b"\xff\xfe.txt": b"x"}),
        ("xtime", {"positions.ipynb": good, "timestamp.txt": b"\xffnot a time"}),
        ("xlink", {}),
        ("xfolder", {}),
        ("xbig", {"positions.ipynb": good, "pad.bin": b"\0" * (MAX_FILE + 1)}),
    ]:
        folder = submitted / student / "positions"
        folder.mkdir(parents=True)
        for name, data in files.items():
            Path(os.fsdecode(os.path.join(os.fsencode(folder), os.fsencode(name)))).write_bytes(data)
    (submitted / "xlink" / "positions" / "positions.ipynb").symlink_to(submitted / "alice" / nb)
    (submitted / "xfolder" / "positions" / "positions.ipynb").mkdir()

    steps["autograde"] = run_command("autograde", "positions", "--workers", "1", "--cell-timeout", "30")
    steps["feedback"] = run_command("feedback", "positions")
    # a notebook nbgrader cannot read in autograded/, a record that is no JSON: that student's failure only
    (course / "autograded" / "broken" / "positions").mkdir(parents=True)
    (course / "autograded" / "broken" / "positions" / "positions.ipynb").write_text("{not json")
    (course / "records" / "positions" / "ghost.json").write_text("{not json")
    for page in (course / "feedback").glob("*/positions/positions.html"):
        page.unlink()
    steps["feedback again"] = run_command("feedback", "positions")
    # Canvas: the LATE flag decides, not the timestamp.txt uploaded beside the notebook (after grading: not graded)
    canvas = _zip(tmp / "canvas.zip", [("latecomer_LATE_12345_67890_positions.ipynb", good),
                                       ("latecomer_12345_67891_timestamp.txt", b"2026-01-01 00:00 UTC")], ON_TIME)  # fmt: skip
    steps["import canvas"] = run_command("import", str(canvas))
    steps["export"] = run_command("export", "positions")
    yield course, steps, outside
    mp.undo()


def _rows(course: Path) -> dict[str, dict]:
    with open(course / "positions-grades.csv", newline="") as f:
        return {row["student"]: row for row in csv.DictReader(f)}


def test_import_refuses_each_bad_submission_with_its_reason_and_imports_everyone_else(hostile_class):
    course, steps, outside = hostile_class
    tar, zip_, moodle = steps["import tar"], steps["import zip"], steps["import moodle"]
    for step in (tar, zip_, moodle):
        assert step.returncode == 1 and "could not import" in step.stderr, step.stderr
    assert re.search(r"imported: alice, deep, markers, zoe$", tar.stdout.strip()), tar.stdout
    for student, reason in [
        ("linker/positions", "'positions.ipynb' could not be unpacked from the archive: a link"),
        ("nonutf/positions", "a file name that is not UTF-8"),
        ("folderbook/positions", "'positions.ipynb' is not a notebook file but a folder"),
        (
            "huge/positions",
            "'positions.ipynb' could not be unpacked from the archive: 32.0 MiB, more than a submission may hold",
        ),
        ("padded/positions", "it holds more than 32 MiB (a submission may hold that much)"),
        (
            "ａｌｉｃｅ/positions",
            "'ａｌｉｃｅ' is not a student id: it is not in Unicode's NFKC form (write it as 'alice')",
        ),
        ("'alice\\u200b'/positions", "is not a student id"),
        ("a+b/positions", "is not a student id"),
        ("-rf/positions", "is not a student id"),
        ("'a\\u202eb'/positions", "is not a student id"),
    ]:
        lines = [line for line in tar.stderr.splitlines() if line.startswith(f"could not import {student}: ")]
        assert len(lines) == 1 and reason in lines[0], (student, tar.stderr)
    assert (
        "left out of class.tar.gz: deep/positions/" in tar.stderr
        and "more than 16 folders deep" in tar.stderr
    )
    assert (
        "left out of class.tar.gz: ../../escaped/positions/positions.ipynb: a path that leaves" in tar.stderr
    )
    assert (
        "a path that leaves the archive's folder" in tar.stderr.split("absolute/positions")[1].splitlines()[0]
    )
    assert "imported: bob, nested" in zip_.stdout, zip_.stdout
    assert (
        "could not import crc/positions: 'positions.ipynb' could not be unpacked from the archive: damaged"
        in zip_.stderr
    )
    assert (course / "submitted" / "nested" / "positions" / "inner.zip").is_file()  # not unpacked in turn
    assert sorted(p.name for p in (course / "submitted" / "nested" / "positions").iterdir()) == [
        "inner.zip",
        "timestamp.txt",
    ]
    # nothing left the course's folders; no refused student has a folder
    assert sorted(p.name for p in outside.iterdir()) == ["er"]
    assert not any((outside.parent / name).exists() for name in ("escaped", "zipescape", "x", "absolute"))
    for student in os.listdir(course / "submitted"):
        assert student in GRADED + [
            "bob",
            "nested",
            "latecomer",
            "xbytes",
            "xtime",
            "xlink",
            "xfolder",
            "xbig",
        ]
    # and each has a row in the export, saying why (an import refused left its student out of the CSV)
    rows = _rows(course)
    for student, reason in [
        ("huge", "more than a submission may hold"),
        ("padded", "it holds more than 32 MiB"),
        ("crc", "damaged"),
        ("ａｌｉｃｅ", "not in Unicode's NFKC form"),
        ("Li Wei (Moodle 333)", "fits more than one roster student"),
        ("Evil Path (Moodle 555)", "'../../x' is not a student id"),
    ]:
        assert (rows[student]["status"], rows[student]["score"]) == ("could not import", ""), rows[student]
        assert reason in rows[student]["reason"], rows[student]


def test_a_zip_bomb_is_refused_before_anything_is_written(hostile_class):
    _, steps, _ = hostile_class
    bomb = steps["import bomb"]
    assert bomb.returncode == 1, bomb
    assert (
        "could not import bomb/positions: 'positions.ipynb' could not be unpacked from the archive: 128.0 MiB, more than a submission may hold (32 MiB)"
        in bomb.stderr
    )


def test_identity_a_name_two_participants_share_is_refused_naming_both_and_nothing_is_overwritten(
    hostile_class,
):
    course, steps, _ = hostile_class
    err = steps["import moodle"].stderr
    assert ("could not import Jane Smith (Moodle 111): 'Jane Smith' (Moodle 111) and 'Jane Smith' (Moodle 222) "
            "both come to the student id 'alice'") in err  # fmt: skip
    assert (
        "could not import Jane Smith (Moodle 222): 'Jane Smith' (Moodle 222) and 'Jane Smith' (Moodle 111)"
        in err
    )
    assert (
        "could not import Li Wei (Moodle 333): 'Li Wei' (Moodle 333) fits more than one roster student (lw1, lw2)"
        in err
    )
    assert (
        "could not import Evil Path (Moodle 555): 'Evil Path' (Moodle 555): '../../x' is not a student id"
        in err
    )
    assert (
        "'Alice X' (Moodle 777) is on no roster row, and its name as id, 'alice_x', is another roster student's"
        in err
    )
    assert "imported: early" in steps["import moodle"].stdout
    # alice's own submission (the tar's) is the one graded: full marks, below


def test_the_hand_in_time_is_the_sites_never_an_uploaded_timestamp(hostile_class):
    course, steps, _ = hostile_class
    assert (
        "early/positions: its own timestamp.txt was left out (the course records the time: file times)"
        in (steps["import moodle"].stderr)
    )
    assert "early/positions: late by 106.0 h" in steps["import moodle"].stderr
    row = _rows(course)["early"]
    assert (row["status"], row["score"], row["late_penalty"], row["hours_late"]) == (
        "graded",
        "0",
        "6",
        "106.00",
    )
    canvas = steps["import canvas"]
    assert (
        canvas.returncode == 0 and "latecomer/positions: its own timestamp.txt was left out" in canvas.stderr
    )
    stamp = (course / "submitted" / "latecomer" / "positions" / "timestamp.txt").read_text()
    assert stamp.startswith(f"{DUE + timedelta(seconds=1):%Y-%m-%d %H:%M:%S}")  # Canvas's LATE flag


def test_autograde_grades_everyone_it_can_and_names_each_student_it_could_not(hostile_class):
    course, steps, _ = hostile_class
    step = steps["autograde"]
    assert step.returncode == 1, step.stderr[-3000:]
    for student, reason in [
        ("xbytes", "a file name that is not UTF-8"),
        ("xtime", "timestamp.txt cannot be read as a time"),
        ("xlink", "'positions.ipynb' is a link"),
        ("xfolder", "'positions.ipynb' is not a notebook file but a folder"),
        ("xbig", "more than 32 MiB"),
        ("nested", "no positions.ipynb in the submission"),
    ]:
        assert re.search(f"could not grade {student}: .*{re.escape(reason)}", step.stderr), (
            student,
            step.stderr,
        )
    assert "graded 6 student(s), could not grade 6" in step.stdout, step.stdout


def test_correct_classmates_keep_full_marks_in_the_csv_and_the_gradebook(hostile_class):
    course, steps, _ = hostile_class
    rows = _rows(course)
    for student in ("alice", "bob", "markers", "zoe"):
        assert (rows[student]["status"], rows[student]["score"], rows[student]["max_score"]) == (
            "graded",
            "6",
            "6",
        )
    with gradebook_at(course) as gb:
        for student in ("alice", "bob", "markers", "zoe"):
            assert gb.find_submission("positions", student).score == 6
    for student in ("xbytes", "xtime", "xlink", "xfolder", "xbig", "nested", "ghost"):
        assert rows[student]["status"] == "could not grade" and rows[student]["score"] == "", rows[student]
    assert steps["export"].returncode == 1 and "could not grade 7 student(s)" in steps["export"].stderr


def gradebook_at(course: Path):
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{course / 'gradebook.db'}")


def test_what_a_grading_process_reports_is_bounded_and_refused_for_cells_that_do_not_exist(hostile_class):
    course, _, _ = hostile_class
    record = course / "records" / "positions" / "markers.json"
    assert record.stat().st_size < 100_000
    (nb,) = json.loads(record.read_text())["notebooks"]
    assert nb["problems"] == [
        "the grading process reported errors for 30000 cell(s) it was never sent: not recorded"
    ]
    assert nb["score"] == 6  # what it earned: its functions are correct


def test_an_answer_too_deep_to_parse_costs_its_function_only_and_the_classmate_after_keeps_full_marks(
    hostile_class,
):
    """Issue 25.5 through the commands: deep's sinusoidal_pe cell holds a 100,000-term sum; it is graded (not "could
    not grade"), loses test_sinusoidal_pe's 2 points with the reason, keeps apply_rope's 4; zoe, graded after
    every other student, keeps 6."""
    course, _, _ = hostile_class
    rows = _rows(course)
    assert (rows["deep"]["status"], rows["deep"]["score"]) == ("graded", "4"), rows["deep"]
    (nb,) = json.loads((course / "records" / "positions" / "deep.json").read_text())["notebooks"]
    cells = {c["grade_id"]: c for c in nb["cells"]}
    assert cells["test_sinusoidal_pe"]["score"] == 0
    assert "cannot be read by the grader" in cells["test_sinusoidal_pe"]["message"]
    assert cells["test_apply_rope"]["score"] == 3 and cells["test_apply_rope_speed"]["score"] == 1
    graded = sorted(student for student, row in rows.items() if row["status"] != "could not import")
    assert graded[-1] == "zoe" and rows["zoe"]["score"] == "6"


def test_the_csv_opens_anywhere_and_no_cell_is_a_formula(hostile_class):
    course, _, _ = hostile_class
    assert_safe_csv(course / "positions-grades.csv")


def test_markers_in_a_students_text_change_nothing_in_grading_or_feedback(hostile_class):
    course, steps, _ = hostile_class
    step = steps["feedback"]
    assert step.returncode == 0, step.stderr[-3000:]
    page = (course / "feedback" / "markers" / "positions" / "positions.html").read_text()
    assert "my notes, which the feedback must keep" in page and "BEGIN HIDDEN TESTS" in page
    assert "hidden=True" not in page  # the instructor's hidden tests are still cleared
    for student in ("alice", "bob", "early"):
        assert (course / "feedback" / student / "positions" / "positions.html").is_file(), student


def test_feedback_goes_on_past_a_student_nbgrader_cannot_take_and_names_them(hostile_class):
    course, steps, _ = hostile_class
    step = steps["feedback again"]
    assert step.returncode == 1 and "no feedback for 1 student(s): broken" in step.stderr, step.stderr[-2000:]
    assert re.search(r"no feedback for broken: .*\S", step.stderr)
    for student in GRADED:
        assert (course / "feedback" / student / "positions" / "positions.html").is_file(), student


def test_feedback_says_which_pages_it_wrote(hostile_class):
    course, steps, _ = hostile_class
    for name in ("feedback", "feedback again"):
        out = steps[name].stdout
        listed = [Path(p) for p in re.findall(r"^  (.+\.html)$", out, flags=re.M)]
        header = f"feedback positions: {len(listed)} page(s) in {course / 'feedback'}/<student>/positions/:"
        assert out.startswith(header), out
        assert {p.parts[-3] for p in listed} == set(GRADED), (
            out
        )  # every graded student, "broken" not among them
        assert all(
            p.is_file() and p.parent == course / "feedback" / p.parts[-3] / "positions" for p in listed
        )


def test_hidden_tests_are_cleared_from_the_instructors_cells_only(hostile_class):
    """nbgrader's ClearHiddenTests cut everything after "BEGIN HIDDEN TESTS" out of a graded written answer (a
    markdown answer cell is a grade cell), and failed on one without an END. The course's step clears the cells
    whose source is the source notebook's locked cell of the same id; a student's cell claiming a test cell's id
    with text of its own is the student's text."""
    from autograder.course import config

    step = next(
        p
        for p in config().GenerateFeedback.preprocessors
        if getattr(p, "__name__", "") == "HiddenTestsOfTheSource"
    )
    course, _, _ = hostile_class
    source = nbformat.read(
        REPO / "autograder" / "demo" / "source" / "positions" / "positions.ipynb", as_version=4
    )
    instructor = next(c for c in source.cells if c.metadata.nbgrader.get("grade_id") == "test_apply_rope")
    essay = nbformat.v4.new_markdown_cell(MARKERS + "### END HIDDEN TESTS\nmy essay\n" + MARKERS + "the end")
    essay.metadata.nbgrader = {
        "grade": True,
        "solution": True,
        "grade_id": "essay",
        "points": 1,
        "locked": False,
    }
    forged = nbformat.v4.new_code_cell("# BEGIN HIDDEN TESTS\nmine = 1")
    forged.metadata.nbgrader = {
        "grade": True,
        "solution": False,
        "locked": True,
        "grade_id": "test_sinusoidal_pe",
    }
    nb = nbformat.v4.new_notebook(cells=[essay, forged, nbformat.from_dict(instructor)])
    resources = {"nbgrader": {"db_url": f"sqlite:///{course / 'gradebook.db'}", "notebook": "positions",
                              "assignment": "positions"}}  # fmt: skip
    out, _ = step().preprocess(nb, resources)
    assert out.cells[0].source == essay.source and out.cells[1].source == forged.source
    assert "check_apply_rope(apply_rope)" in out.cells[2].source and "hidden=True" not in out.cells[2].source
    assert "hidden=True" in instructor.source  # the source had it

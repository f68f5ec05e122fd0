"""The course's record of site users (autograder/intake/site_users.py) through `import`: one Canvas or Moodle
user is one student id across assignments and imports, and a conflict is refused with both sides named, never merged."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from autograder.intake import site_users
from autograder.intake.submissions import import_submissions

WHEN = (2026, 10, 5, 20, 0, 0)


def _download(tmp_path: Path, files: dict[str, str]) -> Path:
    """A course site's zip of these files (name -> the text inside, which tells whose work it is)."""
    path = tmp_path / f"download-{len(list(tmp_path.glob('download-*')))}.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=WHEN), json.dumps({"whose": text}))
    return path


def _whose(course: Path, student: str, assignment: str) -> str:
    return json.loads((course / "submitted" / student / assignment / f"{assignment}.ipynb").read_text())[
        "whose"
    ]


@pytest.fixture
def course(tmp_path, monkeypatch) -> Path:
    course = tmp_path / "course"
    monkeypatch.setenv("POSREF_COURSE_DIR", str(course))
    return course


def test_a_canvas_user_keeps_their_student_id_across_assignments_and_a_new_name(tmp_path, course, capsys):
    first = _download(tmp_path, {"smithjane_111_1_02_absolute.ipynb": "jane"})
    assert import_submissions(first).imported == ["smithjane"]
    # Jane changed her name on the site; a second import of the same assignment changes nothing in the record
    again = _download(tmp_path, {"doejane_111_2_03_relative.ipynb": "jane, again"})
    assert import_submissions(again).imported == ["smithjane"]
    assert _whose(course, "smithjane", "03_relative") == "jane, again"
    assert not (course / "submitted" / "doejane").exists()
    assert "'doejane' (Canvas 111) is 'smithjane', as the course's record of site users says" in (
        capsys.readouterr().err
    )
    assert import_submissions(first).imported == ["smithjane"]
    record = json.loads((course / site_users.FILE).read_text())
    assert record["users"] == {
        "Canvas 111": {
            "student": "smithjane",
            "name": "smithjane",
            "assignment": "02_absolute",
            "since": record["users"]["Canvas 111"]["since"],
        }
    }


def test_a_second_user_of_one_name_is_refused_never_merged_into_the_first(tmp_path, course, capsys):
    """Two Canvas users named Jane Smith in two assignments: without the record the second one's work went into
    the first one's folder (the name as id), as one student's."""
    import_submissions(_download(tmp_path, {"smithjane_111_1_02_absolute.ipynb": "jane 111"}))
    capsys.readouterr()
    other = _download(
        tmp_path, {"smithjane_222_3_03_relative.ipynb": "jane 222", "weili_333_4_03_relative.ipynb": "li"}
    )
    out = import_submissions(other)
    assert out.imported == ["weili"]
    (why,) = [w for label, w in out.refused.items() if "222" in label]
    assert why.startswith(
        "'smithjane' (Canvas 222) would be 'smithjane', which the course's record of site users ("
    ), why
    assert "gives to Canvas 111 ('smithjane', first imported with 02_absolute on 20" in why, why
    assert "could not import smithjane (Canvas 222)" in capsys.readouterr().err
    assert not (course / "submitted" / "smithjane" / "03_relative").exists()
    # the same refusal in the same download as the user the record holds: the one of the record goes in
    both = _download(tmp_path, {"smithjane_111_5_03_relative.ipynb": "jane 111",
                                "smithjane_222_6_03_relative.ipynb": "jane 222"})  # fmt: skip
    assert import_submissions(both).imported == ["smithjane"]
    assert _whose(course, "smithjane", "03_relative") == "jane 111"


@pytest.mark.parametrize(
    ("roster", "says"),
    [
        ("id,first_name,last_name,lms_id\ns001,Jane,Smith,111\n", "'s001'"),  # by the Canvas user id
        ("id,first_name,last_name\ns001,Jane,Smith\n", "'s001'"),  # by the name
        ("id,first_name,last_name\ns001,Jane,Smith\ns002,Jane,Smith\n", "'s001, s002'"),  # two of that name
    ],
)
def test_a_roster_that_gives_a_recorded_user_another_id_is_refused(tmp_path, course, roster, says):
    import_submissions(_download(tmp_path, {"smithjane_111_1_02_absolute.ipynb": "jane"}))
    path = tmp_path / "roster.csv"
    path.write_text(roster)
    out = import_submissions(_download(tmp_path, {"smithjane_111_2_03_relative.ipynb": "jane"}), roster=path)
    assert out.imported == []
    (why,) = out.refused.values()
    assert why.startswith("'smithjane' (Canvas 111) is 'smithjane' in the course's record of site users ("), (
        why
    )
    assert f"but the roster gives {says}: a student keeps one id" in why, why
    assert sorted(p.name for p in (course / "submitted").iterdir()) == ["smithjane"]


def test_a_roster_that_agrees_with_the_record_imports(tmp_path, course):
    path = tmp_path / "roster.csv"
    path.write_text("id,first_name,last_name,lms_id\ns001,Jane,Smith,111\n")
    assert import_submissions(
        _download(tmp_path, {"smithjane_111_1_02_absolute.ipynb": "a"}), roster=path
    ).imported == ["s001"]
    # the roster is gone (the gradebook has no names): the record still knows her
    assert import_submissions(_download(tmp_path, {"smithjane_111_2_03_relative.ipynb": "b"})).imported == [
        "s001"
    ]
    assert _whose(course, "s001", "03_relative") == "b"


def test_moodle_participants_are_users_of_one_assignment(tmp_path, course):
    """Moodle's participant id is drawn per assignment: a re-download keeps its ids, another participant of the same
    assignment cannot take an id the record gives, and in another assignment the name is all there is."""
    folder = "{}_{}_assignsubmission_file_/02_absolute.ipynb"
    assert import_submissions(_download(tmp_path, {folder.format("Jane Smith", 555): "555"})).imported == [
        "jane_smith"
    ]
    out = import_submissions(_download(tmp_path, {folder.format("Jane Smith", 556): "556"}))
    assert out.imported == [] and "gives to Moodle 02_absolute 555 ('Jane Smith'" in next(
        iter(out.refused.values())
    )
    assert _whose(course, "jane_smith", "02_absolute") == "555"
    renamed = _download(tmp_path, {folder.format("Jane Doe", 555): "555 again"})
    assert import_submissions(renamed).imported == ["jane_smith"]
    later = {"Jane Smith_777_assignsubmission_file_/03_relative.ipynb": "777"}
    assert import_submissions(_download(tmp_path, later)).imported == ["jane_smith"]
    assert sorted(json.loads((course / site_users.FILE).read_text())["users"]) == [
        "Moodle 02_absolute 555",
        "Moodle 03_relative 777",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[]",
        '{"version": 2, "users": {}}',
        '{"version": 1, "users": {"Canvas 1": {"student": 7}}}',
    ],
)
def test_a_record_that_cannot_be_read_stops_the_import_before_anything_is_imported(tmp_path, course, text):
    course.mkdir()
    (course / site_users.FILE).write_text(text)
    with pytest.raises(
        SystemExit, match="the course's record of site users, .* cannot be read .* nothing was imported"
    ):
        import_submissions(_download(tmp_path, {"smithjane_111_1_02_absolute.ipynb": "jane"}))
    assert not (course / "submitted").exists()
    assert (course / site_users.FILE).read_text() == text


def test_names_a_student_controls_are_kept_as_data(tmp_path, course, capsys):
    """A name on the site is whatever the student typed: it is stored as a JSON string and shown quoted."""
    name = "o'brien\u202e\"=1"
    folder = f"{name}_888_assignsubmission_file_/02_absolute.ipynb"
    out = import_submissions(_download(tmp_path, {folder: "x"}))
    record = json.loads((course / site_users.FILE).read_text())
    assert record["users"]["Moodle 02_absolute 888"]["name"] == name
    assert record["users"]["Moodle 02_absolute 888"]["student"] in out.imported


# ---------------------------------------------------------------- one student, one id (issue 37.8)
# A roster row that repeats another's site id (or student id) graded one student's notebook as another's; a name that
# squashes to a look-alike of a classmate's id made a second student whose rows read the same.


@pytest.mark.parametrize(
    ("rows", "repeated"),
    [
        (
            "s001,Jane,Smith,111\ns002,Li,Wei,111\n",
            "the course-site id '111'",
        ),  # a row copied, its lms_id kept
        ("s001,Jane,Smith,111\ns001,Li,Wei,222\n", "the student id 's001'"),  # its id kept
        (
            "smithjane,Jane,Smith,111\nsmithјane,Li,Wei,222\n",
            "looks like 'smithjane' on line 2",
        ),  # a look-alike
    ],
)
def test_a_roster_that_repeats_an_id_or_holds_look_alikes_stops_the_import(tmp_path, course, rows, repeated):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,first_name,last_name,lms_id\n" + rows)
    download = _download(
        tmp_path, {"smithjane_111_1_02_absolute.ipynb": "jane", "weili_222_2_02_absolute.ipynb": "li"}
    )
    with pytest.raises(
        SystemExit, match=f"^the roster {roster}: .*{repeated}.*nothing was imported$"
    ) as stop:
        import_submissions(download, roster=roster)
    assert "line" in str(stop.value) and "3" in str(stop.value)
    assert not (course / "submitted").exists()


LOOK_ALIKES = {
    "a Cyrillic ј": ("smithјane", "'ј' U+0458 CYRILLIC SMALL LETTER JE"),
    "a Cyrillic а": ("smithjаne", "'а' U+0430 CYRILLIC SMALL LETTER A"),
    "a Cyrillic ѕ": ("ѕmithjane", "'ѕ' U+0455 CYRILLIC SMALL LETTER DZE"),
    "a Greek ο": ("smithjaneο", None),  # not alike: one letter more
}


@pytest.mark.parametrize("where", ["the record", "the roster", "the same download"])
@pytest.mark.parametrize(("name", "letter"), LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_an_id_that_looks_like_a_classmates_is_refused_naming_the_letter(
    tmp_path, course, where, name, letter
):
    jane = {"smithjane_111_1_02_absolute.ipynb": "jane"}
    roster = None
    if where == "the record":
        import_submissions(_download(tmp_path, jane))
    elif where == "the roster":
        roster = tmp_path / "roster.csv"
        roster.write_text("id,first_name,last_name,lms_id\nsmithjane,Jane,Smith,111\n")
    files = {
        f"{name}_222_2_02_absolute.ipynb": "someone else",
        **(jane if where == "the same download" else {}),
    }
    out = import_submissions(_download(tmp_path, files), roster=roster)
    if letter is None:
        assert name in out.imported
        return
    assert name not in out.imported and not (course / "submitted" / name).exists()
    (why,) = [w for label, w in out.refused.items() if "222" in label]
    assert (
        f"would be {name!r}, which looks like the student id 'smithjane' but is another ({letter}" in why
    ), why


def test_an_id_that_looks_like_a_classmates_in_the_same_script_is_imported_and_pointed_out(
    tmp_path, course, capsys
):
    import_submissions(_download(tmp_path, {"smithjane_111_1_02_absolute.ipynb": "jane"}))
    out = import_submissions(_download(tmp_path, {"srnithjane_222_2_02_absolute.ipynb": "another jane"}))
    assert out.imported == ["srnithjane"]
    assert "is 'srnithjane', which looks like the student id 'smithjane': check they are two students" in (
        capsys.readouterr().err
    )

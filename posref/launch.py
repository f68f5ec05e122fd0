"""``posref lab``: open the course in JupyterLab on its start page (``make lab`` runs it).

A student's JupyterLab keeps nbgrader's Validate (with an ``nbgrader_config.py`` of its own) behind the course's own
button, whose dialog speaks the edition's language (``posref_jupyter.validate``), and hides the rest of nbgrader:
the instructor's tools (the formgrader, the create-assignment sidebar) and the exchange's Assignment List and Course
List, which only a JupyterHub course has something behind (its hub serves its own
JupyterLab; here they could only say "Error fetching courses!"); and its HTML export
of a notebook loads nothing from the internet (MathJax inside the page, ``posref_jupyter.offline_math``). The Jupyter config
folder ``posref/jupyter_config/student`` does it, put first on ``JUPYTER_CONFIG_PATH`` of this one server, with the
export's template in ``posref_jupyter/jupyter_data`` first on ``JUPYTER_PATH`` (nothing is written to the user's Jupyter
settings). ``--instructor-tools`` leaves out both folders. Every course server, the instructor's too, has
``posref/jupyter_config/course``: no JupyterLab news pop-up. Run as root
(containers, cloud notebooks), the server gets ``--allow-root``, without which JupyterLab refuses to start.
The instructor's JupyterLab, with the course's nbgrader configuration, is ``python -m autograder lab``.

In a checkout the student works in ``work/`` (git ignores it), never in the releases (``notebooks/``, which a
``git pull`` or ``python -m autograder release`` rewrites): each start first brings the releases into ``work/`` by
the rules of ``posref.workfolder`` (new notebooks added, the student's own never written over) and prints what
it did; ``posref update`` does only that.

The course has three editions (``EDITIONS``): English, Traditional Chinese (Taiwan) and Simplified Chinese.
``--lang zh-TW`` (``make lab EDITION=zh-TW``) opens another one: its releases (``editions/zh-TW/notebooks/``, made
from the English ones and the translation catalogs) brought into a work folder of its own (``work-zh-TW/``) and
opened on its start page; ``POSREF_LANG=zh-TW`` in the server's environment, which its kernels inherit, so that
posref's messages speak the edition's language (``posref.i18n``); and JupyterLab's own interface in that language,
from its language pack (``jupyterlab-language-pack-zh-tw``, which ``make lab EDITION=zh-TW`` installs), made the
server's default by the server extension ``posref_jupyter.lab_language`` (the config folder
``posref/jupyter_config/language``, with ``--instructor-tools`` too). Every edition sets it, English too: ``make lab``
shows JupyterLab in English whatever the operating system's language.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

import posref_jupyter
from posref import explore, workfolder
from posref.i18n import _, speaking

START_PAGE = "00_start.ipynb"
STUDENT_CONFIG = Path(__file__).resolve().parent / "jupyter_config" / "student"
# the server extension that makes JupyterLab's interface speak POSREF_LANG's language, for students and instructors
LANGUAGE_CONFIG = Path(__file__).resolve().parent / "jupyter_config" / "language"
# what every course server has, the instructor's too: no "Jupyter news?" pop-up (JupyterLab's announcements plugin
# off; its command-line news flag alone does not stop it)
COURSE_CONFIG = Path(__file__).resolve().parent / "jupyter_config" / "course"
# a student's server on the course's JupyterHub: the course's Assignment List on (posref_jupyter.assignment_list, on
# nbgrader's server extension), the exchange's course and folder, what Submit leaves out (put before STUDENT_CONFIG:
# hub_environment)
HUB_CONFIG = Path(__file__).resolve().parent / "jupyter_config" / "hub"
# the student's Jupyter data: the nbconvert template of an HTML export that loads nothing from elsewhere
STUDENT_DATA = Path(posref_jupyter.__file__).resolve().parent / "jupyter_data"
CHECKOUT = Path(__file__).resolve().parent.parent
LANGUAGE_PACKS = "jupyterlab.languagepack"  # the entry points by which JupyterLab finds its language packs


@dataclass(frozen=True)
class Edition:
    """One language edition of the course as a student opens it.

    ``tag`` is its BCP 47 tag (``zh-TW``): ``POSREF_LANG`` in the server's environment and the name of its folders;
    ``locale`` is JupyterLab's name for its interface language (``zh_TW``), and ``pack`` the pip package that
    brings that language to JupyterLab (None for English, JupyterLab's own)."""

    tag: str
    locale: str
    pack: str | None

    @property
    def releases(self) -> Path:
        """Its released notebooks in a checkout: ``notebooks/`` for English, ``editions/<tag>/notebooks/`` else."""
        return CHECKOUT / "notebooks" if self.pack is None else CHECKOUT / "editions" / self.tag / "notebooks"

    @property
    def solutions(self) -> Path:
        """The sources of its releases in a checkout: ``solutions/``, ``editions/<tag>/solutions/``."""
        return CHECKOUT / "solutions" if self.pack is None else CHECKOUT / "editions" / self.tag / "solutions"

    @property
    def work(self) -> Path:
        """The student's copy of it in a checkout, which git ignores: ``work/``, ``work-<tag>/``."""
        return CHECKOUT / self._own("work")

    @property
    def explore(self) -> Path:
        """A self-learner's copy of its explore edition in a checkout, which git ignores: ``explore/``,
        ``explore-<tag>/`` (``posref.explore``)."""
        return CHECKOUT / self._own("explore")

    def _own(self, folder: str) -> str:
        return folder if self.pack is None else f"{folder}-{self.tag}"

    def pack_installed(self) -> bool:
        """Whether JupyterLab can show its interface in this language (English always can)."""
        return self.pack is None or any(e.name == self.locale for e in entry_points(group=LANGUAGE_PACKS))


EDITIONS = {
    e.tag: e
    for e in (
        Edition("en", "en", None),
        Edition("zh-TW", "zh_TW", "jupyterlab-language-pack-zh-tw"),
        Edition("zh-CN", "zh_CN", "jupyterlab-language-pack-zh-cn"),
    )
}
ENGLISH = EDITIONS["en"]


def edition(name: str) -> Edition:
    """The edition ``name`` names: a tag as ``EDITIONS`` writes it, in any case, with ``-`` or ``_``."""
    wanted = name.strip().replace("_", "-").lower()
    for tag, found in EDITIONS.items():
        if tag.lower() == wanted:
            return found
    raise ValueError(
        _("no edition {name!r}: the course's editions are {editions}").format(
            name=name, editions=", ".join(EDITIONS)
        )
    )


def in_checkout() -> bool:
    """Whether posref runs from a checkout of the course (an editable install), with its releases."""
    return (ENGLISH.releases / START_PAGE).is_file()


def course_folders(
    folder: str | Path | None = None, releases: str | Path | None = None, lang: Edition = ENGLISH
) -> tuple[Path, Path | None]:
    """``(the folder JupyterLab serves, the releases to bring into it first, or None)``.

    Without ``folder``: in a checkout, the work folder of the edition ``lang`` (``work/`` for English), updated
    from ``releases`` (default: that edition's releases in the checkout); elsewhere (notebooks copied out of a
    checkout, or fetched from a hub) the current folder, updated only from ``releases`` when given. ``folder`` is
    served as it is unless ``releases`` is given too.
    """
    if releases is not None:
        releases = Path(releases).expanduser().resolve()
        if not releases.is_dir():
            raise FileNotFoundError(
                _("no folder {releases} of released notebooks to copy from").format(releases=releases)
            )
    if folder is None:
        if not in_checkout():
            return Path.cwd(), releases
        if releases is None and not (lang.releases / START_PAGE).is_file():
            raise FileNotFoundError(
                _(
                    "this checkout has no {tag} edition ({releases} holds no {start_page}): `git pull` brings the course's editions; an instructor makes them (autograder/README.md)"
                ).format(tag=lang.tag, releases=lang.releases, start_page=START_PAGE)
            )
        return lang.work, releases or lang.releases
    path = Path(folder).expanduser().resolve()
    if releases is None and not path.is_dir():
        raise FileNotFoundError(_("no folder {path} to open in JupyterLab").format(path=path))
    return path, releases


def update_folder(folder: Path, releases: Path | None, command: str) -> list[workfolder.Change]:
    """Bring ``releases`` into ``folder`` (``posref.workfolder.update``), saying what was done on stderr; what
    was done."""
    if releases is None:
        return []
    changes = workfolder.update(releases, folder)
    print(f"posref {command}: {workfolder.summary(changes, releases, folder)}", file=sys.stderr)
    return changes


def first_page(folder: Path, changes: Sequence[workfolder.Change]) -> str:
    """The page JupyterLab opens on: the list of new versions waiting when this start put one beside a
    notebook of the student's, else the start page."""
    if any(c.action == "beside" for c in changes) and (folder / workfolder.NEW_VERSIONS).is_file():
        return workfolder.NEW_VERSIONS
    return START_PAGE


def lab_command(
    folder: Path, extra: Sequence[str] = (), *, python: str = sys.executable, first: str = START_PAGE
) -> list[str]:
    """The JupyterLab command line serving ``folder``, opened on ``first`` (a path in it) when it is there."""
    command = [python, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}"]
    if (folder / first).is_file():
        command.append(f"--LabApp.default_url=/lab/tree/{first}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    return command + list(extra)


def lab_env(
    *, instructor_tools: bool = False, lang: Edition | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """``env`` (default: this process's) for the server: the student config first on ``JUPYTER_CONFIG_PATH``
    and the student's Jupyter data first on ``JUPYTER_PATH`` unless ``instructor_tools``; when the edition ``lang``
    is given, ``POSREF_LANG`` set to its tag (the server's kernels inherit it) and ``LANGUAGE_CONFIG`` on
    ``JUPYTER_CONFIG_PATH``, whose server extension ``posref_jupyter.lab_language`` reads it, with the instructor's
    tools too; ``COURSE_CONFIG`` after them, for every server; this Python's scripts first on ``PATH`` (nbgrader
    runs ``alembic`` from it)."""
    out = dict(os.environ if env is None else env)
    out["PATH"] = os.pathsep.join(filter(None, (str(Path(sys.executable).parent), out.get("PATH"))))
    first = {"JUPYTER_CONFIG_PATH": [], "JUPYTER_PATH": []}
    if not instructor_tools:
        first["JUPYTER_CONFIG_PATH"].append(STUDENT_CONFIG)
        first["JUPYTER_PATH"].append(STUDENT_DATA)
    if lang is not None:
        out["POSREF_LANG"] = lang.tag
        first["JUPYTER_CONFIG_PATH"].append(LANGUAGE_CONFIG)
    first["JUPYTER_CONFIG_PATH"].append(COURSE_CONFIG)
    for variable, folders in first.items():
        if folders:
            out[variable] = os.pathsep.join(filter(None, (*map(str, folders), out.get(variable))))
    return out


def hub_environment(lang: Edition = ENGLISH, exchange: str | None = None) -> dict[str, str]:
    """What a JupyterHub's spawner sets in a student's server (``c.Spawner.environment``; autograder/README.md, "On a
    JupyterHub"): the student's configuration, with the hub's first (the course's Assignment List on in place of
    nbgrader's, the instructor's formgrader, course list and create-assignment off), the edition ``lang`` (posref's messages and JupyterLab's
    menus), the offline HTML export, and the exchange folder when it is not nbgrader's default."""
    out = {
        "JUPYTER_CONFIG_PATH": os.pathsep.join(
            map(str, (HUB_CONFIG, STUDENT_CONFIG, LANGUAGE_CONFIG, COURSE_CONFIG))
        ),
        "JUPYTER_PATH": str(STUDENT_DATA),
        "POSREF_LANG": lang.tag,
    }
    if exchange is not None:
        out["POSREF_EXCHANGE_DIR"] = exchange
    return out


def missing_pack_note(lang: Edition) -> str | None:
    """What to do when JupyterLab lacks the edition's interface language; None when it has it."""
    if lang.pack_installed():
        return None
    return _(
        "posref lab: JupyterLab's menus stay in English: the {tag} language pack is not installed "
        "(`make lab EDITION={tag}` installs it; without make: python -m pip install -c constraints.txt "
        "-e '.[{extra}]', or python -m pip install {pack})"
    ).format(tag=lang.tag, extra=lang.tag.lower(), pack=lang.pack)


def passed_on(remainder: Sequence[str]) -> list[str]:
    """The JupyterLab options of an ``argparse.REMAINDER`` argument, without the ``--`` that may lead them."""
    return list(remainder[1:] if remainder[:1] == ["--"] else remainder)


def run_lab(args: argparse.Namespace) -> int:
    """``posref lab``: what it says on the terminal, and its errors, in the language of the edition it opens."""
    with speaking(args.lang.tag):
        folder, releases = course_folders(args.folder, args.releases, args.lang)
        changes = update_folder(folder, releases, "lab")
        command = _serve(folder, changes, args)
        print(
            _("posref lab: serving {folder} ({tag} edition)").format(folder=folder, tag=args.lang.tag),
            file=sys.stderr,
        )
    return subprocess.call(command, env=lab_env(instructor_tools=args.instructor_tools, lang=args.lang))


def run_explore(args: argparse.Namespace) -> int:
    """``posref explore``: the explore edition (``posref.explore``) of the edition ``--lang`` brought into the
    self-learner's folder by the rules of ``posref.workfolder``, then JupyterLab on it, as ``posref lab``."""
    with speaking(args.lang.tag):
        releases, solutions = args.lang.releases, args.lang.solutions
        if not (releases / START_PAGE).is_file() or not solutions.is_dir():
            raise FileNotFoundError(
                _(
                    "posref explore makes its notebooks from a checkout of the course, with its {solutions}: run it in one (git clone, then make explore)"
                ).format(solutions=solutions)
            )
        folder = Path(args.folder).expanduser().resolve() if args.folder else args.lang.explore
        files, committed = explore.explore_files(releases, solutions)
        changes = workfolder.deliver(files, committed, folder)
        print(f"posref explore: {workfolder.summary(changes, solutions, folder)}", file=sys.stderr)
        command = _serve(folder, changes, args)
        print(
            _("posref explore: serving {folder} ({tag} edition, every exercise solved)").format(
                folder=folder, tag=args.lang.tag
            ),
            file=sys.stderr,
        )
    return subprocess.call(command, env=lab_env(lang=args.lang))


def _serve(folder: Path, changes: Sequence[workfolder.Change], args: argparse.Namespace) -> list[str]:
    """The JupyterLab command of ``posref lab`` or ``posref explore`` on ``folder``, after saying on stderr
    what JupyterLab lacks for the edition."""
    note = missing_pack_note(args.lang)
    if note:
        print(note, file=sys.stderr)
    return lab_command(folder, passed_on(args.jupyter_args), first=first_page(folder, changes))


def run_update(args: argparse.Namespace) -> int:
    """``posref update``, speaking the language of the edition it updates."""
    with speaking(args.lang.tag):
        return _update(args)


def _update(args: argparse.Namespace) -> int:
    folder, releases = course_folders(args.folder, args.releases, args.lang)
    if releases is None:
        raise FileNotFoundError(
            _(
                "posref runs outside a checkout of the course: say where the released notebooks are (--releases DIR)"
            )
        )
    update_folder(folder, releases, "update")
    return 0


def _edition_argument(name: str) -> Edition:
    try:
        return edition(name)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _add_folders(parser: argparse.ArgumentParser, folder_help: str) -> None:
    parser.add_argument("--folder", help=folder_help)
    parser.add_argument(
        "--releases",
        help="the released notebooks to bring into the folder first (default in a checkout: its notebooks/, "
        "or editions/<lang>/notebooks/ with --lang)",
    )
    _add_lang(parser, "in a checkout its work folder is work-<lang>/, filled from editions/<lang>/notebooks/")


def _add_lang(parser: argparse.ArgumentParser, folder_help: str) -> None:
    parser.add_argument(
        "--lang",
        type=_edition_argument,
        default=ENGLISH,
        metavar="{" + ",".join(EDITIONS) + "}",
        help="the course's edition: en (default), zh-TW (Traditional Chinese, Taiwan) or zh-CN (Simplified "
        f"Chinese); {folder_help}",
    )


def add_lab(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="open the course in JupyterLab on its start page",
        description="Start JupyterLab on the course's notebooks, opened on 00_start.ipynb, with a Validate "
        "button (nbgrader's validation, in your edition's language) and without nbgrader's instructor tools or "
        "its exchange (Assignment List). In a checkout, "
        "your copy of the course is work/ (git ignores it), filled and updated from notebooks/ first: new "
        "notebooks are added, a notebook you changed is never written over (a new version lands beside it "
        "as NAME.new.ipynb). Works as root too. --lang zh-TW (or zh-CN) opens that edition instead: its own "
        "folder work-zh-TW/, its start page, posref's messages and JupyterLab's menus in its language.",
    )
    _add_folders(
        parser,
        "the folder to serve as it is (default: the checkout's work/, updated from notebooks/; outside a "
        "checkout, the current folder)",
    )
    parser.add_argument(
        "--instructor-tools",
        action="store_true",
        help="also show nbgrader's formgrader and create-assignment sidebar (for grading, use "
        "`python -m autograder lab` from the checkout: it adds the course's nbgrader configuration)",
    )
    parser.add_argument(
        "jupyter_args", nargs=argparse.REMAINDER, help="options passed on to JupyterLab as they are"
    )
    parser.set_defaults(handler=run_lab)


def add_update(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "update",
        help="bring the course's notebooks into your work/ folder without touching your answers",
        description="What `posref lab` does before it starts: copy into your folder (default: the checkout's "
        "work/) the released notebooks it lacks; a notebook you have not changed is replaced by a new version, "
        "one you changed stays as it is and the new version is written beside it as NAME.new.ipynb. Prints "
        "what it did.",
    )
    _add_folders(parser, "your folder (default: the checkout's work/)")
    parser.set_defaults(handler=run_update)


def add_explore(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "explore",
        help="open the course with every exercise solved, to read it and move its explorers",
        description="For a self-learner: the course's notebooks with every exercise already solved (the course's "
        "own solutions), so that Run All runs each to its end and every explorer of 02-08 works. In a checkout, "
        "your copy is explore/ (git ignores it; explore-zh-TW/ with --lang zh-TW), made from notebooks/ and "
        "solutions/ and kept up to date by the rules of work/: a notebook you changed is never written over. "
        "To do the exercises yourself, use `posref lab` (your work in work/).",
    )
    parser.add_argument("--folder", help="your folder (default: the checkout's explore/, explore-<lang>/)")
    _add_lang(parser, "in a checkout its folder is explore-<lang>/")
    parser.add_argument(
        "jupyter_args", nargs=argparse.REMAINDER, help="options passed on to JupyterLab as they are"
    )
    parser.set_defaults(handler=run_explore)

"""The ``posref`` command line: ``posref <command> ...``, one argparse subcommand per tool.

To add a command, write ``add_<command>(subparsers)`` that registers its parser and sets ``handler`` (a
function of the parsed arguments returning the exit status), and call it in ``build_parser``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from posref import i18n
from posref.lab.checkpoints import add_train_checkpoints
from posref.lab.seeds import add_seed_records
from posref.lab.tasks import DATA_DIR
from posref.launch import add_explore, add_lab, add_update

MODEL_CONFIGS = DATA_DIR / "model_configs.json"  # RoPE settings of real models, shipped with posref


def _run_inspect(args: argparse.Namespace) -> int:
    from posref.inspector import (
        default_plot_path,
        format_inspection,
        inspect_rope,
        load_config,
        plot_wavelengths,
    )

    with i18n.speaking(args.lang or i18n.get_language()):
        name, config = load_config(args.config, args.model)
        inspection = inspect_rope(config, seq_len=args.seq_len, name=name)
        plot = None
        if not args.no_plot:
            from posref.explorers.fonts import use_language_font

            use_language_font()  # a font that draws the report's language in the plot
            plot = plot_wavelengths(inspection, args.plot or default_plot_path(name))
        print(format_inspection(inspection, plot=plot))
    return 0


def add_inspect(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="what a model's RoPE scaling does to each frequency pair",
        description="Read a config.json (or one model of posref's model_configs.json) and report its RoPE "
        "method, base, factor, original vs claimed context and which frequency pairs are kept, blended or "
        "interpolated; save a plot of wavelength per pair before and after scaling.",
    )
    parser.add_argument(
        "config",
        nargs="?",
        default=str(MODEL_CONFIGS),
        help="a config.json, or a collection of them (default: posref's model_configs.json of real models)",
    )
    parser.add_argument("--model", help="with a collection: the model's name (or a unique part of it)")
    parser.add_argument(
        "--seq-len", type=int, help="length for length-dependent methods (default: the claimed context)"
    )
    parser.add_argument("--plot", help="where to save the PNG (default: <model>-wavelengths.png here)")
    parser.add_argument("--no-plot", action="store_true", help="print the report only")
    parser.add_argument(
        "--lang",
        choices=i18n.LANGUAGES,
        help="the language of the report and the plot (default: POSREF_LANG, else English)",
    )
    parser.set_defaults(handler=_run_inspect)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="posref", description="Tools of the posref course package.")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_inspect(subparsers)
    add_train_checkpoints(subparsers)
    add_seed_records(subparsers)
    add_lab(subparsers)
    add_update(subparsers)
    add_explore(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (ValueError, TypeError, FileNotFoundError) as e:
        print(f"posref {args.command}: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

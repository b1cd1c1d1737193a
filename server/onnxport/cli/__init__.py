"""`onnxport`: thin command line over build, import and the repository.

parser.py declares the commands and their options; each command's handler lives with its family:
build_commands.py (build, import), decoder_commands.py (decoder), repository_commands.py (remove, list, info),
check_commands.py (check, bench) and serve_commands.py (serve, export, deploy, init). option_checks.py holds the
checks of what a command line names (files, folders, models) that several commands share.
"""

from __future__ import annotations

import sys

from onnxport.cli.parser import build_parser
from onnxport.errors import OnnxportError, UsageError


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command != "serve" and args.repository is None:
            from onnxport.serving import config

            args.repository = config.load()["repository"]
        return args.handler(args)
    except UsageError as exc:
        # What the user gave does not fit (argparse's own usage errors exit 2 too).
        print(f"onnxport: error: {exc}", file=sys.stderr)
        return 2
    except (OnnxportError, ModuleNotFoundError) as exc:
        # A module of an extra that is not installed (PyTorch for a PyTorch recipe, Playwright for check...): the
        # one line says which extra to install.
        from onnxport.extras import missing_extra

        hint = missing_extra(exc, args.command)
        if hint is None and not isinstance(exc, OnnxportError):
            raise
        print(f"onnxport: error: {hint or exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("onnxport: interrupted; the repository is unchanged", file=sys.stderr)
        return 130

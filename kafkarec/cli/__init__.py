"""The ``kafkarec`` command line: one module per command (dump, verify, stats)
and the argument parser in :mod:`kafkarec.cli.main`."""
from kafkarec.cli.main import build_parser, main

__all__ = ["build_parser", "main"]

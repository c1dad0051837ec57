"""The parser every stoker command line goes through: argparse, saying a bad option in one line
with exit 2 (docs/contract.md), where argparse prints its usage too."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse prints usage plus an error; the contract wants one line and exit 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(2)

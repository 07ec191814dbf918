"""Moved to ``patchwork play`` (``patchwork_env.cli.play``); this shell stays for one release."""

import sys

from patchwork_env.cli import main

if __name__ == "__main__":
    print("note: 'python -m train.play' moved to 'patchwork play'", file=sys.stderr)
    sys.exit(main(["play", *sys.argv[1:]]))

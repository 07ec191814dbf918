"""Moved to ``patchwork replay`` (``patchwork_env.cli.replay``); this shell stays for one release."""

import sys

from patchwork_env.cli import main

if __name__ == "__main__":
    print("note: 'python -m train.replay' moved to 'patchwork replay'", file=sys.stderr)
    sys.exit(main(["replay", *sys.argv[1:]]))

"""Moved to ``patchwork evaluate`` (``patchwork_env.cli.evaluate``); this shell stays for one release."""

import sys

from patchwork_env.cli import main

if __name__ == "__main__":
    print("note: 'python -m train.evaluate' moved to 'patchwork evaluate'", file=sys.stderr)
    sys.exit(main(["evaluate", *sys.argv[1:]]))

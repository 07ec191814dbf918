"""``python -m patchwork_env.cli`` is the ``patchwork`` command."""

import sys

from patchwork_env.cli import main

sys.exit(main())

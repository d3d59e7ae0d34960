"""``python -m kafkarec``: the kafkarec command line (see kafkarec.cli)."""
import sys

from kafkarec.cli import main

sys.exit(main())

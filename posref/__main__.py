"""``python -m posref ...`` runs the command line (``posref.cli``)."""

import sys

from posref.cli import main

sys.exit(main())

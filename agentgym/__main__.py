"""``python -m agentgym`` runs the command line."""

import sys

from agentgym.cli import main

sys.exit(main())

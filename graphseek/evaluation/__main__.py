"""`python -m graphseek.evaluation ...`: the `graphseek eval` command without the main CLI."""

import sys

from graphseek.evaluation.cli import eval_main

sys.exit(eval_main())

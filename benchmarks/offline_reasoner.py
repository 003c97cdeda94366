"""Offline reasoner accuracy (EM/F1) and seconds per question: naive and dual_agent on the first
50 questions of the 2Wiki dev slice, no generative model.

    .venv/bin/python benchmarks/offline_reasoner.py [--questions 0:50] [--llm offline]

Same measurement as `benchmarks/qa_topologies.py` with these defaults.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from qa_topologies import main  # noqa: E402

if __name__ == "__main__":
    main(defaults={"questions": "0:50", "skip_demo": True, "topologies": ["naive", "dual_agent"]})

"""Context-aware entity recognition prompt (HiGraAgent §4.2): pick the seed entities of a query
among the graph's most similar entities. The HiGraRetriever (a tool) sends it, so it lives in
`graphseek.tools.prompts` (placeholders documented there); re-exported here beside the role prompts.
"""

from graphseek.tools.prompts import ENTITY_RECOGNITION_SYSTEM, ENTITY_RECOGNITION_USER

__all__ = ["ENTITY_RECOGNITION_SYSTEM", "ENTITY_RECOGNITION_USER"]

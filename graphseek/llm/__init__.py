"""graphseek.llm."""

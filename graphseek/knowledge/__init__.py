"""graphseek.knowledge."""

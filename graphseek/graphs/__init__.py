"""graphseek.graphs."""

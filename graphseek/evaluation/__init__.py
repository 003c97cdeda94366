"""graphseek.evaluation."""

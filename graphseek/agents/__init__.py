"""graphseek.agents."""

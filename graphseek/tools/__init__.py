"""graphseek.tools."""

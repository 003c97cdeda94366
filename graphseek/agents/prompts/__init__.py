"""Prompts, one module per role."""

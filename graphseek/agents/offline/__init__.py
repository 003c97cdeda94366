"""The offline reasoner: deterministic role policies that need no generative model."""

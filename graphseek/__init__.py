"""graphseek: multi-hop question answering over your own documents."""

__version__ = "0.1.0"

"""gpudoc: a doctor for PyTorch on GPUs.

Importing this package imports nothing heavy: the lint path (a pre-commit hook) must start fast.
"""

__version__ = "0.1.0"

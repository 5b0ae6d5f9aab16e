"""gpudoc lint: static analysis of PyTorch device placement. Imports libcst and the stdlib only."""

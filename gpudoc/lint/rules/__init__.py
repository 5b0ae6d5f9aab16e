"""gpudoc lint rules: one rule per module, discovered automatically."""

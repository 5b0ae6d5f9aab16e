"""gpudoc info: inventory of the machine and a doctor that explains why a GPU is not usable."""

"""gpudoc run --emulate-cuda: run a script on the CPU while PyTorch believes CUDA devices exist."""

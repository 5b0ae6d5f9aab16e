"""gpudoc smoke: train the CIFAR-10 tutorial network on every device and check its training."""

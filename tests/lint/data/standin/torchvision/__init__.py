"""A stand-in for the two pieces of torchvision the CIFAR-10 tutorial uses, for tests only.

The real torchvision cannot be imported on the test machines (a CUDA build beside a CPU torch:
``operator torchvision::nms does not exist``) and CIFAR-10 cannot be downloaded there. This
package serves CIFAR-shaped synthetic data through the same API, so the tutorial script itself
runs unchanged.
"""

from torchvision import datasets, transforms

__all__ = ["datasets", "transforms"]

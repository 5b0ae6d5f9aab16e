"""CIFAR10 with torchvision's constructor and item shape, on seeded synthetic images."""

import torch


class CIFAR10(torch.utils.data.Dataset):
    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        generator = torch.Generator().manual_seed(0 if train else 1)
        count = 64 if train else 32
        self.data = torch.rand(count, 3, 32, 32, generator=generator)
        # every class within the first 12 test images: the tutorial divides by per-class counts
        labels = (
            torch.randint(0, 10, (count,), generator=generator) if train else torch.arange(count)
        )
        self.targets = (labels % 10).tolist()
        self.transform = transform

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, index):
        image = self.data[index]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.targets[index]

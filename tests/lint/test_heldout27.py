"""Wrong findings of the twenty-seventh held-out set (public repositories), reduced and rewritten
here: correct code each rule must leave alone, next to the bug it must still report."""

from __future__ import annotations

from lint_lines import lines

# dataflowr's spectral GNN notebook: the data set cell saves tensors made on the host and the
# next cell loads them; the file holds CPU storages whatever host loads it
SAVED = """\
import os
import torch
import torch.nn as nn
def check_dataset_exists(path_data="./"):
    if not os.path.isfile(path_data + "mnist/train_data.pt"):
        train_data = {made}
        torch.save(train_data, path_data + "mnist/train_data.pt")
    return path_data
_ = check_dataset_exists()
train_data = torch.load("mnist/train_data.pt").reshape(100, 784).numpy()
net = nn.Linear(784, 10)
if torch.cuda.is_available():
    net.cuda()
"""


def test_a_load_of_what_the_file_saved_from_host_tensors_is_clean() -> None:
    assert lines(SAVED.format(made="torch.Tensor(100, 28, 28)"), "GPD201") == []
    assert lines(SAVED.format(made="torch.zeros(100, 28, 28)"), "GPD201") == []


def test_a_load_of_what_the_file_saved_from_the_device_is_reported() -> None:
    made = 'torch.zeros(100, 28, 28, device="cuda" if torch.cuda.is_available() else "cpu")'
    assert lines(SAVED.format(made=made), "GPD201") == [10]

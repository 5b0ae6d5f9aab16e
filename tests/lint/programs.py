"""Hypothesis strategies: small PyTorch-flavoured programs that parse, for property tests."""

from __future__ import annotations

from hypothesis import strategies as st

NAMES = st.sampled_from(["x", "net", "model", "images", "labels", "batch", "t", "out", "device"])
EXPRESSIONS = st.one_of(
    st.sampled_from(
        [
            "torch.ones(3)",
            "torch.zeros(2, 2, device=device)",
            "Net()",
            "nn.Linear(2, 2)",
            'torch.device("cuda:0" if torch.cuda.is_available() else "cpu")',
            'torch.load("ckpt.pt")',
            "data[0].to(device)",
            "x.cpu().numpy()",
            "model(images)",
            "net(images)",
            "Net().to(device)",
            "data",
            "'é'",
            "(1,\n     2)",
        ]
    ),
    NAMES.map(lambda name: f"{name}.numpy()"),
    NAMES.map(lambda name: f"{name}.to(device)"),
)


def _simple(name: str, value: str, kind: int, comment: bool) -> str:
    statement = [
        f"{name} = {value}",
        f"{name}.to(device)",
        f"{name}.cuda()",
        f"print({value})",
        f"{name}, other = {value}, {name}",
    ][kind]
    return statement + ("  # a comment" if comment else "")


SIMPLE = st.builds(_simple, NAMES, EXPRESSIONS, st.integers(0, 4), st.booleans())


EVAL_STEPS = [
    ["outputs = net(images)"],
    ["outputs = net(images.to(device))"],
    ["images = images.to(device)", "outputs = net(images)"],
]


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


@st.composite
def blocks(draw: st.DrawFn, depth: int = 0) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.integers(0, 6 if depth < 2 else 0))
        if choice <= 2:
            lines.append(draw(SIMPLE))
            continue
        body = draw(blocks(depth + 1))
        header = [
            f"for {draw(NAMES)} in loader:",
            "with torch.no_grad():",
            "def step(batch):",
            "for images, labels in loader:",
        ][choice - 3]
        if choice == 6:  # the evaluation loop of the tutorial, moved or not
            body = [*draw(st.sampled_from(EVAL_STEPS)), *body]
        lines += [header, *_indent(body)]
    return lines


PRELUDES = st.sampled_from(
    [
        "import torch\nimport torch.nn as nn\n",
        "import torch\nimport torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n\n\n"
        'device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")\n'
        "net = Net().to(device)\nloader = torch.utils.data.DataLoader(dataset)\n",
        "import torch\nfrom torch import nn\nnet = nn.Linear(2, 2).cuda()\nmodel = Net()\n",
    ]
)
PROGRAMS = st.builds(lambda prelude, lines: prelude + "\n".join(lines) + "\n", PRELUDES, blocks())

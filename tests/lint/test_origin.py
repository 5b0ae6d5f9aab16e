"""origin.py: offsets of a text edited in rounds, mapped back to the original source."""

from __future__ import annotations

from gpudoc.lint.origin import Origin


def test_offsets_map_back_through_rounds_of_edits() -> None:
    source = "model = Net()\nout = model(x)\n"
    origin = Origin()
    move = "\nmodel.to(device)"
    origin.applied([(13, 13, move), (20, 25, "model.float()")])  # insert; replace "model"
    once = "model = Net()" + move + "\nout = model.float()(x)\n"
    assert origin.source_offset(once.index("out")) == source.index("out")
    assert origin.source_offset(once.index("model.to")) == 13  # written text: where it was put
    assert origin.source_offset(once.index("float")) == 20
    assert origin.source_offset(once.index("(x)")) == source.index("(x)")
    origin.applied([(0, 0, "# fixed\n")])
    twice = "# fixed\n" + once
    assert origin.source_offset(twice.index("out")) == source.index("out")
    assert origin.source_offset(twice.index("model = ")) == 0
    assert origin.source_offset(len(twice)) == len(source)

"""The frame's model imports no frame part and no reader, so no import cycle runs through it
(imports inside functions and under TYPE_CHECKING count)."""

from __future__ import annotations

import grimp

from iotop_plus.sampling.frame import registry

FRAME = "iotop_plus.sampling.frame.model"


def test_the_frame_model_imports_no_part_and_nothing_imports_it_back() -> None:
    graph = grimp.build_graph("iotop_plus", cache_dir=None)
    imported = graph.find_modules_directly_imported_by(FRAME)
    part_modules = {type(p).__module__ for p in registry.parts()}
    assert part_modules and not imported & part_modules
    back = sorted(m for m in imported if graph.chain_exists(importer=m, imported=FRAME))
    assert back == [], f"{FRAME} is in an import cycle through {back}"

"""An event's payload is encoded with the fields added to its schema later left out while they
are unset, so a new event without them is byte for byte what the older code wrote."""

from __future__ import annotations

from ledger.log import record
from ledger.schema.events import AttemptMeasured, PointOpened
from ledger.schema.values import Binding, Origin, OutputCheck


def test_fields_added_later_are_left_out_at_their_default() -> None:
    """AttemptMeasured's binding and accuracy origin, PointOpened's knobs: omitted unset."""
    origin = Origin(level="measured")
    measured = AttemptMeasured(
        attempt="a",
        outputs=(OutputCheck(name="y", all_close=True),),
        layout_exit=0,
        times_us=(1.0,),
        origin=origin,
    )
    assert "binding" not in record.unstructure_payload(measured)
    assert "accuracy_origin" not in record.unstructure_payload(measured)
    bound = AttemptMeasured(
        attempt="a",
        outputs=(OutputCheck(name="y", all_close=True),),
        layout_exit=0,
        times_us=(1.0,),
        origin=origin,
        binding=Binding(config={"a": (1, 2)}),
        accuracy_origin=origin,
    )
    assert record.unstructure_payload(bound)["binding"] == {
        "config": {"a": [1, 2]},
        "impl_digest": None,
    }
    assert "knobs" not in record.unstructure_payload(PointOpened(stage="frontend", name="p"))
    knobs = PointOpened(stage="frontend", name="p", knobs=("a",))
    assert record.unstructure_payload(knobs)["knobs"] == ["a"]

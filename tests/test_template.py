"""template.yaml and the code agree: the handler it names exists, and its table is the one the store creates."""

from __future__ import annotations

import re
from pathlib import Path

from core.stores.dynamodb import table_definition

TEMPLATE = (Path(__file__).parent.parent / "template.yaml").read_text(encoding="utf-8")


def test_the_handler_named_in_the_template_is_the_buffered_handler() -> None:
    assert re.findall(r"Handler: (\S+)", TEMPLATE) == ["handlers.buffered.handler"]


def test_the_template_table_has_the_store_key_schema_and_ttl() -> None:
    definition = table_definition("t")
    for attribute in definition["AttributeDefinitions"]:
        assert (
            f"AttributeName: {attribute['AttributeName']}\n          AttributeType: {attribute['AttributeType']}"
            in TEMPLATE
        )
    for key in definition["KeySchema"]:
        assert f"AttributeName: {key['AttributeName']}\n          KeyType: {key['KeyType']}" in TEMPLATE
    assert f"BillingMode: {definition['BillingMode']}" in TEMPLATE
    assert "TimeToLiveSpecification:\n        AttributeName: expires\n        Enabled: true" in TEMPLATE

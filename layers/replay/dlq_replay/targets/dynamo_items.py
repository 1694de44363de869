"""DynamoDB items to and from plain values by boto3's serializers (loaded when first used)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def to_item(values: Mapping[str, Any]) -> dict[str, Any]:
    """Plain values (str, int, Decimal) as DynamoDB types them ("N" as str() writes it)."""
    from boto3.dynamodb.types import TypeSerializer

    return {name: TypeSerializer().serialize(value) for name, value in values.items()}


def from_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """An item's plain values ("N" a Decimal); TypeError for a value of no DynamoDB type."""
    from boto3.dynamodb.types import TypeDeserializer

    return {name: TypeDeserializer().deserialize(value) for name, value in item.items()}

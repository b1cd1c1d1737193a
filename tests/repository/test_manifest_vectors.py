"""The manifest constants the browser library holds (tests/vectors/manifest_vectors.json) are the server's: the schema
it reads is the one the build writes, and it lists variants in variant_table's order.
tests/js/lib/files/test_manifest_vectors.mjs holds web/lib/files/manifest.js to the same file."""

from __future__ import annotations

from fixtures import vectors
from onnxport.repository import store, variant_table

VECTORS = vectors.read("manifest_vectors")


def test_the_vector_file_is_what_the_server_side_writes_now():
    assert VECTORS == vectors.rebuilt("manifest_vectors"), "run tests/vectors/make_manifest_vectors.py"


def test_the_library_reads_the_schema_the_server_writes_and_orders_variants_alike():
    assert (VECTORS["schema"], VECTORS["schema_version"]) == (store.SCHEMA, store.SCHEMA_VERSION), (
        "web/lib/files/manifest.js reads another manifest schema than repository/store.py writes"
    )
    assert VECTORS["empty_manifest"] == store.empty_manifest()
    assert VECTORS["variant_order"] == list(variant_table.NAMES), (
        "web/lib/files/manifest.js's VARIANT_ORDER is not repository/variant_table.py's VARIANTS order"
    )
    assert VECTORS["ordered"] == sorted(VECTORS["unordered"], key=variant_table.order)
    assert set(VECTORS["ordered"]) == {*variant_table.NAMES, "a-variant-of-its-own"}

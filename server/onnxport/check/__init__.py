"""Conformance: every served variant run in every browser runtime, compared with the server."""

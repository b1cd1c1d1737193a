"""The manifest's constrained values: hashes, repository paths, counts and the STRICT record rule.

Shared by the manifest's record types (repository/manifest.py, repository/variant_record.py,
accuracy/measured.py); the JSON Schema (repository/schema.py) carries their patterns and bounds, so a written
manifest is checked against them.
"""

from typing import Annotated, Union

from pydantic import ConfigDict, Field

STRICT = ConfigDict(extra="forbid")  # additionalProperties false in the schema

Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
ArtifactPath = Annotated[str, Field(pattern=r"^artifacts/[0-9a-f]{64}\.[A-Za-z0-9]+$")]
TestdataPath = Annotated[str, Field(pattern=r"^testdata/[0-9a-f]{64}$")]
Count = Annotated[int, Field(ge=0)]
# A value as JSON has it: a number, a bool, or "nan" / "inf" / "-inf" written as text.
Scalar = Union[int, float, bool, str]

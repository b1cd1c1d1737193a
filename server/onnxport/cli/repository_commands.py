"""`onnxport remove`, `list` and `info`: the repository's models, read or removed."""

from __future__ import annotations

import json

from onnxport.cli.option_checks import known_models
from onnxport.errors import UsageError


def remove(args) -> int:
    from onnxport.repository.store import Repository, remove

    remove(Repository(args.repository), args.models)
    print(
        f"removed {', '.join(dict.fromkeys(args.models))} from {args.repository}; a running server stops serving "
        "them at its next request"
    )
    return 0


def list_models(args) -> int:
    from onnxport import text_tables
    from onnxport.repository.store import Repository

    manifest = Repository(args.repository).read_manifest()
    print(json.dumps(sorted(manifest["models"]), indent=2) if args.json else text_tables.model_list(manifest))
    return 0


def info(args) -> int:
    from onnxport import text_tables
    from onnxport.repository.store import Repository

    manifest = Repository(args.repository).read_manifest()
    decoder = manifest.get("decoders", {}).get(args.model)
    if decoder is not None:  # a decoder for generation (convert/decoder_build.py)
        print(json.dumps(decoder, indent=2, sort_keys=True) if args.json else text_tables.decoder_info(decoder))
        return 0
    if args.model not in manifest["models"] and manifest.get("decoders"):
        known = ", ".join(sorted([*manifest["models"], *manifest["decoders"]]))
        raise UsageError(f"unknown model {args.model!r}; the repository has: {known}")
    known_models(manifest, [args.model])
    entry = manifest["models"][args.model]
    print(json.dumps(entry, indent=2, sort_keys=True) if args.json else text_tables.model_info(entry))
    return 0

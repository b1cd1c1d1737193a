"""`python -m onnxport`: the same as the `onnxport` command."""

from onnxport.cli import main

raise SystemExit(main())

"""`onnxport serve`, `export`, `deploy` and `init`: the repository served here, written for other engines and
clusters, and a new project folder."""

from __future__ import annotations

from onnxport.errors import UsageError

SERVE_SETTINGS = {"--host": "host", "--port": "port", "--cors-origins": "cors_origins"}


def _serve_setting(option: str, text: str):
    """A serve option's value, parsed by its setting's rule (serving/config/values.py), so that `--port` and
    ONNXPORT_PORT accept the same values; a bad one is the user's to fix: exit 2 naming the option."""
    from onnxport.serving.config import SETTINGS

    setting = next(s for s in SETTINGS if s.name == SERVE_SETTINGS[option])
    try:
        return setting.parse(text)
    except ValueError as exc:
        raise UsageError(f"{option} {text!r}: {exc}") from exc


def serve(args) -> int:
    # Only what was given on the command line overrides the config file and environment.
    overrides = {"repository": args.repository} if args.repository is not None else {}
    overrides.update(
        {
            SERVE_SETTINGS[o]: _serve_setting(o, text)
            for o, text in (("--host", args.host), ("--port", args.port), ("--cors-origins", args.cors_origins))
            if text is not None
        }
    )
    if args.workers is not None:
        overrides["workers"] = args.workers
    if args.artifacts_url is not None:
        overrides["artifacts_url"] = args.artifacts_url
    if args.engine == "ray":
        from onnxport.serving import config
        from onnxport.serving.ray.engine import MAX_ONGOING, parse_autoscale, serve_on_ray

        if args.cors_origins is not None:
            raise UsageError(
                "--cors-origins is for the waitress engine: Ray Serve's V2 API sends no CORS "
                "headers (let `onnxport serve` or a CDN serve other origins)"
            )
        settings = config.load(overrides)
        if settings["port"] == 0:
            raise UsageError(
                "port 0 (any free port) is for the waitress engine; --engine ray needs a fixed --port from 1 to 65535"
            )
        serve_on_ray(
            settings,
            args.replicas,
            parse_autoscale(args.autoscale),
            args.address,
            args.max_ongoing_requests or MAX_ONGOING,
        )
        return 0
    if args.replicas != 1 or args.autoscale or args.address or args.max_ongoing_requests or args.artifacts_url:
        raise UsageError(
            "--replicas, --autoscale, --address, --max-ongoing-requests and --artifacts-url are for --engine ray"
        )
    from onnxport.serving.waitress.serve import serve

    serve(overrides)
    return 0


def export_triton(args) -> int:
    from onnxport.deploy import triton
    from onnxport.repository.store import Repository

    names = triton.write_repository(Repository(args.repository), args.out)
    print(f"wrote a Triton model repository of {len(names)} models to {args.out}: {', '.join(names)}")
    return 0


def export_kserve(args) -> int:
    from onnxport.deploy import kserve
    from onnxport.repository.store import Repository

    names = kserve.write_export(Repository(args.repository), args.out, args.storage_uri, args.name)
    print(
        f"wrote {args.out}/models ({len(names)} Triton models) and {args.out}/inferenceservice.yaml; "
        f"upload models/ to {args.storage_uri}, then `kubectl apply -f {args.out}/inferenceservice.yaml`"
    )
    return 0


def deploy_ray(args) -> int:
    from onnxport.deploy import ray_config
    from onnxport.serving.config import load
    from onnxport.serving.ray.engine import parse_autoscale

    repository = args.repository if args.repository is not None else load()["repository"]
    written = ray_config.write_deploy(
        args.out,
        repository,
        args.replicas,
        parse_autoscale(args.autoscale),
        args.port,
        args.image,
        args.workers,
        args.max_ongoing_requests,
    )
    print(
        f"wrote {', '.join(f'{args.out}/{name}' for name in written)}: `serve deploy {args.out}/serve.yaml` on a Ray "
        f"cluster with onnxport installed, or `kubectl apply -f {args.out}/rayservice.yaml` with KubeRay"
    )
    return 0


def init(args) -> int:
    from onnxport.init_project import write_project

    written = write_project(args.folder)
    print(f"wrote {', '.join(str(p) for p in written)}; in {args.folder}: `onnxport build`, then `onnxport serve`")
    return 0

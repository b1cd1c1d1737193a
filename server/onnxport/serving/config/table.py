"""The settings, one row each: name, default, the rule its text is parsed by, and the words of its help.

docs/reference/server.md's settings table names every row (tests/test_docs.py holds them together);
adding a setting is adding a row here.
"""

from __future__ import annotations

from onnxport.serving.config.folders import CHARTJS_ROOT, DEFAULT_REPOSITORY, ORT_ROOT, TOKENIZERS_ROOT, WEB_ROOT
from onnxport.serving.config.generation_table import GENERATION_SETTINGS
from onnxport.serving.config.setting import Setting
from onnxport.serving.config.values import (
    address_space,
    boolean,
    connections,
    db_path,
    listen_host,
    origin_list,
    origins,
    port_number,
    positive,
    providers,
    request_log_format,
    seconds,
    spinning,
    timeout,
    token,
    token_or_none,
    url,
    url_or_none,
    user_path,
)

SETTINGS = [
    Setting(
        "repository",
        DEFAULT_REPOSITORY,
        user_path,
        "Model repository folder (manifest.json, artifacts/, testdata/); default models/.repository in a "
        "checkout, ./onnxport-repository where onnxport is installed.",
    ),
    Setting("web_root", WEB_ROOT, user_path, "Folder of the browser app, served at /."),
    Setting(
        "ort_root",
        ORT_ROOT,
        user_path,
        "onnxruntime-web's files from the pinned npm package (its dist folder in a checkout, the files the "
        "library loads in an installed package), served at /ort/.",
    ),
    Setting(
        "tokenizers_root",
        TOKENIZERS_ROOT,
        user_path,
        "@huggingface/tokenizers' dist folder from the pinned npm package, served at /vendor/tokenizers/.",
    ),
    Setting(
        "chartjs_root",
        CHARTJS_ROOT,
        user_path,
        "Chart.js's dist folder from the pinned npm package (the performance page's charts), served at "
        "/vendor/chartjs/.",
    ),
    Setting(
        "debug_root",
        None,
        user_path,
        "Folder of debug models served at /debug/ (set by `onnxport check --locate`; off when empty).",
    ),
    Setting(
        "tolerances_file",
        None,
        user_path,
        'JSON file of conformance tolerance overrides ({"fp32/wasm": {"abs": 1e-6}}), merged over the table.',
    ),
    Setting(
        "max_request_bytes", 64 * 1024 * 1024, int, "Largest accepted request body in bytes; larger ones get HTTP 413."
    ),
    Setting(
        "max_json_string_bytes",
        64 * 1024,
        positive,
        "Most bytes of JSON strings (quotes and escapes counted) in a V2 request to a model that takes no text "
        "(no BYTES input, no raw input), whose strings are only names, datatypes and an id; past it, 413 while "
        "the body is still being read. A model that takes text is bounded by max_request_bytes alone.",
        check=positive,
    ),
    # Raw input (texts and image files made into tensors by a model's pipeline) costs far more than its bytes:
    # these budgets are checked before the work, and a request over one gets HTTP 413 naming it.
    Setting(
        "raw_max_rows", 32, positive, "Most texts (or text pairs) or images in one raw-input request.", check=positive
    ),
    Setting(
        "raw_max_text_bytes",
        16 * 1024 * 1024,
        positive,
        "Most UTF-8 bytes of text in one raw-input request (each text is cut to what the tokenizer can keep "
        "before it is tokenized).",
        check=positive,
    ),
    Setting(
        "raw_max_image_pixels",
        4096 * 4096,
        positive,
        "Most pixels of one image file, read from its header before it is decoded.",
        check=positive,
    ),
    Setting(
        "raw_max_request_pixels",
        4 * 4096 * 4096,
        positive,
        "Most pixels of all the image files in one raw-input request together.",
        check=positive,
    ),
    Setting(
        "providers",
        ["CPUExecutionProvider"],
        providers,
        "onnxruntime execution providers in priority order (comma-separated); those this "
        "onnxruntime build lacks are dropped, CPU is always last.",
    ),
    Setting("intra_op_threads", 0, int, "Threads per onnxruntime session for one operator (0 = all cores)."),
    Setting("inter_op_threads", 1, int, "Threads per onnxruntime session across operators."),
    Setting(
        "intra_op_spinning",
        "auto",
        spinning,
        "Whether onnxruntime's idle threads spin for the next operator: on, off, or auto (on for waitress; off "
        "on Ray Serve, whose proxy and replicas share the cores: `onnxport bench --engine ray` measured more "
        "throughput without it).",
    ),
    Setting(
        "dynamic_batching",
        "auto",
        str,
        "Models whose concurrent requests are batched: auto (where the latest `onnxport bench` in the "
        "repository measured a gain), all, none, or a comma-separated list of models.",
    ),
    Setting("batch_window_ms", 2.0, float, "How long a batch waits for more requests, in milliseconds."),
    Setting("max_batch", 32, int, "Most rows in one dynamic batch."),
    Setting("host", "127.0.0.1", listen_host, "Address `onnxport serve` listens on."),
    Setting(
        "port",
        8000,
        port_number,
        "Port `onnxport serve` listens on (0: any free port, printed at start).",
        check=port_number,
    ),
    Setting("workers", 8, int, "Request threads of the WSGI server (sessions are shared between them)."),
    # Limits for slow clients (serving/waitress/connections.py): enough connections that hundreds of idle ones starve
    # no one, and deadlines that a client trickling a byte a second cannot stretch.
    Setting(
        "max_connections",
        1000,
        connections,
        "Most client connections `onnxport serve` holds open at once; past it, new ones wait in the system's "
        "backlog until one closes. The open-file limit is raised to fit, if the system allows.",
        check=connections,
    ),
    Setting(
        "idle_timeout",
        30.0,
        timeout,
        "Seconds a kept-alive connection may sit with no request on it (or with an answer its client does not "
        "read) before it is closed.",
        check=timeout,
    ),
    Setting(
        "header_timeout",
        10.0,
        timeout,
        "Seconds within which a request's head (request line and headers) must arrive whole, from the "
        "connection's opening (from its first byte for a later request on a kept-alive connection); past it, "
        "408 and the connection is closed, however steadily bytes trickle in.",
        check=timeout,
    ),
    Setting(
        "body_timeout",
        60.0,
        timeout,
        "Seconds within which a request's body must arrive whole once its head has; past it, 408 and the "
        "connection is closed. A request read whole is never cut, however long it runs.",
        check=timeout,
    ),
    Setting(
        "drain_seconds",
        30.0,
        seconds,
        "On SIGTERM or Ctrl-C, `onnxport serve` stops accepting and answers every accepted request before it "
        "exits, waiting at most this many seconds; requests still running then are abandoned and the exit "
        "status is 1 (0 only when nothing was dropped).",
        check=seconds,
    ),
    Setting(
        "request_log",
        "json",
        request_log_format,
        "One line per request on stderr: json (id, method, path, model, version, protocol json/binary, status, "
        "bytes_in, bytes_out, ms, and the error a refused request got), text (the same as words), or off.",
    ),
    Setting(
        "cors_origins",
        [],
        origins,
        "Origins (scheme://host[:port], or * for any) whose pages may use the manifest, artifacts, golden "
        "data, /ort/, /vendor/tokenizers/, /vendor/chartjs/, /web/, /api/ and /v2/ cross-origin (comma-separated; "
        "default: none, same-origin only).",
        check=origin_list,
    ),
    Setting(
        "artifacts_url",
        None,
        url,
        "Base URL of a published repository (a CDN, or a static server's /repository/) from which a Ray Serve "
        "replica downloads the manifest and artifacts, each sha256-verified, into the `repository` folder "
        "before serving (off when empty).",
        check=url_or_none,
    ),
    Setting(
        "admin_token",
        None,
        token,
        "Secret that turns on the repository API's load and unload (POST /v2/repository/models/<m>/load, "
        "/unload): requests must send `Authorization: Bearer <token>`. Off when empty (they answer 403); "
        "never logged or echoed. Set it through the environment or the config file, not a command line.",
        check=token_or_none,
        secret=True,
    ),
    # Fleet verdicts (docs/reference/fleet.md): browsers' reports folded into one vote per network, device class and
    # file.
    Setting(
        "fleet_reports",
        True,
        boolean,
        "Whether the server takes browsers' fleet reports (POST /api/fleet/reports) and publishes their "
        "verdicts and times (GET /api/fleet); when false, reports get 404 and GET /api/fleet 204 (no fleet).",
        check=boolean,
    ),
    Setting(
        "fleet_min_clients",
        3,
        positive,
        "k: distinct networks (IPv4 /24, IPv6 /48) needed before a fleet verdict or time is published; a fail "
        "needs k failing networks and 2/3 of the group's. One network's many clients are one vote.",
        check=positive,
    ),
    Setting(
        "fleet_db",
        None,
        db_path,
        "sqlite file of the fleet's votes (default: fleet.sqlite3 in the repository folder; :memory: keeps "
        "them in memory). Not writable: in memory, with one log line.",
    ),
    Setting(
        "fleet_client_rate",
        20,
        positive,
        "Fleet reports a minute one client (browser token) may send; past it, 429 with Retry-After.",
        check=positive,
    ),
    Setting(
        "fleet_address_rate",
        600,
        positive,
        "Fleet reports a minute from one network (IPv4 /24, IPv6 /48; held in memory only, salted and "
        "hashed); past it, 429.",
        check=positive,
    ),
    Setting(
        "fleet_max_clients",
        1000,
        positive,
        "Most votes (distinct networks) kept per fleet group; the oldest go first.",
        check=positive,
    ),
    Setting("fleet_max_age_days", 90, positive, "Days a fleet vote counts; older ones are dropped.", check=positive),
    Setting(
        "fleet_max_groups",
        20000,
        positive,
        "Most fleet groups (file, runtime, device class) kept. When full, a new group replaces one with fewer "
        "than k networks (its own network's first, then the network with the most groups'; oldest first); "
        "groups with k networks are never evicted, and a new group is refused while only those are left.",
        check=positive,
    ),
    Setting(
        "fleet_network_groups",
        100,
        positive,
        "Fleet groups one network (IPv4 /24, IPv6 /48) may create an hour; results that would create more "
        "are not folded (the report is still answered 202 with the count folded).",
        check=positive,
    ),
    # `onnxport import`'s budgets (its --max-nodes and --time-limit override them): a file is refused or the
    # import stopped, with one line naming the limit, before a giant graph takes minutes and GBs.
    Setting(
        "import_max_nodes",
        50_000,
        positive,
        "Most nodes (subgraphs included) of a model `onnxport import` takes; a bigger one is refused before "
        "any work (exit 2). Real models have hundreds to a few thousand.",
        check=positive,
    ),
    # What a LightGBM or XGBoost file may declare, checked before its library reads it (which trusts the counts:
    # a crafted one crashed it or took GBs). Generous for real models; a refusal is one line, exit 2.
    Setting(
        "import_max_tree_classes",
        10_000,
        positive,
        "Most classes (num_class) a LightGBM or XGBoost model file `onnxport import` takes may declare.",
        check=positive,
    ),
    Setting(
        "import_max_trees",
        1_000_000,
        positive,
        "Most trees in a LightGBM or XGBoost model file (e.g. 10,000 rounds of 100 classes).",
        check=positive,
    ),
    Setting(
        "import_max_tree_leaves",
        1_000_000,
        positive,
        "Most leaves per tree of a LightGBM or XGBoost model file (LightGBM caps num_leaves at 131,072; "
        "an XGBoost tree of depth 20 has 1,048,576 at most).",
        check=positive,
    ),
    Setting(
        "import_max_tree_features",
        1_000_000,
        positive,
        "Most features a LightGBM or XGBoost model file may declare (hashed text features: 2^20).",
        check=positive,
    ),
    Setting(
        "import_max_tree_file_bytes",
        1 << 30,
        positive,
        "Largest LightGBM or XGBoost model file, in bytes (1 GiB: its library takes a few times that).",
        check=positive,
    ),
    Setting(
        "import_max_data_bytes",
        1 << 30,
        positive,
        "Bytes the --inputs (or --calibration) files of `onnxport import` may declare they unpack to (.npz "
        "members by the zip's sizes and their .npy headers), checked before anything is decompressed.",
        check=positive,
    ),
    Setting(
        "import_max_text_bytes",
        64 * 1024,
        positive,
        "Longest doc_string or metadata_props text kept in an imported ONNX model; longer ones are cut to "
        "it right after parsing, with a note.",
        check=positive,
    ),
    Setting(
        "import_time_limit",
        1800.0,
        seconds,
        "Seconds `onnxport import` may run before it stops with nothing written (exit 1); 0 for no limit.",
        check=seconds,
    ),
    # The import's work runs in a child process under these two (convert/sandbox.py): a crafted file that makes
    # a native parser allocate or loop without end stops there, in one line, and the repository is unchanged.
    Setting(
        "import_memory_limit",
        8 << 30,
        address_space,
        "Address space the import's child process may map (bytes, or with KiB, MiB, GiB); past it, it stops "
        "with nothing written (exit 1); 0 for no limit. Mapped, not used: a 100 MB model's import maps 2.6 GiB "
        "for 1.6 GiB used, a tiny one 1 GiB for 0.3 GiB; the largest real import known (a 97 MB ViT) used "
        "3.3 GB, so 8 GiB leaves it room.",
        check=address_space,
    ),
    Setting(
        "import_cpu_limit",
        7200.0,
        seconds,
        "CPU seconds (every thread together) the import's child process may use before it is stopped with "
        "nothing written (exit 1); 0 for no limit. It stops native code that never returns, which the "
        "time limit cannot interrupt; the default is the time limit's 1800 s on 4 busy cores.",
        check=seconds,
    ),
    *GENERATION_SETTINGS,
]

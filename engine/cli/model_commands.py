"""Commands on judge models: assemble the embedded ones, list local GGUFs, download one.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from engine.cli.common import add_command, say
from engine.core import untrusted
from engine.data import load_settings


def cmd_model(args) -> int:
    """Assemble the embedded models (the 1.5B judge when its packages are installed, and the smoke-test model) and
    describe the configured one."""
    from engine.llm import EMBEDDED, ModelError, describe_model, embedded_model_path, resolve_model_path

    cfg = load_settings()
    if not args.path:
        keys = [args.which] if args.which else list(EMBEDDED)
        for key in keys:
            m = EMBEDDED[key]
            try:
                path = embedded_model_path(key, rebuild=args.rebuild)
            except ModelError as exc:
                if args.which or not m.smoke_test and key != cfg.embedded_model and cfg.embedded_model:
                    say(f"error: {exc}", file=sys.stderr)
                    return 1
                say(f"{m.short_label}: not available ({exc})", file=sys.stderr)
                continue
            say(f"{m.short_label}: {path}", file=sys.stderr)
    try:
        path = resolve_model_path(args.path or ("" if args.which else cfg.llama_model_path),
                                  "" if args.path else (args.which or cfg.embedded_model))
    except ModelError as exc:
        say(f"error: {exc}", file=sys.stderr)
        return 1
    info = describe_model(path, with_hash=args.hash)
    print(json.dumps(info.__dict__, indent=2))
    return 0


def cmd_models(args) -> int:
    """The GGUF models Ollama and LM Studio keep on this machine (usable with --model PATH or on the Settings
    page). Reads files only."""
    from dataclasses import asdict

    from engine.llm import discover, lmstudio_dirs, ollama_dirs

    found = discover()
    if args.json:
        print(json.dumps([{**asdict(m), "label": m.label} for m in found], indent=2))
        return 0
    if not found:
        say("no Ollama or LM Studio model found; looked in: "
              + ", ".join(str(d) for d in [*ollama_dirs(), *lmstudio_dirs()]))
        return 0
    for m in found:
        print("\t".join(untrusted.term(x)
                        for x in (m.name, m.source, f"{m.size_bytes / 1e9:.1f} GB", m.quantization, m.path)))
    return 0


def cmd_get_model(args) -> int:
    """Download a catalog model (the one network action; explicit) and print its path and sha256."""
    import time

    from engine.llm import CATALOG, CATALOG_BY_KEY, DownloadError, default_models_dir, download
    from engine.data import hub_endpoint

    if args.list or not args.key:
        for e in CATALOG:
            say(f"{e.key}\t{e.label}\t~{e.approx_gb:g} GB download\t~{e.ram_gb:g} GB RAM\t{e.licence}"
                  + (f"\t{e.note}" if e.note else ""))
        if not args.list:
            print("error: name a model to download, e.g. 'python -m engine get-model " + CATALOG[0].key + "'",
                  file=sys.stderr)
            return 2
        return 0
    entry = CATALOG_BY_KEY.get(args.key)
    if entry is None:
        say(f"error: no catalog model {args.key!r}; choose one of: {', '.join(CATALOG_BY_KEY)}", file=sys.stderr)
        return 1
    dest = Path(args.dir).expanduser() if args.dir else default_models_dir()
    endpoint = args.endpoint or hub_endpoint()
    say(f"downloading {entry.label} (~{entry.approx_gb:g} GB) from {endpoint or 'the Hugging Face hub'} "
          f"into {dest}", file=sys.stderr)
    last = [0.0]

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if args.quiet or not (now - last[0] >= 0.5 or (total and done >= total)):
            return
        last[0] = now
        pct = f" ({done / total:.0%})" if total else ""
        print("\r" + untrusted.term(f"{entry.key}: {done / 1e6:,.0f} of {total / 1e6:,.0f} MB{pct}"), end="", file=sys.stderr,
              flush=True)

    try:
        got = download(entry, dest, endpoint=endpoint, progress=progress)
    except DownloadError as exc:
        print(file=sys.stderr)
        say(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        if last[0]:
            print(file=sys.stderr)
    say(str(got.path))
    say(f"sha256 {got.sha256}")
    say(f"use it with --model {got.path}, or choose it on the Settings page", file=sys.stderr)
    return 0


def register(sub) -> None:
    """Add model, models and get-model to the top parser's subparsers ``sub``."""
    sp = add_command(sub, "model", cmd_model, "assemble the embedded models; describe the configured judge model")
    sp.add_argument("--path", help="a GGUF file (default: the configured model, else the embedded one)")
    sp.add_argument("--which", choices=("qwen2.5-coder-1.5b", "gemma3-270m"),
                    help="assemble only this embedded model (default: every one whose packages are installed)")
    sp.add_argument("--rebuild", action="store_true", help="assemble again even when a verified file exists")
    sp.add_argument("--hash", action="store_true", help="also compute the file's sha256")

    sp = add_command(sub, "models", cmd_models, "list the GGUF models Ollama and LM Studio keep on this machine")
    sp.add_argument("--json", action="store_true")

    sp = add_command(sub, "get-model", cmd_get_model, "download a judge model from the catalog (the only network "
                                                      "action)")
    sp.add_argument("key", nargs="?", help="catalog key (see --list)")
    sp.add_argument("--list", action="store_true", help="print the catalog")
    sp.add_argument("--dir", help="target folder (default: SUMCHECK_MODELS_DIR or the user data folder)")
    sp.add_argument("--endpoint", help="model hub or mirror address (default: SUMCHECK_HUB_ENDPOINT, else the "
                                       "Hugging Face hub)")
    sp.add_argument("--quiet", action="store_true", help="no progress line on stderr")

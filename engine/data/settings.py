"""Application settings: the judge model source, llama.cpp parameters and the workspace path.

Stored as JSON in the user's config folder (``SUMCHECK_CONFIG`` overrides the file path). The workspace
path resolves in this order: ``SUMCHECK_WORKSPACE`` environment variable, the saved setting, then
``<user data dir>/workspace.sqlite``.

The judge model comes from one of four sources (:attr:`AppSettings.source`): the embedded smoke-test model, a
GGUF file, a GGUF model that Ollama or LM Studio keeps on this machine (its blob / file path), or an
OpenAI-compatible server (URL, model name, optional API key). Settings files written before the source existed
still load: a model path means "GGUF file", none the embedded model. A saved API key stays in the settings file
(readable by its owner only) and is never shown back.
"""
from __future__ import annotations

import json
import os
from dataclasses import MISSING, asdict, dataclass, fields
from pathlib import Path
from urllib.parse import urlsplit

from platformdirs import user_config_dir, user_data_dir

from engine.data.pg import check_url, is_url

APP_NAME = "sumcheck"
ENV_WORKSPACE = "SUMCHECK_WORKSPACE"
ENV_CONFIG = "SUMCHECK_CONFIG"
ENV_MAX_FILE_MB = "SUMCHECK_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 200.0
ENV_HUB_ENDPOINT = "SUMCHECK_HUB_ENDPOINT"  # a model hub mirror for "Get a judge model" (default: huggingface.co)
ENV_API_KEY = "SUMCHECK_API_KEY"  # the CLI's API key for --endpoint when --api-key is not given

SOURCE_EMBEDDED, SOURCE_GGUF, SOURCE_LOCAL, SOURCE_SERVER = "embedded", "gguf", "local", "server"
SOURCES = (SOURCE_EMBEDDED, SOURCE_GGUF, SOURCE_LOCAL, SOURCE_SERVER)
MAX_CONCURRENCY = 32


class SettingsError(ValueError):
    pass


@dataclass
class AppSettings:
    model_path: str = ""  # empty = an embedded model (embedded_model)
    embedded_model: str = ""  # engine.llm.modelfiles.EMBEDDED key; empty = the default (the 1.5B judge)
    n_ctx: int = 8192
    n_threads: int = 0  # 0 = all physical cores
    n_gpu_layers: int = -1  # -1 = every layer on the GPU where llama.cpp is built with GPU support; 0 = CPU only
    workspace_path: str = ""  # empty = default location
    max_file_mb: float = DEFAULT_MAX_FILE_MB  # largest input file an import reads (SUMCHECK_MAX_FILE_MB overrides)
    judge_source: str = ""  # one of SOURCES; empty = from model_path (older settings files): GGUF file or embedded
    local_model_name: str = ""  # the Ollama / LM Studio name of the model found on this machine (display only)
    server_url: str = ""  # OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1 (Ollama)
    server_model: str = ""  # model name sent to the server; empty = the server's default
    server_api_key: str = ""  # optional bearer token; stored here, never shown
    concurrency: int = 4  # requests in flight when a batch is judged on a server
    medomit_facts: str = "auto"  # MED-OMIT's fact source ("auto" or a key of engine.evidence.medomit.facts.FACT_SOURCES;
    # checked where MED-OMIT is set up, since this layer sits below the evidence)

    @property
    def source(self) -> str:
        """The judge model source in effect."""
        if self.judge_source in SOURCES:
            return self.judge_source
        return SOURCE_GGUF if self.model_path else SOURCE_EMBEDDED

    @property
    def llama_model_path(self) -> str:
        """The GGUF that in-process llama.cpp loads: the configured file, or empty (= the embedded model) for the
        embedded and server sources."""
        return self.model_path if self.source in (SOURCE_GGUF, SOURCE_LOCAL) else ""

    def validate(self) -> None:
        if self.judge_source and self.judge_source not in SOURCES:
            raise SettingsError(f"judge model source {self.judge_source!r} is unknown; use one of "
                                + ", ".join(SOURCES))
        from engine.llm import EMBEDDED

        if self.embedded_model and self.embedded_model not in EMBEDDED:
            raise SettingsError(f"embedded model {self.embedded_model!r} is unknown; use one of " + ", ".join(EMBEDDED))
        if not 1 <= int(self.concurrency) <= MAX_CONCURRENCY:
            raise SettingsError(f"requests in flight must be 1 to {MAX_CONCURRENCY}")
        if not 512 <= int(self.n_ctx) <= 1_048_576:
            raise SettingsError(f"context size {self.n_ctx} is out of range; use 512 to 1048576 tokens")
        if int(self.n_threads) < 0:
            raise SettingsError("threads must be 0 (automatic) or a positive number")
        if int(self.n_gpu_layers) < -1:
            raise SettingsError("GPU layers must be -1 (all), 0 (CPU only) or a positive number")
        try:
            mb = float(self.max_file_mb)
        except (TypeError, ValueError):
            raise SettingsError(f"the file size limit {self.max_file_mb!r} is not a number of megabytes") from None
        if not 0 < mb <= 1_000_000:
            raise SettingsError(f"the file size limit {self.max_file_mb} MB is out of range; use more than 0 and at "
                                "most 1000000 MB")
        if is_url(self.workspace_path):
            problem = check_url(self.workspace_path)
            if problem:
                raise SettingsError(problem)
        source = self.source
        if source == SOURCE_SERVER:
            check_server_url(self.server_url)
        elif source in (SOURCE_GGUF, SOURCE_LOCAL):
            if not self.model_path:
                raise SettingsError("no model chosen: give the path of a .gguf file, pick a model found on this "
                                    "machine, or choose the embedded default")
            p = Path(self.model_path).expanduser()
            if not p.is_file():
                raise SettingsError(f"model file {p} does not exist; give the path of a .gguf file, or leave it "
                                    "empty for the embedded default")
            if source == SOURCE_GGUF and p.suffix.lower() != ".gguf":
                raise SettingsError(f"{p.name} is not a .gguf file; llama.cpp needs a GGUF model")
            if source == SOURCE_LOCAL:  # Ollama's blobs carry no suffix: check the file itself
                try:
                    with p.open("rb") as fh:
                        magic = fh.read(4)
                except OSError as exc:
                    raise SettingsError(f"cannot read model file {p}: {exc.strerror}") from exc
                if magic != b"GGUF":
                    raise SettingsError(f"{p.name} is not a GGUF model file")


def check_server_url(url: str) -> str:
    """``url`` stripped, when it is an http(s) address with a host; else :class:`SettingsError`."""
    url = (url or "").strip()
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        ok = False
    if not ok:
        raise SettingsError(f"server address {url!r} is not an http(s) URL; e.g. http://127.0.0.1:11434/v1 "
                            "(Ollama), http://127.0.0.1:1234/v1 (LM Studio), http://127.0.0.1:8080/v1 (llama.cpp)")
    return url


def hub_endpoint() -> str | None:
    """The model hub address for downloads: ``SUMCHECK_HUB_ENDPOINT`` (e.g. a hospital mirror), else None (the
    Hugging Face hub)."""
    return (os.environ.get(ENV_HUB_ENDPOINT) or "").strip() or None


def config_path() -> Path:
    env = os.environ.get(ENV_CONFIG)
    return Path(env).expanduser() if env else Path(user_config_dir(APP_NAME)) / "settings.json"


def load_settings() -> AppSettings:
    path = config_path()
    if not path.is_file():
        return AppSettings()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SettingsError(f"settings file {path} is unreadable ({exc}); fix or delete it") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"settings file {path} does not hold a JSON object; fix or delete it")
    values = {}
    for f in fields(AppSettings):
        if f.name not in data:
            continue
        v, default = data[f.name], f.default
        kind = type(default) if default is not MISSING else None
        if kind is str and not isinstance(v, str) or kind is int and (isinstance(v, bool) or not isinstance(v, int)) \
                or kind is float and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise SettingsError(f"setting {f.name!r} in {path} must be a {kind.__name__ if kind else 'value'}, not "
                                f"{json.dumps(v)[:40]}; fix it on the Settings page or delete the line")
        values[f.name] = v
    if values.get("judge_source", "") not in ("", *SOURCES):
        raise SettingsError(f"judge_source {values['judge_source']!r} in {path} is unknown; use one of "
                            + ", ".join(SOURCES) + " (or choose the model on the Settings page)")
    return AppSettings(**values)


def save_settings(settings: AppSettings) -> Path:
    settings.validate()
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(asdict(settings), indent=2)
    # owner-only: the file may hold an API key
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    if settings.server_api_key:
        try:
            os.chmod(path, 0o600)
        except OSError:
            pass
    return path


def default_workspace_path() -> Path:
    return Path(user_data_dir(APP_NAME)) / "workspace.sqlite"


def workspace_path(settings: AppSettings | None = None) -> Path | str:
    """The workspace: an SQLite file's path, or a PostgreSQL server's address (``postgresql://…``, kept as text)."""
    env = os.environ.get(ENV_WORKSPACE)
    if env:
        return _workspace(env)
    settings = settings or load_settings()
    if settings.workspace_path:
        return _workspace(settings.workspace_path)
    return default_workspace_path()


def _workspace(value: str) -> Path | str:
    value = value.strip()
    return value if is_url(value) else Path(value).expanduser()


def max_file_mb(settings: AppSettings | None = None) -> float:
    """The per-file size limit for imports, in MB (10^6 bytes): ``SUMCHECK_MAX_FILE_MB``, else the saved setting,
    else 200. Raises :class:`SettingsError` when the variable or setting is not a positive number."""
    env = os.environ.get(ENV_MAX_FILE_MB)
    if env is not None and env.strip():
        try:
            mb = float(env)
        except ValueError:
            mb = float("nan")
        if not (0 < mb <= 1_000_000):  # also refuses nan / inf
            raise SettingsError(f"{ENV_MAX_FILE_MB}={env!r} is not a file size in MB; set it to a positive number "
                                "such as 500, or unset it for the default of 200")
        return mb
    if settings is None:
        settings = load_settings()  # an unreadable settings file is refused here as by every other command
    try:
        mb = float(settings.max_file_mb)
    except (TypeError, ValueError):
        mb = float("nan")
    if not (0 < mb <= 1_000_000):
        raise SettingsError(f"the saved file size limit max_file_mb={settings.max_file_mb!r} in {config_path()} is "
                            "not a positive number of MB; fix it on the Settings page or in that file")
    return mb

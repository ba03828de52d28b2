"""Application settings: model, llama.cpp parameters and the workspace path.

Stored as JSON in the user's config folder (``SUMCHECK_CONFIG`` overrides the file path). The workspace
path resolves in this order: ``SUMCHECK_WORKSPACE`` environment variable, the saved setting, then
``<user data dir>/workspace.sqlite``.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from platformdirs import user_config_dir, user_data_dir

APP_NAME = "sumcheck"
ENV_WORKSPACE = "SUMCHECK_WORKSPACE"
ENV_CONFIG = "SUMCHECK_CONFIG"
ENV_MAX_FILE_MB = "SUMCHECK_MAX_FILE_MB"
DEFAULT_MAX_FILE_MB = 200.0


class SettingsError(ValueError):
    pass


@dataclass
class AppSettings:
    model_path: str = ""  # empty = the embedded smoke-test model (Gemma 3 270M Q4_K_M)
    n_ctx: int = 8192
    n_threads: int = 0  # 0 = all physical cores
    n_gpu_layers: int = 0  # 0 = CPU only; -1 = offload every layer
    workspace_path: str = ""  # empty = default location
    max_file_mb: float = DEFAULT_MAX_FILE_MB  # largest input file an import reads (SUMCHECK_MAX_FILE_MB overrides)

    def validate(self) -> None:
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
        if self.model_path:
            p = Path(self.model_path).expanduser()
            if not p.is_file():
                raise SettingsError(f"model file {p} does not exist; give the path of a .gguf file, or leave it "
                                    "empty for the embedded default")
            if p.suffix.lower() != ".gguf":
                raise SettingsError(f"{p.name} is not a .gguf file; llama.cpp needs a GGUF model")


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
    known = {f.name for f in fields(AppSettings)}
    return AppSettings(**{k: v for k, v in data.items() if k in known})


def save_settings(settings: AppSettings) -> Path:
    settings.validate()
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(settings), indent=2), encoding="utf-8")
    return path


def default_workspace_path() -> Path:
    return Path(user_data_dir(APP_NAME)) / "workspace.sqlite"


def workspace_path(settings: AppSettings | None = None) -> Path:
    env = os.environ.get(ENV_WORKSPACE)
    if env:
        return Path(env).expanduser()
    settings = settings or load_settings()
    if settings.workspace_path:
        return Path(settings.workspace_path).expanduser()
    return default_workspace_path()


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
        try:
            settings = load_settings()
        except SettingsError:
            return DEFAULT_MAX_FILE_MB  # an unreadable settings file is reported where settings are edited
    try:
        mb = float(settings.max_file_mb)
    except (TypeError, ValueError):
        mb = float("nan")
    if not (0 < mb <= 1_000_000):
        raise SettingsError(f"the saved file size limit max_file_mb={settings.max_file_mb!r} in {config_path()} is "
                            "not a positive number of MB; fix it on the Settings page or in that file")
    return mb

"""The Settings page: the judge model sources and what each offers (the embedded models with their measured
validity, the models Ollama and LM Studio keep here, an OpenAI-compatible server), llama.cpp's GPU support, MED-OMIT's
fact source and the workspace; its actions: list and check a server's models, locate a model file, save."""
from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from engine.data import (AppSettings, ENV_WORKSPACE, MAX_CONCURRENCY, SOURCE_EMBEDDED, SOURCE_GGUF, SOURCE_LOCAL,
                         SOURCE_SERVER, SettingsError, default_workspace_path, save_settings, workspace_path)
from engine.judge import SERVER_EXAMPLES, SOURCE_LABELS, check_server, list_server_models, used_scores
from engine.llm import (BackendError, EMBEDDED, ModelError, default_embedded_key, gpu_offload_supported,
                        lmstudio_dirs, ollama_dirs, resolve_model_path, validity_figures)

__all__ = ["ACTIONS", "BackendError", "MAX_CONCURRENCY", "ModelError", "SERVER_EXAMPLES", "SOURCE_EMBEDDED",
           "SOURCE_GGUF", "SOURCE_LABELS", "SOURCE_LOCAL", "SOURCE_SERVER", "SettingsError", "SettingsPageView",
           "check_server", "list_server_models", "locate_model", "save", "settings_page_view"]

ACTIONS = ("check_server", "list_server_models", "locate_model", "save")


@dataclass(frozen=True)
class EmbeddedChoice:
    key: str
    short_label: str
    label: str
    smoke_test: bool
    install_hint: str
    validity: list[dict]  # the measured validity rows (bench/judge_validity.py --record), [] when never measured
    used_scores: list[dict]  # which score stands for each item in triage before any calibration


@dataclass(frozen=True)
class SettingsPageView:
    embedded: dict[str, EmbeddedChoice]
    default_embedded: str
    gpu_offload: bool  # this llama.cpp build offloads to a GPU
    local_dirs: list[str]  # where Ollama and LM Studio models are looked for
    workspace_in_use: str
    workspace_from_env: str  # the environment variable that overrides the workspace setting ("" when unset)
    default_workspace: str


def settings_page_view(settings: AppSettings) -> SettingsPageView:
    embedded = {k: EmbeddedChoice(k, m.short_label, m.label, m.smoke_test, m.install_hint, validity_figures(k),
                                  used_scores.defaults(k)) for k, m in EMBEDDED.items()}
    return SettingsPageView(embedded, settings.embedded_model or default_embedded_key(), gpu_offload_supported(),
                            [str(d) for d in [*ollama_dirs(), *lmstudio_dirs()]], str(workspace_path(settings)),
                            ENV_WORKSPACE if ENV_WORKSPACE in os.environ else "", str(default_workspace_path()))


def locate_model(model_path: str, embedded_key: str) -> Path:
    """The model file the settings would load (raises :class:`ModelError` with what is wrong)."""
    return resolve_model_path(model_path, embedded_key)


@dataclass(frozen=True)
class Saved:
    path: str  # the settings file
    workspace: str  # the workspace the saved settings use


def save(settings: AppSettings, **changes) -> Saved:
    """``settings`` with ``changes`` saved (raises :class:`SettingsError` when a value is not valid)."""
    new = replace(settings, **changes)
    return Saved(str(save_settings(new)), str(workspace_path(new)))

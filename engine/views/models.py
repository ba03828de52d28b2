"""The Get-a-model page: the catalogue of judge models with where each downloaded file lies and whether it is the
judge model now; its actions: download one (the only network action of SumCheck) and make a downloaded file the
judge model."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from engine.data import AppSettings, ENV_HUB_ENDPOINT, SOURCE_GGUF, SettingsError, hub_endpoint, save_settings
from engine.judge import SOURCE_LABELS
from engine.llm import CATALOG, DownloadError, Downloaded, default_models_dir, download

__all__ = ["ACTIONS", "DownloadError", "ENV_HUB_ENDPOINT", "GGUF_LABEL", "ModelRow", "ModelsView", "SettingsError",
           "download_model", "models_view", "use_model"]

GGUF_LABEL = SOURCE_LABELS[SOURCE_GGUF]  # the Settings page's label of a GGUF file as the judge source
ACTIONS = ("download_model", "use_model")


@dataclass(frozen=True)
class ModelRow:
    key: str
    label: str
    caption: str  # size, memory, licence, note
    path: Optional[str]  # the downloaded file (None when not downloaded)
    in_use: bool  # the judge model now


@dataclass(frozen=True)
class ModelsView:
    dest: str  # where downloads go
    endpoint: Optional[str]  # a mirror of the hub (None: the Hugging Face hub)
    rows: list[ModelRow]


def models_view(settings: AppSettings, downloaded: dict[str, str]) -> ModelsView:
    """``downloaded``: catalogue key -> path of the files this session downloaded (a file already in the
    models folder counts too)."""
    dest = default_models_dir()
    rows = []
    for e in CATALOG:
        path = downloaded.get(e.key) or (str(dest / e.filename) if (dest / e.filename).is_file() else None)
        caption = (f"≈ {e.approx_gb:g} GB download · needs ≈ {e.ram_gb:g} GB RAM · licence: {e.licence}"
                   + (f" · {e.note}" if e.note else ""))
        rows.append(ModelRow(e.key, e.label, caption, path,
                             path is not None and settings.source == SOURCE_GGUF and settings.model_path == path))
    return ModelsView(str(dest), hub_endpoint(), rows)


def download_model(key: str, progress: Callable[[int, int], None]) -> Downloaded:
    """Download the catalogue's model ``key`` into the models folder and verify its sha256 (raises
    :class:`DownloadError`, or OSError when the folder cannot be written)."""
    entry = next(e for e in CATALOG if e.key == key)
    return download(entry, default_models_dir(), endpoint=hub_endpoint(), progress=progress)


def use_model(settings: AppSettings, path: str) -> str:
    """Make the GGUF file ``path`` the judge model and save the settings at once; returns where they were saved
    (raises :class:`SettingsError`)."""
    return str(save_settings(replace(settings, judge_source=SOURCE_GGUF, model_path=path, local_model_name="")))

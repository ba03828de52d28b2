"""Language models: the backends (in-process llama.cpp, OpenAI-compatible servers) with their declared capabilities and the thread count in-process llama.cpp computes with (``_threads``), embedded and local model files, model downloads, prompt fencing, injection signals and cached LLM steps.

Imports: engine.core.
"""
from engine.llm.backends import (Backend, BackendError, Capabilities, Generation, NextToken, RenderedPrompt,
                                 keep_messages)
from engine.llm.http_backend import OpenAIHTTPBackend
from engine.llm.llama import LlamaCppBackend, gpu_offload_supported
from engine.llm.local_models import discover, lmstudio_dirs, ollama_dirs
from engine.llm.model_download import CATALOG, CATALOG_BY_KEY, DownloadError, Downloaded, default_models_dir, download
from engine.llm.modelfiles import (DEFAULT_EMBEDDED, EMBEDDED, ModelError, QWEN_KEY, SMOKE_EMBEDDED, VALIDITY_FILE,
                                   default_embedded_key, describe_model, embedded, embedded_key_of,
                                   embedded_model_path, embedded_sha256, is_smoke_test_model, judge_token_counter,
                                   resolve_model_path, sha256_file, validity_figures)
from engine.llm.prompt_fence import FENCE_LEN, Fence, attr_escape, quoted, read_blocks
from engine.llm.steps import StepCache, StepResult, run_step, step_key
from engine.llm import case_record, injection  # modules read as namespaces

__all__ = ["Backend", "BackendError", "CATALOG", "CATALOG_BY_KEY", "Capabilities", "DEFAULT_EMBEDDED", "DownloadError",
           "Downloaded", "EMBEDDED", "FENCE_LEN", "Fence", "Generation", "LlamaCppBackend", "ModelError", "NextToken",
           "OpenAIHTTPBackend", "QWEN_KEY", "RenderedPrompt", "SMOKE_EMBEDDED", "StepCache", "StepResult",
           "VALIDITY_FILE", "attr_escape", "case_record", "default_embedded_key", "default_models_dir",
           "describe_model", "discover", "download", "embedded", "embedded_key_of", "embedded_model_path",
           "embedded_sha256", "gpu_offload_supported", "injection", "is_smoke_test_model", "judge_token_counter",
           "keep_messages", "lmstudio_dirs", "ollama_dirs", "quoted", "read_blocks", "resolve_model_path", "run_step",
           "sha256_file", "step_key", "validity_figures"]

"""Language models: the backends (in-process llama.cpp, OpenAI-compatible servers) with their declared capabilities and the thread count in-process llama.cpp computes with (``threads``), embedded and local model files, model downloads, prompt fencing, injection signals and cached LLM steps.

Imports: engine.core.
"""

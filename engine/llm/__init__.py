"""Language models: the backends (in-process llama.cpp, OpenAI-compatible servers) with their declared capabilities, embedded and local model files, model downloads, prompt fencing, injection signals and cached LLM steps.

Imports: engine.core.
"""

"""The PDSQI-9 LLM judge: prompt, runner, judge configurations, the judge source from settings, self-consistency, calibration to local raters and its evidence features, triage, training-data export and the stored results.

Imports: engine.core, engine.llm, engine.data, engine.evidence.batch.
"""

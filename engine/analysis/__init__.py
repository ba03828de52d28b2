"""Agreement and reporting: the agreement analysis (ICC, α, AC, κ, LLM vs raters), spot-check comparisons, the analysis of one judge configuration and the committee report.

Imports: every package below it (core, statistics, llm, data, evidence, judge).
"""

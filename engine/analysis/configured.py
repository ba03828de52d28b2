"""From stored results to an agreement analysis of one judge configuration: the one path the CLI, the committee
report and the pages take.

Results of different judge configurations are never pooled: a configuration is chosen by key (a unique prefix is
enough) or, with none given, the one covering the most summaries; only its results give the LLM scores. The
dataset carries the workspace's reviews (spot checks and adjudications) as ratings of their reserved groups.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from engine.core import Dataset
from engine.judge import JudgeConfig, JudgeResult, configurations, find, results_for, stored_judge_results
from engine.analysis.agreement import AgreementReport, analyse, llm_scores_from_results


class UnknownConfiguration(ValueError):
    """A judge configuration key that no stored result of the dataset has."""


@dataclass
class ConfiguredResults:
    configs: list[JudgeConfig]  # every configuration in the dataset, most summaries first
    config: Optional[JudgeConfig]  # the chosen one (None: the dataset has no judge result)
    results: list[JudgeResult] = field(default_factory=list)  # the chosen configuration's, latest per summary

    @property
    def llm(self) -> dict[str, dict[str, Optional[float]]]:
        """summary id -> item -> the judge's score (expected score for 1-5 items), for the agreement analysis."""
        return llm_scores_from_results(self.results)


def configured_results(store, name: str, judge_config: Optional[str] = None) -> ConfiguredResults:
    """The results of one judge configuration: ``judge_config`` (a key or a unique prefix), else the one covering
    the most summaries. :class:`UnknownConfiguration` names the configurations present when the key matches
    none."""
    every = stored_judge_results(store, name)
    configs = configurations(every)
    config = find(configs, judge_config)
    if judge_config is not None and config is None:
        raise UnknownConfiguration(f"no judge configuration {judge_config!r} in dataset {name!r}; present: "
                                   + (", ".join(c.key for c in configs) or "none"))
    return ConfiguredResults(configs, config, results_for(every, config.key) if config else [])


@dataclass
class ConfiguredAnalysis:
    dataset: Dataset  # with the workspace's reviews
    chosen: ConfiguredResults
    report: AgreementReport


def analyse_configuration(store, name: str, judge_config: Optional[str] = None, *, n_boot: int = 1000,
                          seed: int = 0, count_tokens: Optional[Callable[[str], int]] = None,
                          spot_checks_in_reference: bool = False, with_judge: bool = True) -> ConfiguredAnalysis:
    """The agreement analysis of dataset ``name`` against one judge configuration (see
    :func:`configured_results`; ``with_judge=False``: the raters alone). The report records the configuration's
    key."""
    from engine.data import dataset_with_reviews

    ds = dataset_with_reviews(store, name)
    chosen = configured_results(store, name, judge_config) if with_judge else ConfiguredResults([], None)
    kwargs = {"count_tokens": count_tokens} if count_tokens is not None else {}
    rep = analyse(ds, chosen.llm or None, n_boot=n_boot, seed=seed, spot_checks_in_reference=spot_checks_in_reference,
                  **kwargs)
    rep.judge_config = chosen.config.key if chosen.config else None
    return ConfiguredAnalysis(ds, chosen, rep)

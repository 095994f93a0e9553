"""What should I set? A search over SGLang's flags and GPU layouts for a request mix under a person's
targets for both waits (docs/advise.md). `advise(scenario, budget, targets)` runs it; words.py says it."""

from engine_model.advise.evaluate import Outcome, candidate_of, evaluate
from engine_model.advise.runner import BACKENDS, Cancelled, run_all
from engine_model.advise.search import (
    GRID_LIMIT,
    MAX_CANDIDATES,
    Advice,
    advise,
    complete,
    meets,
    pareto,
    recommend,
    today_candidate,
    violations,
)
from engine_model.advise.space import POLICIES, Budget, Candidate, Layout, Space, default_space, layouts
from engine_model.advise.targets import WAITS, Target, parse_target
from engine_model.advise.words import counts_line, headline, trade_lines, why_not

__all__ = [
    "Advice",
    "BACKENDS",
    "Budget",
    "Candidate",
    "Cancelled",
    "GRID_LIMIT",
    "Layout",
    "MAX_CANDIDATES",
    "Outcome",
    "POLICIES",
    "Space",
    "Target",
    "WAITS",
    "advise",
    "candidate_of",
    "complete",
    "counts_line",
    "default_space",
    "evaluate",
    "headline",
    "layouts",
    "meets",
    "pareto",
    "parse_target",
    "recommend",
    "run_all",
    "today_candidate",
    "trade_lines",
    "violations",
    "why_not",
]

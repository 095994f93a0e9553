"""Read SGLang server logs: parse lines, rebuild a timeline, diagnose which stall it shows."""

from engine_model.logs.diagnose import Diagnosis, Finding, Fix, diagnose
from engine_model.logs.observed import scenario_hints
from engine_model.logs.parse import (
    DecodeRecord,
    EventRecord,
    ParsedLog,
    PrefillRecord,
    RetractionRecord,
    default_rank,
    followed_ranks,
    parse_log,
    parse_log_file,
    settings,
)
from engine_model.logs.timeline import (
    DecodeSegment,
    LoadSample,
    PrefillPoint,
    RetractionPoint,
    Timeline,
    build_timeline,
)

__all__ = [
    "DecodeRecord",
    "DecodeSegment",
    "EventRecord",
    "Diagnosis",
    "Finding",
    "Fix",
    "LoadSample",
    "ParsedLog",
    "PrefillPoint",
    "PrefillRecord",
    "RetractionPoint",
    "RetractionRecord",
    "Timeline",
    "build_timeline",
    "default_rank",
    "followed_ranks",
    "diagnose",
    "parse_log",
    "parse_log_file",
    "scenario_hints",
    "settings",
]
